"""Build papers/data/authors.csv: the authors of every work, read from published reference lists.

    python scripts/import_seed.py [--author-sources DIR]     (``make data``; this module has no CLI)

Sources (a folder of saved data files, default ``shared/author-sources`` in the checkout; its
README.md names where each file came from, with the commit):
  survey_references.md        the survey's own reference list: the primary source for the 563
                              works it cites (found through the work's ``survey_refs``)
  readme_citations.bib        BibTeX citation blocks from the works' own repositories' READMEs:
                              the primary source for works the survey does not cite (the companion
                              list's additions), a second source for the others
  other_reference_lists.csv   reference-list lines of other published papers that cite a work by
                              its title: a second source

Nothing is guessed: a work whose title cannot be found in any source stays without authors and is
marked ``unknown``. A second source "agrees" when its first author is ours and at least 80% of
the names it lists are in our list (lists are often cut with "et al." and arXiv versions add
authors); "first-author" when only the first author matches; "differs" otherwise.
Deterministic: the same sources give the same file byte for byte.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import bibtexparser

from papers.authors import Person, fold, is_truncated, join_authors, parse_name, split_authors

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCES = ROOT / "shared" / "author-sources"
FIELDS = ("key", "authors", "n_authors", "truncated", "source", "check", "second_source")
_NON_PAPER = {"Web/blog", "GitHub", "Hugging Face"}
_ORG_WORDS = re.compile(r"\b(team|ai|inc|labs?|research|deepmind|openai|google|meta|anthropic|bytedance|moonshot)\b\.?$", re.I)
_ETAL = re.compile(r",?\s*(et al\.?|and others|others)\s*$", re.I)


def alnum(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


# -- the survey's reference list -------------------------------------------------------------------
def read_references(path: Path) -> dict[str, str]:
    """``{number: text}``; a long reference goes on over later lines (page breaks leave blank lines
    inside it) until the next ``[n]`` or a heading."""
    refs: dict[str, str] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\[(\d+)\]\s+(.*)", line.strip())
        if m:
            current = m.group(1)
            refs[current] = m.group(2)
        elif line.startswith("#"):
            current = None
        elif current is not None and line.strip():
            refs[current] += " " + line.strip()
    return refs


def author_segment(ref: str, title: str) -> str | None:
    """The text before the work's title in a reference (``AUTHORS. TITLE, YEAR. URL``)."""
    want = alnum(title)[:12]
    if want:
        for m in re.finditer(r"\.\s+", ref):
            if alnum(ref[m.end():]).startswith(want):
                return ref[:m.start()]
    # the title was garbled by OCR (e.g. "Mem- $\alpha$"): the first full stop that does not end an initial
    for m in re.finditer(r"\.\s+", ref):
        before = ref[:m.start()].split()
        if before and not re.fullmatch(r"[A-Z]|[A-Z][.-][A-Z]|[a-z]", before[-1]):
            return ref[:m.start()]
    return None


