"""Text for the search index: what each work's document says, and how text becomes terms.

A work's own document holds its titles (cased and original), name, aliases, kind, tags, algorithms,
the cells of its survey-table rows and (unless excluded) its summary and keywords. The taxonomy
nodes on its placement paths are indexed once per node (name + description) and their scores are
carried to the works placed under them (see ``index.py``), so a node's description counts for
every work on its path without being copied 573 times.

Terms: NFKC + casefold, split on anything that is not a letter or digit; hyphenated or dotted
compounds also give their joined form ("Search-R1" -> search, r1, searchr1) and CamelCase words
their parts ("WebShop" -> webshop, web, shop); English stop words are dropped and a light suffix
stemmer folds plurals and -ing/-ed/-ation/-ize endings.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can could did do does doing don't down during each either
    etc few for from further had has have having he her here hers him his how i if in into is isn't it
    its itself just let me more most my no nor not of off on once only or other our ours out over own
    per same she should so some such than that the their theirs them then there these they this those
    through to too under until up upon us very via vs was we were what when where which while who whom
    why will with within without would you your yours""".split()
)

_RUN = re.compile(r"[^\W_]+(?:[-./'][^\W_]+)*")  # a word or a compound; matches in linear time
_SEP = re.compile(r"[-./']")
_MAX_SPLIT = 48  # longer "words" are not split into CamelCase parts (keeps tokenizing linear)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CAMEL_BOUNDARY = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]{2}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")


def clean(text: str) -> str:
    """Unicode-normalise and drop control/format characters; collapse whitespace."""
    text = (text or "").encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    text = unicodedata.normalize("NFKC", text)
    text = _CONTROL.sub(" ", text)
    return " ".join(text.split())


_SUFFIXES = (  # (suffix, replacement), first match wins; the stem must keep >= 4 characters
    ("izations", ""), ("ization", ""), ("ations", ""), ("ation", ""), ("izing", ""), ("ized", ""),
    ("izes", ""), ("ize", ""), ("ating", ""), ("ated", ""), ("ates", ""), ("ate", ""),
    ("ings", ""), ("ing", ""), ("ed", ""),
)


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A small, predictable English stemmer (plurals, -ing, -ed, -ation, -ize; British -ise)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for a, b in (("isations", "izations"), ("isation", "ization"), ("ising", "izing"), ("ised", "ized"), ("ises", "izes")):
        if word.endswith(a):
            word = word[: -len(a)] + b
            break
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 4:
        word = word[:-1]
    for suf, rep in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            word = word[: -len(suf)] + rep
            if len(word) >= 5 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]  # planning -> plann -> plan
            break
    return word


def _surface_pairs(text: str) -> list[tuple[str, str]]:
    """(term, the query word it came from) for every surface term of ``text``, stop words kept."""
    out: list[tuple[str, str]] = []
    for m in _RUN.finditer(clean(text)):
        run = m.group()
        words = _SEP.split(run)
        if len(words) > 1:
            out.append((_SEP.sub("", run).casefold(), run))
        for w in words:
            out.append((w.casefold(), w))
            if len(w) <= _MAX_SPLIT and _CAMEL_BOUNDARY.search(w):
                parts = _CAMEL.findall(w)
                if len(parts) > 1:
                    out.extend((p.casefold(), w) for p in parts)
    return out


def surface_terms(text: str) -> list[str]:
    """Lower-cased words of ``text`` with joined compounds and CamelCase parts, stop words kept."""
    return [t for t, _ in _surface_pairs(text)]


def terms(text: str) -> list[str]:
    """Index terms of ``text``: surface terms without stop words, stemmed (with repeats)."""
    return [stem(t) for t in surface_terms(text) if t not in STOPWORDS]


def query_terms(text: str) -> dict[str, str]:
    """Distinct index terms of a query, each mapped to the query word (as typed) that produced it."""
    out: dict[str, str] = {}
    for t, word in _surface_pairs(text):
        if t not in STOPWORDS:
            out.setdefault(stem(t), word)
    return out


_TABLE_SKIP = frozenset({"work_key", "source", "survey_ref", "year", "resources"})


def _cell(column: str, value: str) -> str:
    """A yes/no cell means nothing without its column: 'clip: Yes'."""
    value = value.strip()
    return f"{column.replace('_', ' ')}: {value}" if value.casefold() in ("yes", "no") else value


def table_cells_by_work(catalog) -> dict[str, list[str]]:
    """Cells of the survey-table rows of every work, in one pass over the tables (key -> cells)."""
    out: dict[str, list[str]] = {}
    for t in catalog.tables.values():
        frame = t.frame
        if "work_key" not in frame.columns:
            continue
        cols = [c for c in frame.columns if c not in _TABLE_SKIP]
        for rec in frame.to_dict("records"):
            cells = [_cell(c, str(rec[c])) for c in cols if str(rec[c]).strip() not in ("", "-")]
            for key in str(rec["work_key"]).split(";"):
                if key.strip():
                    out.setdefault(key.strip(), []).extend(cells)
    return {k: list(dict.fromkeys(v)) for k, v in out.items()}


def tag_text(tag: str) -> str:
    """'env-capability:Tool Use' -> 'env capability: Tool Use'."""
    return tag.replace("-", " ")


def work_fields(work, table_cells: list[str] = (), include_summaries: bool = True) -> dict[str, str]:
    """The work's own fields as text (node text is separate; see the module docstring)."""
    titles = [work.title]  # the original title differs only in casing: index it once (terms are casefolded)
    if work.title_original and work.title_original.casefold() != work.title.casefold():
        titles.append(work.title_original)
    fields = {
        "title": " | ".join(titles),
        "name": " | ".join(dict.fromkeys(x for x in (work.name, *work.aliases) if x)),
        "kind": work.kind,
        "tags": "; ".join(tag_text(t) for t in work.tags),
        "algorithms": "; ".join(work.algorithms),
        "table": "; ".join(table_cells),
        "summary": work.summary if include_summaries else "",
        "keywords": "; ".join(work.keywords) if include_summaries else "",
    }
    return fields


def lexical_document(fields: dict[str, str]) -> list[str]:
    """BM25 terms of a work: the title and names count twice (they are the most specific words)."""
    toks = terms(fields["title"]) * 2 + terms(fields["name"]) * 2
    for f in ("kind", "tags", "algorithms", "table", "summary", "keywords"):
        toks += terms(fields[f])
    return toks


def dense_document(fields: dict[str, str]) -> str:
    """Text embedded for a work (MiniLM reads the first 256 word pieces: most specific first)."""
    parts = [fields["title"]]
    if fields["name"] and fields["name"].lower() not in fields["title"].lower():
        parts.append(fields["name"])
    if fields["summary"]:
        parts.append(fields["summary"])
    if fields["keywords"]:
        parts.append("Keywords: " + fields["keywords"])
    if fields["algorithms"]:
        parts.append("Algorithms: " + fields["algorithms"])
    if fields["table"]:
        parts.append(fields["table"])
    if fields["tags"]:
        parts.append(fields["tags"])
    parts.append(f"({fields['kind']})")
    return clean(". ".join(p.strip().rstrip(".").strip() for p in parts if p.strip()))


def node_text(node) -> str:
    return clean(f"{node.name}. {node.description}")
