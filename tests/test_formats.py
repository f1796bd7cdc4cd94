"""Export formats read back by real parsers: BibTeX (bibtexparser with its name splitter), CSL-JSON
(a JSON-schema check), RIS (a strict reader below), arXiv ids; the same from the CLI."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import bibtexparser
import jsonschema
import pytest
from bibtexparser.middlewares import SeparateCoAuthors, SplitNameParts

from papers import parse_bibtex, to_format
from papers.authors import is_truncated, split_authors
from papers.bibtex_text import latex_to_text
from papers.schema import Work
from papers.venues import is_published, venue_title

from inprocess import papers_cli

ROOT = Path(__file__).resolve().parents[1]
CSL_SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "csl-data-subset.schema.json").read_text())


def run(*args):
    return papers_cli(*args, cwd=ROOT)


def user_work(**kw) -> Work:
    base = dict(key="my-2024", title="Tool & memory: 100% {RL} for agents", year=2024, venue="arXiv",
                arxiv_id="2401.00001", url="https://arxiv.org/abs/2401.00001", origin="user",
                authors="Marc-Alexandre Côté and Ludwig van Beethoven and {OpenAI Research Team}",
                abstract="An abstract with $math$ and a % sign.", tags=("arxiv:cs.CL", "arxiv:cs.AI"),
                keywords=("tools", "memory"))
    base.update(kw)
    return Work(**base)


def names(work: Work) -> list[tuple[str, str]]:
    return [(p.given, p.family) if not p.literal else ("", p.literal) for p in split_authors(work.authors)]


# -- a strict RIS reader ------------------------------------------------------------------------
_RIS_LINE = re.compile(r"^([A-Z][A-Z0-9])  - (.*)$")


def read_ris(text: str) -> list[dict[str, list[str]]]:
    """Records of an RIS file; any line that is not ``XX  - value`` or blank, a record not opened by
    TY or not closed by ER, or a tag outside a record is an error."""
    records, current = [], None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _RIS_LINE.match(line)
        assert m, f"line {n} is not an RIS tag line: {line!r}"
        tag, value = m.groups()
        if tag == "TY":
            assert current is None, f"line {n}: TY inside an open record"
            current = {"TY": [value]}
        else:
            assert current is not None, f"line {n}: {tag} outside a record"
            if tag == "ER":
                assert value == "", f"line {n}: ER with a value"
                records.append(current)
                current = None
            else:
                current.setdefault(tag, []).append(value)
    assert current is None, "last record not closed by ER"
    return records


# -- BibTeX ---------------------------------------------------------------------------------------
def parse_names_bibtex(text: str):
    # no LaTeX decoding: it would drop the braces that keep an organisation's name whole
    lib = bibtexparser.parse_string(text, append_middleware=[SeparateCoAuthors(), SplitNameParts()])
    assert not lib.failed_blocks
    return lib


def test_bibtex_every_work_keeps_key_title_year_and_authors(catalog):
    works = list(catalog)
    lib = parse_names_bibtex(to_format(works, "bibtex"))
    assert [e.key for e in lib.entries] == [w.key for w in works]
    with_authors = 0
    for e, w in zip(lib.entries, works):
        assert latex_to_text(e["title"]) == w.title, w.key
        assert e.fields_dict.get("year") is None or e["year"] == str(w.year)
        if not w.authors:
            assert "author" not in e.fields_dict, w.key
            continue
        with_authors += 1
        parsed = e["author"]
        people = split_authors(w.authors)
        listed = parsed[:-1] if is_truncated(w.authors) else parsed
        if is_truncated(w.authors):
            assert parsed[-1].last == ["others"], w.key
        assert len(listed) == len(people), w.key
        for got, want in zip(listed, people):
            if want.literal:
                assert latex_to_text(" ".join(got.last), drop_groups=False) == "{" + want.literal + "}", w.key
            else:
                assert latex_to_text(" ".join(got.von + got.last)) == want.family, (w.key, got, want)
                assert latex_to_text(" ".join(got.first)) == want.given, (w.key, got, want)
    assert with_authors >= 0.95 * len(works)


def test_bibtex_arxiv_fields_and_doi(catalog):
    """An arXiv-only work carries arXiv's DOI; a published one keeps its arXiv id in eprint but never the
    preprint's DOI (Search-R1 is at COLM 2025); a publisher's DOI named in the URL is kept (Tool Learning)."""
    preprint = next(w for w in catalog if w.venue == "arXiv" and w.arxiv_id and "doi" not in w.url)
    lib = parse_names_bibtex(to_format([preprint, catalog.get("search-r1"), catalog.get("tool-learning-foundation-models")],
                                       "bibtex"))
    e, published, journal = lib.entries
    assert e["eprint"] == preprint.arxiv_id and e["archiveprefix"] == "arXiv"
    assert e["doi"] == f"10.48550/arXiv.{preprint.arxiv_id}" and e["url"] == f"https://arxiv.org/abs/{preprint.arxiv_id}"
    assert published.entry_type == "inproceedings" and published["eprint"] == "2503.09516"
    assert "doi" not in published.fields_dict
    assert [" ".join(n.first + n.last) for n in published["author"]][-1] == "Jiawei Han"
    assert journal.entry_type == "article" and journal["doi"] == "10.1145/3704435"


def test_bibtex_keeps_every_field_of_an_imported_work():
    w = user_work()
    text = to_format([w], "bibtex")
    (plain,), failed = parse_bibtex(text)  # unescapes LaTeX
    assert not failed
    assert plain["primaryclass"] == "cs.CL" and plain["eprint"] == "2401.00001"
    assert plain["title"] == w.title and plain["abstract"] == w.abstract and plain["keywords"] == "tools, memory"
    e = parse_names_bibtex(text).entries[0]
    got = [(latex_to_text(" ".join(n.first)), latex_to_text(" ".join(n.von + n.last))) for n in e["author"]]
    assert got == [("Marc-Alexandre", "Côté"), ("Ludwig", "van Beethoven"), ("", "OpenAI Research Team")]
    assert e["author"][-1].last == ["{OpenAI Research Team}"]  # an organisation stays one unsplit name
    assert r"C{\^o}t{\'e}" in text  # pdfLaTeX-safe spelling of the accents


# -- CSL-JSON -------------------------------------------------------------------------------------
def test_csl_json_schema_and_round_trip(catalog):
    works = [*catalog, user_work()]
    items = json.loads(to_format(works, "cslj"))
    jsonschema.validate(items, CSL_SCHEMA)
    assert [i["id"] for i in items] == [w.key for w in works]
    for item, w in zip(items, works):
        assert item["title"] == w.title
        assert item.get("issued") == ({"date-parts": [[w.year]]} if w.year else None)
        got = [(a.get("given", ""), a.get("family", a.get("literal", ""))) for a in item.get("author", [])]
        assert got == names(w), w.key
    assert sum(1 for i in items if i.get("author")) >= 0.95 * len(items)


def test_csl_schema_check_can_fail():
    items = json.loads(to_format([user_work()], "cslj"))
    items[0]["author"][0]["famly"] = "typo"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(items, CSL_SCHEMA)


# -- RIS ------------------------------------------------------------------------------------------
def test_ris_round_trip(catalog):
    works = [*catalog, user_work()]
    records = read_ris(to_format(works, "ris"))
    assert [r["ID"] for r in records] == [[w.key] for w in works]
    for r, w in zip(records, works):
        assert r["TI"] == [w.title]
        assert r.get("PY") == ([str(w.year)] if w.year else None)
        want = [p.sort_form for p in split_authors(w.authors)]
        assert r.get("AU", []) == want, w.key
        named = w.url.split("doi.org/" if "doi.org/10." in w.url else "/doi/")[1] if (
            "doi.org/10." in w.url or "/doi/10." in w.url) else ""
        if is_published(w.venue):  # the publisher's DOI, named in the URL, or none: never the preprint's
            assert r.get("DO") == ([named] if named and not named.startswith("10.48550") else None), w.key
        elif named:
            assert r["DO"] == [named], w.key
        elif w.arxiv_id:
            assert r["DO"] == [f"10.48550/arXiv.{w.arxiv_id}"], w.key


def test_ris_values_stay_on_one_line():
    w = user_work(abstract="first line\nsecond line\r\nthird")
    (rec,) = read_ris(to_format([w], "ris"))
    assert rec["AB"] == ["first line second line third"]


def test_strict_ris_reader_rejects_broken_files():
    with pytest.raises(AssertionError):
        read_ris("TY  - GEN\nTI  - no end\n")
    with pytest.raises(AssertionError):
        read_ris("TY  - GEN\nTI - one space\nER  - \n")


# -- arXiv ids ------------------------------------------------------------------------------------
def test_arxiv_ids(catalog):
    text = to_format(catalog, "arxiv-ids")
    lines = text.splitlines()
    assert lines == list(dict.fromkeys(w.arxiv_id for w in catalog if w.arxiv_id))
    assert all(re.fullmatch(r"\d{4}\.\d{4,5}|[a-z-]+(\.[A-Z]{2})?/\d{7}", i) for i in lines)


# -- the CLI --------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["cslj", "ris", "arxiv-ids", "bibtex"])
def test_cli_list_formats(fmt, catalog):
    r = run("list", "--node", "memory", "--format", fmt)
    assert r.returncode == 0, r.stderr
    keys = [w.key for w in catalog.select(node="memory")]
    if fmt == "cslj":
        assert [i["id"] for i in json.loads(r.stdout)] == keys
    elif fmt == "ris":
        assert [rec["ID"][0] for rec in read_ris(r.stdout)] == keys
    elif fmt == "arxiv-ids":
        assert r.stdout.splitlines() == [catalog.get(k).arxiv_id for k in keys if catalog.get(k).arxiv_id]
    else:
        assert [e.key for e in bibtexparser.parse_string(r.stdout).entries] == keys


def test_cli_list_by_author(catalog):
    r = run("list", "--author", "Jiawei Han", "--format", "json")
    assert r.returncode == 0, r.stderr
    keys = {d["key"] for d in json.loads(r.stdout)}
    assert "search-r1" in keys
    assert keys == {w.key for w in catalog if "Jiawei Han" in w.authors}


def test_cli_unknown_author_exits_2_with_suggestion():
    r = run("list", "--author", "Jiawei Hann")
    assert r.returncode == 2 and "Jiawei Han" in r.stderr and r.stderr.startswith("error: no work by author")


def test_cli_search_exports_hits_and_filters_by_author():
    r = run("search", "search engine reinforcement learning", "--author", "Jiawei Han", "--k", "5", "--format", "ris",
            "--mode", "lexical")
    assert r.returncode == 0, r.stderr
    recs = read_ris(r.stdout)
    assert recs and all(any(a.startswith("Han, Jiawei") for a in rec["AU"]) for rec in recs)


def test_cli_list_bibtex_has_authors_on_95_percent(catalog):
    r = run("list", "--format", "bibtex")
    assert r.returncode == 0, r.stderr
    lib = parse_names_bibtex(r.stdout)
    assert len(lib.entries) == len(catalog)
    with_authors = sum(1 for e in lib.entries if e.fields_dict.get("author") and e["author"])
    assert with_authors >= 0.95 * len(lib.entries)


# -- abstracts: only a user's own ---------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["bibtex", "cslj", "ris", "csv", "json"])
def test_a_shipped_work_never_exports_an_abstract(fmt):
    """Text copied from papers may not ship: an abstract on a survey work (none ships today) is
    never written by any export; a user's own imported abstract is."""
    marker = "Copiedabstracttextmarker"
    shipped = user_work(key="shipped", origin="survey", abstract=f"{marker} from a paper.")
    mine = user_work(key="mine", abstract="Myownabstractmarker written by me.")
    out = to_format([shipped], fmt)
    assert marker not in out
    assert "Myownabstractmarker" in to_format([mine], fmt)


