"""Export any set of works as BibTeX, CSV, JSON, CSL-JSON, RIS or arXiv ids, and read BibTeX back."""
from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator

import bibtexparser
from bibtexparser.model import DuplicateBlockKeyBlock, Entry, ParsingFailedBlock

from papers.authors import is_truncated, split_authors
from papers.bibtex_text import bibtex_doi, bibtex_title, bibtex_url, latex_text, latex_to_text
from papers.citeformats import doi_of, exported_abstract, primary_class, to_arxiv_ids, to_csl_json, to_ris
from papers.schema import LIST_FIELDS, Work
from papers.venues import is_journal, is_published, venue_title

EXPORT_FIELDS = (
    "key", "name", "title", "title_original", "year", "venue", "kind", "arxiv_id", "url", "code_url",
    "nodes", "algorithms", "aliases", "reward_type", "tags", "summary", "keywords", "summary_confidence",
    "origin", "authors", "abstract",
)
FORMATS = ("bibtex", "csv", "json", "cslj", "ris", "arxiv-ids")
"""Every export format, by its CLI name (``--format``); ``to_format`` writes each."""
def latex_escape(text: str) -> str:
    """LaTeX-escaped text for the BibTeX writer: see ``papers.bibtex_text.latex_text``."""
    return latex_text(text)


def latex_unescape(text: str, drop_groups: bool = False) -> str:
    """Plain text from a BibTeX value: escapes, accents and math undone (``bibtex_text.latex_to_text``);
    with ``drop_groups``, bare braces dropped too ({NewAgent} -> NewAgent)."""
    return latex_to_text(text, drop_groups=drop_groups)


def bibtex_entry_type(work: Work) -> str:
    """``inproceedings`` for a paper published at a conference or workshop, ``article`` for a journal,
    ``misc`` only for what is not published (arXiv-only, a blog, a repository, a model card)."""
    if not is_published(work.venue):
        return "misc"
    return "article" if is_journal(work.venue) else "inproceedings"


_HOWPUBLISHED = {"Web/blog": "Web page", "GitHub": "GitHub repository", "Hugging Face": "Hugging Face model card",
                 "SSRN": "SSRN working paper", "OpenReview": "OpenReview submission", "Technical report": "Technical report"}
_ARXIV_ID = re.compile(r"\d{4}\.\d{4,5}(v\d+)?|[a-z-]+(\.[A-Z]{2})?/\d{7}(v\d+)?")
_ARXIV_CLASS = re.compile(r"[a-z-]+(\.[A-Za-z-]+)?")


def bibtex_authors(text: str) -> str:
    """The ``author`` value: ``Family, Given and ...`` with an organisation braced whole ({Qwen Team}),
    every name through ``latex_text`` (so a name's own braces or backslashes are only text), and
    ``and others`` (printed "et al.") for a list the source cut short."""
    out = ["{" + latex_text(p.literal) + "}" if p.literal else latex_text(p.sort_form) for p in split_authors(text)]
    if out and is_truncated(text):
        out.append("others")
    return " and ".join(out)


def bibtex_fields(w: Work) -> list[tuple[str, str]]:
    """(name, value) pairs of one entry, every value already safe to put between braces."""
    etype = bibtex_entry_type(w)
    fields: list[tuple[str, str]] = []
    if w.authors.strip():
        fields.append(("author", bibtex_authors(w.authors)))
        if is_truncated(w.authors):
            n = len(split_authors(w.authors))
            fields.append(("authornote", f"Author list incomplete: only the first {n} names are recorded here "
                                         "(printed as et al.); see the paper for the full list"))
    fields.append(("title", bibtex_title(w.title, names=(w.name, *w.aliases))))
    if w.year is not None:
        fields.append(("year", str(w.year)))
    if etype == "inproceedings":
        fields.append(("booktitle", latex_text(venue_title(w.venue))))
    elif etype == "article":
        fields.append(("journal", latex_text(venue_title(w.venue))))
    elif w.venue in _HOWPUBLISHED:
        fields.append(("howpublished", _HOWPUBLISHED[w.venue]))
    elif w.venue and w.venue != "arXiv":
        fields.append(("howpublished", latex_text(w.venue)))
    if _ARXIV_ID.fullmatch(w.arxiv_id):
        fields += [("eprint", w.arxiv_id), ("archiveprefix", "arXiv")]
        if _ARXIV_CLASS.fullmatch(primary_class(w)):
            fields.append(("primaryclass", primary_class(w)))
    doi = bibtex_doi(doi_of(w))
    if doi:
        fields.append(("doi", doi))
    if w.url or w.arxiv_url:
        fields.append(("url", bibtex_url(w.url or w.arxiv_url)))
    if w.code_url:
        fields.append(("code", bibtex_url(w.code_url)))
    if exported_abstract(w):
        fields.append(("abstract", latex_text(exported_abstract(w))))
    if w.summary:
        fields.append(("annote", latex_text(w.summary)))
    if w.keywords:
        fields.append(("keywords", latex_text(", ".join(w.keywords))))
    return fields


def bibtex_entry(w: Work) -> str:
    """One entry, cite key = work key (the schema allows only letters, digits and ``._:-`` in a key)."""
    body = "".join(f"  {name} = {{{value}}},\n" for name, value in bibtex_fields(w))
    return f"@{bibtex_entry_type(w)}{{{w.key},\n{body}}}\n"


def to_bibtex(works: Iterable[Work]) -> str:
    """One entry per work, in order, separated by a blank line; ASCII only, every field brace-balanced
    (``papers.bibtex_text``).

    Fields: author (``Family, Given and ...``; ``authornote`` where the list is cut), title (only names
    braced: ``bibtex_title``), year (the venue's for a published work: ``papers.venues``), booktitle or
    journal (the venue, spelled out), howpublished (a web page, repository, ...), eprint/archiveprefix/
    primaryclass (the arXiv id, kept for published works too), doi (the publisher's where the work's URL
    names one; arXiv's DataCite DOI only for unpublished arXiv works: ``citeformats.doi_of``), url, code,
    abstract (a user's own imported works only: ``exported_abstract``), annote (our summary), keywords.
    """
    return "\n".join(bibtex_entry(w) for w in works)


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
