"""Reference-manager formats: CSL-JSON (Zotero, Mendeley, pandoc), RIS, and a plain list of arXiv ids.

Every writer takes any iterable of works, shipped or imported, and keeps its key (CSL ``id``,
RIS ``ID``), title, year and authors; tests read the output back with a schema check (CSL-JSON)
and a strict RIS reader.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable

from papers.authors import split_authors
from papers.schema import Work
from papers.venues import WEB_VENUES, is_journal, is_published

_DOI_IN_URL = re.compile(r"(?:doi\.org/|/doi/(?:abs/|full/|pdf/)?)(10\.\d{4,9}/[^\s?#]+)", re.I)
_ARXIV_DOI = re.compile(r"10\.48550/arxiv\.", re.I)


def doi_of(work: Work) -> str:
    """The DOI a citation should carry, never one made up for a published version.

    A published work: the publisher's DOI where its URL names one (the URL is a verified fact for the
    works whose URL was checked), else none (its arXiv id stays in eprint / archive). An unpublished
    arXiv work: the DOI its URL names, else arXiv's DataCite DOI (``10.48550/arXiv.<id>``, which arXiv
    registers for every paper)."""
    m = _DOI_IN_URL.search(work.url or "")
    doi = m.group(1).rstrip(".") if m else ""
    if is_published(work.venue):
        return "" if _ARXIV_DOI.match(doi) else doi
    if doi:
        return doi
    return f"10.48550/arXiv.{work.arxiv_id}" if work.arxiv_id else ""


def exported_abstract(work: Work) -> str:
    """The abstract an export may carry: only a user's own imported one (``origin == "user"``).

    The catalog ships no abstracts (text copied from papers may not ship); should a shipped work
    ever carry one, no export writes it."""
    return work.abstract if work.origin == "user" else ""


def primary_class(work: Work) -> str:
    """The arXiv primary category when known (imports from arXiv metadata carry ``arxiv:<cat>`` tags)."""
    for tag in work.tags:
        if tag.startswith("arxiv:"):
            return tag.split(":", 1)[1]
    return ""


def _genre(work: Work) -> str:
    """'preprint', 'conference', 'journal' or 'web' (drives CSL type and RIS TY)."""
    venue = work.venue
    if venue in WEB_VENUES:
        return "web"
    if not is_published(venue):
        return "preprint"
    return "journal" if is_journal(venue) else "conference"


_CSL_TYPES = {"preprint": "article", "conference": "paper-conference", "journal": "article-journal", "web": "webpage"}
_RIS_TYPES = {"preprint": "GEN", "conference": "CPAPER", "journal": "JOUR", "web": "ELEC"}


def csl_item(work: Work) -> dict:
    """One CSL-JSON item (see the CSL data schema, csl-data.json)."""
    genre = _genre(work)
    item: dict = {"id": work.key, "type": _CSL_TYPES[genre], "title": work.title}
    people = split_authors(work.authors)
    if people:
        item["author"] = [{"literal": p.literal} if p.literal else {"family": p.family, "given": p.given} for p in people]
    if work.year is not None:
        item["issued"] = {"date-parts": [[work.year]]}
    if genre in ("conference", "journal"):
        item["container-title"] = work.venue
    elif genre == "web" or (genre == "preprint" and work.venue not in ("", "arXiv")):
        item["publisher"] = work.venue
    if work.arxiv_id:
        item["archive"] = "arXiv"
        item["number"] = work.arxiv_id
        if genre == "preprint":
            item["publisher"] = "arXiv"
    doi = doi_of(work)
    if doi:
        item["DOI"] = doi
    if work.url or work.arxiv_url:
        item["URL"] = work.url or work.arxiv_url
    if exported_abstract(work):
        item["abstract"] = exported_abstract(work)
    if work.keywords:
        item["keyword"] = ", ".join(work.keywords)
    if work.summary:
        item["note"] = work.summary
    if work.name and work.name != work.title:
        item["title-short"] = work.name
    return item


def to_csl_json(works: Iterable[Work]) -> str:
    return json.dumps([csl_item(w) for w in works], ensure_ascii=False, indent=1) + "\n"


def _ris_value(text: str) -> str:
    # RIS is line-based: a value never spans lines
    return " ".join(str(text).split())


def to_ris(works: Iterable[Work]) -> str:
    """RIS records (``TY`` first, ``ER`` last, tags as ``XX  - value``), one ``AU`` per author."""
    lines: list[str] = []
    for w in works:
        genre = _genre(w)
        rec = [("TY", _RIS_TYPES[genre]), ("ID", w.key), ("TI", w.title)]
        rec += [("AU", p.sort_form) for p in split_authors(w.authors)]
        if w.year is not None:
            rec.append(("PY", str(w.year)))
        if genre == "conference":
            rec.append(("T2", w.venue))
        elif genre == "journal":
            rec.append(("JO", w.venue))
        elif w.venue:
            rec.append(("PB", w.venue))
        if w.arxiv_id:
            rec.append(("AN", f"arXiv:{w.arxiv_id}"))
        doi = doi_of(w)
        if doi:
            rec.append(("DO", doi))
        if w.url or w.arxiv_url:
            rec.append(("UR", w.url or w.arxiv_url))
        if w.code_url:
            rec.append(("N1", f"Code: {w.code_url}"))
        if exported_abstract(w):
            rec.append(("AB", exported_abstract(w)))
        rec += [("KW", k) for k in w.keywords]
        if w.summary:
            rec.append(("N1", w.summary))
        rec.append(("ER", ""))
        lines += [f"{tag}  - {_ris_value(value)}" for tag, value in rec]
        lines.append("")
    return "\n".join(lines)


def to_arxiv_ids(works: Iterable[Work]) -> str:
    """One arXiv id per line, in order, without duplicates; works without one are left out."""
    ids = list(dict.fromkeys(w.arxiv_id for w in works if w.arxiv_id))
    return "".join(i + "\n" for i in ids)