def test_the_shipped_catalog_has_no_abstracts():
    from papers import Catalog

    cat = Catalog.load()
    assert not [k for k, w in cat.works.items() if w.abstract]
    text = to_format(list(cat.works.values()), "bibtex")
    assert "abstract =" not in text.lower()


# -- every entry citable: author, year, a locator; titles in the authors' casing ------------------
def bibtex_gaps(text: str) -> dict[str, list[str]]:
    """Per entry key, what a citation needs and the BibTeX entry lacks."""
    lib = bibtexparser.parse_string(text)
    assert not lib.failed_blocks
    gaps = {}
    for e in lib.entries:
        f = e.fields_dict
        missing = [name for name, ok in (("author", "author" in f), ("year", "year" in f),
                                         ("locator", any(k in f for k in ("eprint", "doi", "url"))))
                   if not ok]
        if missing:
            gaps[e.key] = missing
    return gaps


def csl_gaps(text: str) -> dict[str, list[str]]:
    gaps = {}
    for item in json.loads(text):
        missing = [name for name, ok in (("author", bool(item.get("author"))), ("year", "issued" in item),
                                         ("locator", any(k in item for k in ("URL", "DOI")) or item.get("archive") == "arXiv"))
                   if not ok]
        if missing:
            gaps[item["id"]] = missing
    return gaps


