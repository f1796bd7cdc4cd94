"""Export any set of works as BibTeX, CSV, JSON, CSL-JSON, RIS or arXiv ids, and read BibTeX back."""
from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator

import bibtexparser
from bibtexparser.model import DuplicateBlockKeyBlock, Entry, Field, ParsingFailedBlock

from papers.authors import bibtex_author
from papers.citeformats import doi_of, exported_abstract, primary_class, to_arxiv_ids, to_csl_json, to_ris
from papers.schema import LIST_FIELDS, Work

EXPORT_FIELDS = (
    "key", "name", "title", "title_original", "year", "venue", "kind", "arxiv_id", "url", "code_url",
    "nodes", "algorithms", "aliases", "reward_type", "tags", "summary", "keywords", "summary_confidence",
    "origin", "authors", "abstract",
)
FORMATS = ("bibtex", "csv", "json", "cslj", "ris", "arxiv-ids")
"""Every export format, by its CLI name (``--format``); ``to_format`` writes each."""
_JOURNALS = re.compile(r"^(JMLR|TMLR|Nature|Science|IEEE|ACM|Transactions|Journal)", re.I)
_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_UNESCAPE = {v: k for k, v in _LATEX_SPECIALS.items()}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


_UNESCAPE_RE = re.compile("|".join(re.escape(k) for k in sorted(_UNESCAPE, key=len, reverse=True)) + r"|[{}]")


def latex_unescape(text: str, drop_groups: bool = False) -> str:
    """Undo ``latex_escape``; with ``drop_groups``, also drop bare braces ({NewAgent} -> NewAgent)."""
    def repl(m: re.Match) -> str:
        tok = m.group(0)
        return _UNESCAPE.get(tok, "" if drop_groups else tok)

    return _UNESCAPE_RE.sub(repl, text)


def bibtex_entry_type(work: Work) -> str:
    venue = work.venue
    if not venue or venue in ("arXiv", "Web/blog", "GitHub", "Hugging Face", "OpenReview", "SSRN", "Technical report"):
        return "misc"
    if _JOURNALS.match(venue):
        return "article"
    return "inproceedings"


def to_bibtex(works: Iterable[Work]) -> str:
    """One entry per work, cite key = work key. In titles only the words a style's re-casing would
    break are braced (``bibtex_title``), so a style can still sentence-case the rest.

    Fields: author (``Family, Given and ...``), title, year, venue, eprint/archiveprefix/primaryclass
    (arXiv works), doi (where known, see ``citeformats.doi_of``), url, code, abstract (a user's own
    imported works only: ``exported_abstract``), annote (our summary), keywords.
    """
    lib = bibtexparser.Library()
    for w in works:
        etype = bibtex_entry_type(w)
        fields = []
        if w.authors.strip():
            fields.append(Field("author", _escape_keep_braces(bibtex_author(w.authors))))
        fields.append(Field("title", bibtex_title(w.title)))
        if w.year is not None:
            fields.append(Field("year", str(w.year)))
        if etype == "inproceedings":
            fields.append(Field("booktitle", latex_escape(w.venue)))
        elif etype == "article":
            fields.append(Field("journal", latex_escape(w.venue)))
        elif w.venue and w.venue != "arXiv":
            fields.append(Field("howpublished", latex_escape(w.venue)))
        if w.arxiv_id:
            fields += [Field("eprint", w.arxiv_id), Field("archiveprefix", "arXiv")]
            if primary_class(w):
                fields.append(Field("primaryclass", primary_class(w)))
        if doi_of(w):
            fields.append(Field("doi", doi_of(w)))
        if w.url or w.arxiv_url:
            fields.append(Field("url", w.url or w.arxiv_url))
        if w.code_url:
            fields.append(Field("code", w.code_url))
        if exported_abstract(w):
            fields.append(Field("abstract", latex_escape(exported_abstract(w))))
        if w.summary:
            fields.append(Field("annote", latex_escape(w.summary)))
        if w.keywords:
            fields.append(Field("keywords", latex_escape(", ".join(w.keywords))))
        lib.add(Entry(etype, w.key, fields))
    return bibtexparser.write_string(lib)


