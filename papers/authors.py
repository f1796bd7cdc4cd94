"""Author lists: one string per work, split into names for the export formats and the author filter.

A work's ``authors`` is stored the BibTeX way, ``"Bowen Jin and Hansi Zeng and Jiawei Han"``, for
shipped works (from ``data/authors.csv``) and user works alike. Imported files also bring the
arXiv metadata form ``"Bowen Jin, Hansi Zeng and Jiawei Han"`` and BibTeX's ``"Jin, Bowen and
Zeng, Hansi"``; ``split_authors`` reads all three. A name in braces (``{OpenAI}``) or a single
word is an organisation: it has no given/family split. A list the source cut short ("et al.")
ends with BibTeX's `` and others``; ``split_authors`` leaves that out and ``is_truncated`` tells.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_AND = re.compile(r"\s+and\s+", re.I)
# name particles that belong to the family name ("Ludwig van Beethoven" -> family "van Beethoven")
_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "da", "di", "du", "la", "le", "dos", "das", "ter", "bin"}
_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}


@dataclass(frozen=True)
class Person:
    """One author. ``literal`` is set (and ``given``/``family`` empty) for organisations."""

    given: str = ""
    family: str = ""
    literal: str = ""

    @property
    def display(self) -> str:
        return self.literal or " ".join(p for p in (self.given, self.family) if p)

    @property
    def sort_form(self) -> str:
        """``Family, Given`` (RIS ``AU``, BibTeX's unambiguous form)."""
        if self.literal:
            return self.literal
        return f"{self.family}, {self.given}" if self.given else self.family


def _split_top_level(text: str) -> list[str]:
    """Split on `` and `` outside braces."""
    parts, depth, start = [], 0, 0
    for m in re.finditer(r"[{}]|\s+and\s+", text, flags=re.I):
        tok = m.group(0)
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth = max(0, depth - 1)
        elif depth == 0:
            parts.append(text[start:m.start()])
            start = m.end()
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_name(raw: str) -> Person:
    """One name, ``First Last``, ``Last, First`` or ``{Organisation}``."""
    name = " ".join(raw.split()).strip().rstrip(",")
    if name.startswith("{") and name.endswith("}"):
        return Person(literal=name[1:-1].strip())
    name = name.replace("{", "").replace("}", "")
    if "," in name:
        family, _, given = name.partition(",")
        return Person(given=given.strip(), family=family.strip())
    words = name.split()
    if not words:  # a stray brace from a damaged list ("{Evil}} x"): kept as text, never an IndexError
        return Person(literal=" ".join(raw.split()))
    if len(words) == 1:
        return Person(literal=name)
    if words[-1].lower() in _SUFFIXES and len(words) > 2:
        words = words[:-2] + [words[-2] + " " + words[-1]]
    i = len(words) - 1
    while i > 1 and words[i - 1].lower() in _PARTICLES:
        i -= 1
    return Person(given=" ".join(words[:i]), family=" ".join(words[i:]))


_OTHERS = re.compile(r"(?:,?\s+and\s+|,\s*)(?:others|et\s+al\.?)\s*$", re.I)


def is_truncated(text: str) -> bool:
    """True when the list ends with ``and others`` / ``et al.`` (the source listed only the first names)."""
    return bool(_OTHERS.search(" ".join((text or "").split())))


def split_authors(text: str) -> list[Person]:
    """The people in an author string (BibTeX ``and`` lists or arXiv's ``A, B and C``), without "others"."""
    text = _OTHERS.sub("", " ".join((text or "").split()))
    if not text:
        return []
    parts = _split_top_level(text)
    if len(parts) > 1 and "," not in parts[-1] and any("," in p and " " in p.split(",")[0].strip() for p in parts[:-1]):
        # arXiv style "A B, C D and E F": the commas separate people, not family from given names
        return [parse_name(c) for p in parts for c in p.split(",") if c.strip()]
    if len(parts) > 1 or "," not in text:
        return [parse_name(p) for p in parts]
    # one part with commas: "Jin, Bowen" (one person) or "Bowen Jin, Hansi Zeng" (arXiv style)
    chunks = [c.strip() for c in text.split(",") if c.strip()]
    if len(chunks) == 2 and " " not in chunks[0]:
        return [parse_name(text)]
    return [parse_name(c) for c in chunks]


def join_authors(people: list[Person]) -> str:
    """The stored form: display names joined by `` and `` (organisations braced)."""
    return " and ".join("{" + p.literal + "}" if p.literal and " " in p.literal else p.display for p in people)


def bibtex_author(text: str) -> str:
    """A BibTeX ``author`` value: ``Family, Given and ...`` (unambiguous for every parser)."""
    out = []
    for p in split_authors(text):
        out.append("{" + p.literal + "}" if p.literal else p.sort_form)
    if out and is_truncated(text):
        out.append("others")
    return " and ".join(out)


def display_authors(text: str, limit: int | None = None) -> str:
    """``Bowen Jin, Hansi Zeng, Jiawei Han`` (``, et al.`` when cut here or by the source)."""
    people = split_authors(text)
    shown = people if limit is None else people[:limit]
    more = len(shown) < len(people) or is_truncated(text)
    return ", ".join(p.display for p in shown) + (", et al." if more and shown else "")


def fold(text: str) -> str:
    """Case- and accent-insensitive form for matching names ("Jiawei Han" ~ "jiawei  han")."""
    plain = unicodedata.normalize("NFKD", text)
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^a-z0-9]+", " ", plain.lower()).split())


def matches_author(authors: str, query: str) -> bool:
    """True when one of the work's authors is ``query``: the full name (either order) or, for a
    one-word query, the family name. "Jiawei Han" never matches "Jiawei Hang"."""
    q = fold(query)
    if not q:
        return False
    for p in split_authors(authors):
        forms = {fold(p.display), fold(p.sort_form)}
        if p.family:
            forms.add(fold(f"{p.family} {p.given}"))
            if " " not in q:
                forms.add(fold(p.family))
        if q in forms:
            return True
    return False


def works_by(works, names: list[str]) -> list[str]:
    """Keys of the works (any iterable of ``Work``) written by any of ``names`` (see ``matches_author``).

    A name that matches no work raises ``UnknownAuthorError`` with close matches, so a typo is not
    mistaken for an empty result.
    """
    works = list(works)
    keys: dict[str, None] = {}
    for name in names:
        found = [w.key for w in works if w.authors and matches_author(w.authors, name)]
        if not found:
            raise UnknownAuthorError(name, suggest_authors(works, name))
        keys.update(dict.fromkeys(found))
    return list(keys)


def suggest_authors(works, name: str, n: int = 3) -> list[str]:
    import difflib

    names = {fold(p.display): p.display for w in works for p in split_authors(w.authors)}
    return [names[m] for m in difflib.get_close_matches(fold(name), list(names), n=n, cutoff=0.75)]


class UnknownAuthorError(KeyError):
    def __init__(self, name: str, suggestions: list[str]):
        self.name, self.suggestions = name, suggestions
        hint = f" (did you mean: {', '.join(suggestions)}?)" if suggestions else ""
        super().__init__(f"no work by author '{name}'{hint}")

    def __str__(self) -> str:
        return self.args[0]