def ris_gaps(text: str) -> dict[str, list[str]]:
    gaps = {}
    for rec in read_ris(text):
        missing = [name for name, ok in (("author", "AU" in rec), ("year", "PY" in rec),
                                         ("locator", any(t in rec for t in ("UR", "DO", "AN"))))
                   if not ok]
        if missing:
            gaps[rec["ID"][0]] = missing
    return gaps


GAP_CHECKS = {"bibtex": bibtex_gaps, "cslj": csl_gaps, "ris": ris_gaps}


@pytest.mark.parametrize("fmt", sorted(GAP_CHECKS))
def test_every_exported_entry_has_author_year_and_locator(fmt, catalog):
    assert GAP_CHECKS[fmt](to_format(list(catalog), fmt)) == {}


@pytest.mark.parametrize("fmt", sorted(GAP_CHECKS))
def test_the_gap_checks_can_fail(fmt):
    bare = Work(key="bare", title="A work with nothing else")
    assert GAP_CHECKS[fmt](to_format([bare], fmt)) == {"bare": ["author", "year", "locator"]}


def _own_lower_case_titles() -> set[str]:
    """Works whose own title is lower case, as recorded with a source in the verification facts."""
    from papers.verification import VERIFICATION_DIR, load_facts

    return {f.key for f in load_facts(VERIFICATION_DIR / "facts.csv") if f.field == "title" and f.value == f.value.lower()}