_WORD = re.compile(r"^([\"'(\[]*)(.*?)([\"')\]:;,.?!]*)$")
_SENTENCE_START = re.compile(r"[:.?!]$")


def _needs_protection(core: str, proper_noun: bool) -> bool:
    """A word whose casing a BibTeX style must not touch: an inner capital or a capital next to a digit
    in any hyphen part (DigiRL, LLMs, UI-TARS-2, R1, 3D), a non-ASCII letter (τ²-bench, π0, β-DPO),
    or a capitalised word that is a proper noun (``proper_noun``: decided by the caller)."""
    if any(ch.isalpha() and not ch.isascii() for ch in core):
        return True
    for part in re.split(r"[-/]", core):
        if any(ch.isupper() for ch in part[1:]) or (part[:1].isupper() and any(ch.isdigit() for ch in part)):
            return True
    return proper_noun and core[:1].isupper()


def bibtex_title(title: str) -> str:
    """The BibTeX ``title`` value: LaTeX-escaped, with braces around each word that styles would break.

    Acronyms and mixed-case names are always protected. In a sentence-case title (most words after the
    first are lower case) every other capitalised word that does not start the title or follow a colon
    is a proper noun and is protected too; in a Title Case title only known names are (``titlecase``'s
    brands: Python, Android, ...), because every word there is capitalised.
    """
    from papers.titlecase import BRANDS

    words = title.split()
    inner = [w for i, w in enumerate(words) if i and not _SENTENCE_START.search(words[i - 1])]
    lower = sum(1 for w in inner if w[:1].islower())
    sentence_case = bool(inner) and lower * 2 >= len(inner)
    brands = {b.lower() for b in BRANDS}
    out = []
    for i, word in enumerate(words):
        lead, core, trail = _WORD.match(word).groups()
        starts = i == 0 or bool(_SENTENCE_START.search(words[i - 1]))
        proper = (sentence_case and not starts) or core.lower() in brands
        text = latex_escape(core)
        if core and _needs_protection(core, proper):
            text = "{" + text + "}"
        out.append(latex_escape(lead) + text + latex_escape(trail))
    return " ".join(out)


def _escape_keep_braces(text: str) -> str:
    """LaTeX-escape an author list but keep the braces that group an organisation's name."""
    return "".join(ch if ch in "{}" else _LATEX_SPECIALS.get(ch, ch) for ch in text)


def parse_bibtex(text: str) -> tuple[list[dict[str, str]], list[str]]:
    """Parse BibTeX into plain dicts (``key``, ``entry_type`` and unescaped fields) + failed blocks."""
    lib = bibtexparser.parse_string(text)
    entries = [_entry_dict(e) for e in lib.entries]
    failed = [b.raw[:80] for b in lib.failed_blocks]
    return entries, failed


def parse_bibtex_blocks(text: str) -> Iterator[tuple[int, dict[str, str] | None, str | None]]:
    """(1-based first line, entry dict or None, error or None) for every entry-like block, in order.

    Values are read as BibTeX reads them (``papers.bibtex_values``): ``#`` joins parts, ``@string`` names are
    resolved (an ``@string`` may use earlier ones); an undefined name or a value over its size limit makes
    the entry an error naming the field, decided before any other work on the value."""
    from bibtexparser.model import String

    from papers.bibtex_values import MONTH_MACROS, BibValueError, resolve

    lib = bibtexparser.parse_string(text, parse_stack=[])  # raw values: resolved below, in file order
    macros = dict(MONTH_MACROS)
    for block in lib.blocks:
        line = block.start_line + 1
        if isinstance(block, String):  # a bad one is reported at its line; an entry using it: "not defined"
            try:
                macros[block.key.lower()] = resolve(str(block.value), macros, f"@string '{block.key[:40]}'",
                                                    _allowed("abstract"))
            except BibValueError as e:
                macros.pop(block.key.lower(), None)
                yield line, None, str(e)[:300]
        elif isinstance(block, Entry):
            try:
                yield line, _entry_dict(block, macros), None
            except BibValueError as e:
                yield line, None, str(e)[:300]
        elif isinstance(block, ParsingFailedBlock):
            err = getattr(block, "error", None)
            reason = getattr(err, "abort_reason", None) or str(err or "") or "unparseable entry"
            if isinstance(block, DuplicateBlockKeyBlock):
                reason = f"duplicate entry key '{block.key}'"
            yield line, None, reason.splitlines()[0][:200]