def names_from_segment(seg: str, organisation: bool) -> tuple[list[Person], bool]:
    """People of an author segment in running-text form ("A, B, and C"; "A, B, et al.")."""
    seg = " ".join(seg.split())
    truncated = bool(_ETAL.search(seg))
    seg = _ETAL.sub("", seg)
    parts = [p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", seg)]
    parts = [p for p in parts if re.search(r"[A-Za-z]", p)]
    if organisation and len(parts) == 1:
        return [Person(literal=parts[0])], truncated
    people = []
    for p in parts:
        people.append(Person(literal=p) if _ORG_WORDS.search(p) and len(p.split()) <= 3 and p.split()[0][0].isupper()
                      and (len(p.split()) == 1 or _ORG_WORDS.search(p.split()[-1])) else parse_name(p))
    return people, truncated


# -- second sources ----------------------------------------------------------------------------------
_LATEX_ACCENT = re.compile(r"\\[`'^\"~=.uvHcdbk]\s*\{?\\?([A-Za-z])\}?")


def read_readme_bib(path: Path) -> list[dict[str, str]]:
    lib = bibtexparser.parse_string(path.read_text(encoding="utf-8"))
    out = []
    for e in lib.entries:
        f = {k.lower(): " ".join(str(v.value).replace("{", "").replace("}", "").split()) for k, v in
             ((fl.key, fl) for fl in e.fields)}
        raw_author = _LATEX_ACCENT.sub(r"\1", " ".join(str(e.fields_dict["author"].value).split()))
        out.append({"title": f.get("title", ""), "author": raw_author, "eprint": f.get("eprint", ""),
                    "source": f.get("x-source", "")})
    return out


def family_tokens(people: list[Person]) -> list[str]:
    return [fold(p.family or p.literal) for p in people if (p.family or p.literal)]


def compare(ours: list[Person], other_text: str, other_people: list[Person] | None = None,
            ours_truncated: bool = False) -> tuple[str, str]:
    """("agrees" | "first-author" | "differs", detail) of a second source against our list.

    When our list is cut ("et al."), only as many of the other's names as we list can be found."""
    fams = family_tokens(ours)
    if not fams:
        return "differs", "we have no names"
    text_tokens = set(fold(other_text).split())
    if other_people is not None:  # a structured list (BibTeX): each of its people against our family names
        # (name order is not trusted: some READMEs write "Jain Naman" for Naman Jain)
        others = [set(fold(p.display).split()) for p in other_people]
        listed = len(others)
        first_ok = bool(others) and set(fams[0].split()) <= others[0]
        found = sum(1 for toks in others if any(set(f.split()) <= toks for f in fams))
    else:
        listed = max(1, len([p for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", _ETAL.sub("", other_text)) if p.strip()]))
        head = fold(other_text).split()[:4]
        first_ok = all(t in head for t in fams[0].split())
        window = fams[:listed] if listed < len(fams) else fams
        found = sum(1 for f in window if all(t in text_tokens for t in f.split()))
        listed = len(window)
    if ours_truncated and listed > len(fams):
        listed = len(fams)
        found = min(found, listed)
    share = found / max(1, listed)
    if first_ok and share >= 0.8:
        return "agrees", f"{found} of {listed} names"
    if first_ok:
        return "first-author", f"first author agrees; {found} of {listed} names"
    return "differs", f"first author differs; {found} of {listed} names"


_RANK = {"agrees": 0, "first-author": 1, "differs": 2}


def build(seed: Path, sources: Path) -> tuple[list[dict[str, str]], dict[str, int]]:
    with (seed / "survey_works.csv").open(encoding="utf-8", newline="") as f:
        works = list(csv.DictReader(f))
    refs = read_references(sources / "survey_references.md")
    readme = read_readme_bib(sources / "readme_citations.bib")
    with (sources / "other_reference_lists.csv").open(encoding="utf-8", newline="") as f:
        others = list(csv.DictReader(f))
    others_by_key: dict[str, list[dict]] = {}
    for row in others:
        others_by_key.setdefault(row["key"], []).append(row)

    def readme_for(w: dict) -> list[dict]:
        t = alnum(w["title"])
        return [r for r in readme if (w["arxiv_id"] and r["eprint"].endswith(w["arxiv_id"]))
                or (len(t) >= 20 and alnum(r["title"]) == t)]

    rows, stats = [], {"works": len(works), "with_authors": 0, "agrees": 0, "first-author": 0, "differs": 0, "unknown": 0}
    for w in works:
        organisation = w["venue"] in _NON_PAPER
        people: list[Person] = []
        truncated, source = False, ""
        ref_ids = [r.strip() for r in w["survey_refs"].split(";") if r.strip()]
        for rid in ref_ids:
            seg = author_segment(refs.get(rid, ""), w["title"])
            if seg:
                people, truncated = names_from_segment(seg, organisation)
                source = f"survey ref [{rid}]"
                break
        readme_hits = readme_for(w)
        if not people and readme_hits:
            hit = readme_hits[0]
            people = split_authors(hit["author"])
            truncated = is_truncated(hit["author"])
            source = f"README citation, {hit['source']}"
            readme_hits = readme_hits[1:]
        checks: list[tuple[str, str, str]] = []
        if people:
            for hit in readme_hits:
                others_people = split_authors(hit["author"])
                verdict, detail = compare(people, hit["author"], others_people, truncated)
                checks.append((verdict, detail, f"README citation, {hit['source']}"))
            t = alnum(w["title"])
            for row in others_by_key.get(w["key"], []):
                line = row["line"]
                pos = alnum(line).find(t[:60])
                if pos < 0:
                    continue
                seg = author_segment(re.sub(r"^\[[^\]]*\]\s*", "", line), w["title"]) or ""
                if not seg:
                    continue
                verdict, detail = compare(people, seg, ours_truncated=truncated)
                at = f" @ {row['commit'][:12]}" if row["commit"] else ""
                checks.append((verdict, detail, f"reference list of {row['file']}{at}"))
        checks.sort(key=lambda c: (_RANK[c[0]], c[2]))
        best = checks[0] if checks else None
        check = best[0] if best else ("single-source" if people else "unknown")
        rows.append({
            "key": w["key"], "authors": join_authors(people) + (" and others" if truncated and people else ""), "n_authors": str(len(people)) if people else "",
            "truncated": "yes" if truncated else "", "source": source, "check": check,
            "second_source": f"{best[2]} ({best[1]})" if best else "",
        })
        if people:
            stats["with_authors"] += 1
        stats[check] = stats.get(check, 0) + 1
    return rows, stats


def write_authors(seed: Path, sources: Path, out: Path) -> dict[str, int]:
    rows, stats = build(seed, sources)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    out.write_text(buf.getvalue(), encoding="utf-8")
    return stats