def test_no_title_is_lower_cased_unless_the_paper_writes_it_so(catalog):
    own = _own_lower_case_titles()
    flattened = [w.key for w in catalog if w.title == w.title.lower() and w.key not in own]
    assert flattened == []
    entries, _ = parse_bibtex(to_format(list(catalog), "bibtex"))
    for e, w in zip(entries, catalog):
        assert e["title"] != e["title"].lower() or w.key in own, w.key


def _sentence_case(bibtex_title: str) -> str:
    """What a sentence-casing BibTeX style does: lower-case every letter outside braces but the first."""
    out, depth = [], 0
    for i, ch in enumerate(bibtex_title):
        depth += ch == "{"
        depth -= ch == "}"
        out.append(ch if depth or i == 0 or ch in "{}" else ch.lower())
    return latex_to_text("".join(out))


@pytest.mark.parametrize("key, kept", [
    ("digirl", "DigiRL"), ("ui-tars-2", "UI-TARS-2"), ("tau2-bench", "τ²-Bench"), ("spatialvlm", "SpatialVLM"),
    ("vista", "(VisTA)"), ("cognitive-behaviors-that-enable-self-improving", "STaRs"), ("pfrl", "ChainerRL"),
    ("windowsagentarena", "OS"), ("search-r1", "LLMs"), ("dqn", "Atari"),
])
def test_bibtex_protects_names_a_style_would_break(key, kept, catalog):
    lib = bibtexparser.parse_string(to_format([catalog.get(key)], "bibtex"))
    raw = lib.entries[0]["title"]
    assert kept in _sentence_case(raw).split() or kept in _sentence_case(raw), raw
    assert not (raw.startswith("{") and raw.endswith("}") and " " in raw and raw.count("{") == 1), raw


def test_bibtex_lets_styles_recase_ordinary_words(catalog):
    """Only single words are braced: a style can still sentence-case the rest of a title."""
    lib = bibtexparser.parse_string(to_format(list(catalog), "bibtex"))
    for e in lib.entries:
        groups = re.findall(r"(?<!\\)\{([^{}]*)\}", e["title"])
        assert all(" " not in g for g in groups), (e.key, e["title"])
    digirl = next(e for e in lib.entries if e.key == "digirl")
    assert "device-control agents" in _sentence_case(digirl["title"])


ORGANISATIONS = {"ByteDance Doubao", "Essential AI", "Gemini Robotics Team", "Gemini Team", "Kimi Team", "MiroMind Team",
                 "OpenAI Team", "Qwen Team", "Significant Gravitas", "SimpleVLA-RL Team", "The mathlib Community", "Zhipu AI"}