def _allowed(field: str) -> int:
    """What a field may hold once read (``papers.importers.FIELD_MAX_CHARS``, by the work's field name)."""
    from papers.importers import DEFAULT_MAX_CHARS, FIELD_MAX_CHARS

    return FIELD_MAX_CHARS.get({"author": "authors"}.get(field, field), DEFAULT_MAX_CHARS)


def _entry_dict(e: Entry, macros: dict[str, str] | None = None) -> dict[str, str]:
    """An entry's fields as plain text. With ``macros`` (``parse_bibtex_blocks``) the values are raw and
    resolved here; without, bibtexparser's default stack has removed their delimiters already."""
    from papers.bibtex_values import resolve, unwrap

    rec = {"key": e.key, "entry_type": e.entry_type}
    for f in e.fields:
        value = str(f.value).strip()
        if macros is not None:
            value = resolve(value, macros, f"field '{f.key.lower()[:40]}'", _allowed(f.key.lower())).strip()
        rec[f.key.lower()] = latex_unescape(" ".join(unwrap(value).split()), drop_groups=True)
    return rec


def _dump(work: Work, mode: str = "python") -> dict:
    """The exported fields; ``abstract`` only for a user's own work (``exported_abstract``)."""
    d = work.model_dump(mode=mode, include=set(EXPORT_FIELDS))
    d["abstract"] = exported_abstract(work)
    return d


def _flat(work: Work) -> dict[str, str]:
    d = _dump(work)
    return {f: "; ".join(d[f]) if f in LIST_FIELDS else ("" if d[f] is None else str(d[f])) for f in EXPORT_FIELDS}


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_safe(value: object) -> str:
    """A CSV cell a spreadsheet shows as text and never evaluates (OWASP's CSV-injection advice).

    A cell starting with = + - @, a tab or a carriage return gets a leading single quote
    (spreadsheets hide it and treat the rest as text). A plain number (-0.25, +7, -3e-4) is
    left as it is: a spreadsheet reads it as a number, never as a formula, and quoting it would
    turn a numeric column into text. Our CSV importer drops the quote again on the way back.
    """
    text = "" if value is None else str(value)
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def to_csv(works: Iterable[Work]) -> str:
    """Works as CSV for spreadsheets: every cell through ``csv_safe`` (JSON and BibTeX stay exact).

    Rows end in CRLF (RFC 4180), so a cell holding a lone CR is quoted rather than split.
    """
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=EXPORT_FIELDS, lineterminator="\r\n")
    writer.writeheader()
    for w in works:
        writer.writerow({k: csv_safe(v) for k, v in _flat(w).items()})
    return buf.getvalue()


def to_json(works: Iterable[Work]) -> str:
    return json.dumps([_dump(w, mode="json") for w in works], ensure_ascii=False, indent=1)


def to_format(works: Iterable[Work], fmt: str) -> str:
    writers = {"bibtex": to_bibtex, "csv": to_csv, "json": to_json, "cslj": to_csl_json, "ris": to_ris,
               "arxiv-ids": to_arxiv_ids}
    if fmt not in writers:
        raise ValueError(f"unknown export format '{fmt}' (choose from {', '.join(writers)})")
    return writers[fmt](works)