def test_only_organisations_are_exported_as_one_unsplit_name(catalog):
    """A braced author is an organisation to BibTeX; a person ({Lilian Weng}) must be split into names."""
    braced = {p.literal for w in catalog for p in split_authors(w.authors) if p.literal and " " in p.literal}
    assert braced <= ORGANISATIONS, braced - ORGANISATIONS
    lib = parse_names_bibtex(to_format([catalog.get("llm-powered-autonomous-agents"), catalog.get("qwq-32b")], "bibtex"))
    weng, qwen = lib.entries[0]["author"][0], lib.entries[1]["author"][0]
    assert (weng.first, weng.last) == (["Lilian"], ["Weng"])
    assert qwen.last == ["{Qwen Team}"]


# -- BibTeX a LaTeX user can paste: entry types, the brace rule, ASCII, balance, hostile input --------
def test_published_works_are_inproceedings_or_articles_with_their_venue(catalog):
    lib = bibtexparser.parse_string(to_format(list(catalog), "bibtex"))
    by_key = {e.key: e for e in lib.entries}
    for w in catalog:
        e = by_key[w.key]
        if not is_published(w.venue):
            assert e.entry_type == "misc", w.key
            continue
        assert e.entry_type in ("inproceedings", "article"), w.key
        place = e.fields_dict.get("booktitle" if e.entry_type == "inproceedings" else "journal")
        assert place is not None, w.key
        assert latex_to_text(place.value) == venue_title(w.venue), w.key
        assert not e.fields_dict.get("doi") or not e["doi"].startswith("10.48550"), w.key  # never the preprint's DOI
        if w.arxiv_id:
            assert e["eprint"] == w.arxiv_id and e["archiveprefix"] == "arXiv", w.key
    published = sum(1 for w in catalog if is_published(w.venue))
    assert published > 100 and sum(1 for e in lib.entries if e.entry_type == "misc") == len(catalog) - published


@pytest.mark.parametrize("title, names, expected", [
    ("WebArena: A Realistic Web Environment", (), "{WebArena}: A Realistic Web Environment"),
    ("Attention in the Transformer", (), "Attention in the Transformer"),
    ("Open Deep Research with LLMs", (), "Open Deep Research with {LLMs}"),
    ("LLM-Based Agents", (), "{LLM}-Based Agents"),
    ("Verified Code Generation in Dafny and Python", (), "Verified Code Generation in {Dafny} and {Python}"),
    ("GPT-4V(ision) is a Generalist Web Agent, if Grounded", (),
     "{GPT-4V(ision)} is a Generalist Web Agent, if Grounded"),
    ("(VisTA): Visual Tool Agents", (), "({VisTA}): Visual Tool Agents"),
    ("UI-TARS-2 Technical Report", (), "{UI-TARS}-2 Technical Report"),
    ("Search-R1: Training LLMs", ("Search-R1",), "{Search-R1}: Training {LLMs}"),
    ("τ²-Bench: Evaluating Agents", ("τ²-bench",), "{{$\\tau^2$}-Bench}: Evaluating Agents"),
    ("π0: A Flow Model", ("π0",), "{{$\\pi_0$}}: A Flow Model"),
    ("β-DPO: Dynamic β", (), "{$\\beta$}-{DPO}: Dynamic {$\\beta$}"),
    ("Memory³: Explicit Memory", (), "{Memory{$^3$}}: Explicit Memory"),
    ("Côté’s “Quoted” Agents — Revisited", (),
     "C{\\^o}t{\\'e}\\textquoteright{}s \\textquotedblleft{}Quoted\\textquotedblright{} Agents \\textemdash{} Revisited"),
])
def test_bibtex_title_braces_only_what_must_keep_its_case(title, names, expected):
    from papers.bibtex_text import bibtex_title

    written = bibtex_title(title, names)
    assert written == expected
    assert latex_to_text(written) == title


def _balanced(value: str) -> bool:
    """Every brace counted, escaped or not: that is how BibTeX counts them."""
    depth = 0
    for ch in value:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0


_BIBTEX_LINE = re.compile(r"@(misc|inproceedings|article)\{[A-Za-z0-9._:-]+,|  [a-z]+ = \{.*\},|\}|")


def check_bibtex_text(text: str, n_entries: int) -> list:
    """The export's own guarantees, independent of any parser: ASCII only; every line an entry head, one
    ``  name = {value},`` field line or a closing brace; every value brace-balanced; then a real parser
    finds exactly ``n_entries`` entries and nothing else."""
    assert text.isascii()
    for n, line in enumerate(text.splitlines(), 1):
        assert _BIBTEX_LINE.fullmatch(line), f"line {n}: {line[:120]!r}"
        if line.startswith("  "):
            value = line.split(" = ", 1)[1][1:-2]
            assert _balanced(value), f"line {n}: unbalanced {value[:120]!r}"
    lib = bibtexparser.parse_string(text)
    assert not lib.failed_blocks and not lib.strings and not lib.preambles
    assert len(lib.entries) == len(lib.blocks) == n_entries
    return lib.entries


def test_every_exported_entry_is_ascii_balanced_and_parses(catalog):
    check_bibtex_text(to_format(list(catalog), "bibtex"), len(catalog))


def test_the_shipped_catalog_needs_no_fallback_spelling(catalog):
    from papers.bibtex_text import unmapped_characters

    fields = ("title", "authors", "venue", "summary", "name")
    found = {w.key: unmapped_characters(" ".join(str(getattr(w, f)) for f in fields) + " ".join(w.keywords))
             for w in catalog}
    assert {k: v for k, v in found.items() if v} == {}
    assert unmapped_characters("中文 «x»") == {"中", "文", "«", "»"}  # the check can fail


def test_the_balance_and_line_checks_can_fail():
    assert not _balanced("a}{b") and not _balanced("\\{") and _balanced("{\\'e}")
    with pytest.raises(AssertionError):
        check_bibtex_text("@misc{a,\n  title = {x}},\n}\n", 1)
    with pytest.raises(AssertionError):
        check_bibtex_text("@misc{a,\n  title = {\u00e9},\n}\n", 1)


HOSTILE = {
    "title closes the field": dict(title="Evil}, note = {\\input{/etc/hostname}}, x = {"),
    "title plants an entry": dict(title="Line one\n@misc{planted, title = {x}}\nthe end"),
    "title unbalanced": dict(title="{{{ open { never closed"),
    "authors": dict(authors="A {B} and {Evil}} @misc{p,} and C \\input{x} and {Org {Inner}"),
    "url and code": dict(url="https://x.org/}\n@misc{planted2,\n", code_url="https://y.org/{\\input{/etc/passwd}}"),
    "venue": dict(venue="NeurIPS 2024}, note={\\input{z}}"),
    "journal venue": dict(venue="Journal of {Evil\n@misc{j,"),
    "arxiv id": dict(arxiv_id="2401.00001}, note={\\input{z}"),
    "keywords and summary": dict(keywords=("a}b", "@misc{k,"), summary="x}\n@comment{ \\input{q}"),
    "control characters": dict(title="Bell\x07 and\rreturn\x00 null"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_imported_value_stays_inside_its_field(case):
    """Issue 63: an imported CSV's title, authors, url, code or venue carried entries and commands into
    the BibTeX. Now a value is only text: one entry per work, no LaTeX command from the value, and the
    title reads back as it was (whitespace normalised)."""
    w = user_work(key="victim", **HOSTILE[case])
    text = to_format([w, user_work(key="after")], "bibtex")
    entries = check_bibtex_text(text, 2)
    assert [e.key for e in entries] == ["victim", "after"]
    assert "\\input" not in text and "@misc{planted" not in text and "@comment{" not in text
    fields = {f.key for f in entries[0].fields}
    assert "note" not in fields and "x" not in fields
    (plain, _), failed = parse_bibtex(text)
    assert not failed
    assert plain["title"] == " ".join("".join(c if c.isprintable() else " " for c in w.title).split())


def test_bibtex_marks_a_list_cut_with_et_al(catalog):
    cut = [w for w in catalog if is_truncated(w.authors)]
    entries = check_bibtex_text(to_format(cut, "bibtex"), len(cut))
    for e, w in zip(entries, cut):
        assert e["author"].endswith(" and others") and "incomplete" in e["authornote"], w.key


# T1 font encoding: the ogonek of one author's name ({\k{a}}, Mądry) has no OT1 glyph
_LATEX_DOC = r"""\documentclass{article}
\usepackage[T1]{fontenc}
\usepackage{natbib}
\usepackage{url}
\begin{document}
\nocite{*}
\bibliographystyle{plainnat}
\bibliography{catalog}
\end{document}
"""


@pytest.mark.skipif(not (shutil.which("pdflatex") and shutil.which("bibtex")), reason="no LaTeX toolchain (pdflatex, bibtex)")
def test_the_exported_catalog_compiles_with_pdflatex_and_bibtex(tmp_path, catalog):
    """The whole catalog and the hostile cases, typeset: bibtex and pdflatex exit 0 (no error)."""
    hostile = [user_work(key=f"hostile-{i}", **kw) for i, kw in enumerate(HOSTILE.values())]
    (tmp_path / "catalog.bib").write_text(to_format([*catalog, user_work(), *hostile], "bibtex"), encoding="ascii")
    (tmp_path / "doc.tex").write_text(_LATEX_DOC, encoding="ascii")

    def run_tool(*cmd):
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, errors="replace", timeout=240)

    first = run_tool("pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex")
    assert first.returncode == 0, first.stdout[-2000:]
    bib = run_tool("bibtex", "doc")
    assert bib.returncode in (0, 1), bib.stdout[-2000:]  # 1: warnings only (e.g. a misc without a howpublished)
    assert "error message" not in bib.stdout, bib.stdout[-2000:]
    for _ in range(2):
        done = run_tool("pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex")
        assert done.returncode == 0, done.stdout[-3000:]
    log = (tmp_path / "doc.log").read_text(encoding="latin-1")
    assert "Citation" not in log or "undefined" not in log
    assert (tmp_path / "doc.pdf").stat().st_size > 10_000


def test_an_imported_hostile_csv_exports_as_text_through_the_cli(tmp_path, catalog):
    """Issue 63 item 3 end to end: a CSV with a hostile title, authors, url, code and venue, imported and
    exported with ``papers list --format bibtex``, gives one entry per work and no command or entry of its own."""
    import csv as csv_module
    import io

    src = tmp_path / "hostile.csv"
    buf = io.StringIO()
    writer = csv_module.writer(buf)
    writer.writerow(["key", "title", "authors", "year", "venue", "url", "code_url"])
    writer.writerow(["evil-1", "Evil}, note = {\\input{/etc/hostname}}, x = {", "A {B} and {Evil}} @misc{p,}", "2025",
                     "NeurIPS 2024}, note={\\input{z}}", "https://x.org/}\n@misc{planted,\n", "https://y.org/{\\input{q}}"])
    writer.writerow(["evil-2", "Line one\n@misc{planted2, title = {x}}", "C D", "2024", "arXiv", "", ""])
    src.write_text(buf.getvalue(), encoding="utf-8")
    data = tmp_path / "data"
    imported = run_in(data, "import", str(src), "--no-place")
    assert imported.returncode == 0, imported.stderr
    out = run_in(data, "list", "--format", "bibtex")
    assert out.returncode == 0, out.stderr
    entries = check_bibtex_text(out.stdout, len(catalog) + 2)
    keys = [e.key for e in entries]
    assert {"evil-1", "evil-2"} <= set(keys) and len(set(keys)) == len(keys)
    assert "\\input" not in out.stdout and "@misc{planted" not in out.stdout


def run_in(data_dir, *args):
    return papers_cli(*args, data_dir=data_dir, cwd=ROOT)


def test_cli_bibtex_of_the_whole_catalog_passes_the_checks(catalog):
    r = run("list", "--format", "bibtex")
    assert r.returncode == 0, r.stderr
    check_bibtex_text(r.stdout, len(catalog))


@pytest.mark.parametrize("written, text", [
    ("J.~Doe and Jos{\\'e} \\\"{u}ber \\c{c} {\\\"\\i}", "J. Doe and José über ç ï"),
    ("{\\l}{\\'o}d{\\'z} {\\ss} {$\\pi_0$} {$\\tau^2$} Memory{$^3$}", "łódź ß π0 τ² Memory³"),
    ("\\textbraceleft{}\\textbackslash{}input\\textbraceright{} \\& 100\\% \\textemdash{}", "{\\input} & 100% —"),
])
def test_latex_to_text_reads_the_forms_written_and_common_hand_written_ones(written, text):
    assert latex_to_text(written) == text
