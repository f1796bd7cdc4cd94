"""The memory bank, the operation format and its parser, and the lexical retriever.

Operation format (what the Memory Manager writes; one line, the first line that parses counts)::

    ADD <text>            store a new entry; when <text> is empty the new dialogue turn is stored as is
    UPDATE <id> <text>    replace entry <id>; empty <text> = the new dialogue turn
    DELETE <id>           remove entry <id>
    NOOP                  change nothing

Keywords are case-insensitive; the id may be written ``3``, ``[3]`` or ``#3``; an optional leading
``Operation:`` and surrounding ``<op>..</op>`` tags are accepted. Parsing is a regular expression,
never an evaluation of model text. Anything else is *unparseable*; an UPDATE or DELETE whose id is
not in the bank is *invalid*. Entry text has its whitespace squeezed, one pair of
surrounding quotes removed and is cut at 300 characters. Both are applied as NOOP, and the environment subtracts
``format_penalty`` from the reward (``reference_impls/envs/memory.py``).

Retrieval: BM25 (k1 = 1.2, b = 0.75) over the entries' terms, computed directly (a bank holds a few
dozen entries, so an index library would cost more than it saves). Terms come from the memory
env's own tokenizer, ``reference_impls.memory.text.terms`` (case folding, stop words, light stemming;
independent of the catalog search, so tuning search never moves memory rewards), plus a small fixed table of slot synonyms (``job`` <-> work, ``live`` <-> moved, ``pet`` <->
dog/cat/adopted ...) applied to the query, so "Where does Alice live?" reaches "Alice: I moved to Oslo".
Ties are broken by recency (the newer entry first).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from reference_impls.memory.text import terms

OPS = ("ADD", "UPDATE", "DELETE", "NOOP")


@dataclass(frozen=True)
class Op:
    kind: str  # ADD | UPDATE | DELETE | NOOP
    id: int | None = None
    text: str = ""
    status: str = "ok"  # ok | unparseable | invalid

    def render(self) -> str:
        if self.kind == "ADD":
            return f"ADD {self.text}".rstrip()
        if self.kind == "UPDATE":
            return f"UPDATE {self.id} {self.text}".rstrip()
        if self.kind == "DELETE":
            return f"DELETE {self.id}"
        return "NOOP"


_LINE = re.compile(r"^\s*(?:<op>\s*)?(?:operation\s*:\s*)?(ADD|UPDATE|DELETE|NOOP)\b(.*)$", re.I)
_ID = re.compile(r"^\s*[\[#]?\s*(\d{1,6})\s*\]?(?=\s|$|[:.,;-])[:.,;-]?(.*)$")
_CLOSE = re.compile(r"\s*</op>.*$", re.I)
MAX_TEXT = 300


def _clean_text(text: str) -> str:
    text = _CLOSE.sub("", text)
    text = " ".join(text.split()).strip()
    if text[:1] in (":", "-"):
        text = text[1:].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text[:MAX_TEXT]


def parse_op(text: str) -> Op:
    """Parse the manager's output (see the module docstring). Never raises."""
    if not isinstance(text, str):
        return Op("NOOP", status="unparseable")
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            return Op("NOOP", status="unparseable")  # the first non-empty line must be the operation
        kind, rest = m.group(1).upper(), _CLOSE.sub("", m.group(2))
        if kind == "NOOP":
            return Op("NOOP")
        if kind == "ADD":
            return Op("ADD", text=_clean_text(rest))
        idm = _ID.match(rest)
        if not idm:
            return Op("NOOP", status="unparseable")
        ident = int(idm.group(1))
        if kind == "DELETE":
            return Op("DELETE", ident)
        return Op("UPDATE", ident, _clean_text(idm.group(2)))
    return Op("NOOP", status="unparseable")


@dataclass(frozen=True)
class Entry:
    id: int
    text: str
    turn: int = -1  # index of the dialogue turn that wrote it last (recency)


SYNONYMS = {  # query term -> extra terms (stemmed forms, see memory/text.py)
    "job": ("work", "job", "start", "quit"),
    "work": ("work", "job", "start"),
    "live": ("live", "moved", "left"),
    "pet": ("pet", "dog", "cat", "parrot", "rabbit", "adopt", "named", "call"),
    "name": ("named", "call"),
    "trip": ("trip", "book", "plan"),
    "month": ("january", "february", "march", "april", "may", "june", "july", "august", "september",
              "october", "november", "december"),
}


class MemoryBank:
    """Entries with integer ids (never reused). ``apply`` executes an :class:`Op`."""

    def __init__(self, entries=(), next_id: int | None = None):
        self.entries: dict[int, Entry] = {e.id: e for e in entries}
        self.next_id = next_id if next_id is not None else (max(self.entries, default=0) + 1)

    def copy(self) -> "MemoryBank":
        return MemoryBank(self.entries.values(), self.next_id)

    def __len__(self) -> int:
        return len(self.entries)

    def texts(self) -> list[str]:
        return [e.text for e in self.entries.values()]

    def add(self, text: str, turn: int = -1) -> int:
        i = self.next_id
        self.entries[i] = Entry(i, text, turn)
        self.next_id += 1
        return i

    def update(self, ident: int, text: str, turn: int = -1) -> None:
        if ident not in self.entries:
            raise KeyError(ident)
        self.entries[ident] = Entry(ident, text, turn)

    def delete(self, ident: int) -> None:
        if ident not in self.entries:
            raise KeyError(ident)
        del self.entries[ident]

    def apply(self, op: Op, turn_text: str = "", turn: int = -1) -> Op:
        """Execute ``op``; returns the op actually applied (an invalid or unparseable one -> NOOP with its
        status). An empty ADD/UPDATE text stores ``turn_text``."""
        if op.status != "ok":
            return Op("NOOP", status=op.status)
        text = op.text or turn_text
        if op.kind == "ADD":
            if not text:
                return Op("NOOP", status="invalid")
            self.add(text, turn)
            return op
        if op.kind in ("UPDATE", "DELETE") and op.id not in self.entries:
            return Op("NOOP", status="invalid")
        if op.kind == "UPDATE":
            if not text:
                return Op("NOOP", status="invalid")
            self.update(op.id, text, turn)
        elif op.kind == "DELETE":
            self.delete(op.id)
        return op

    # retrieval ------------------------------------------------------------------------------------
    def retrieve(self, query: str, k: int = 5) -> list[Entry]:
        """Top-``k`` entries by BM25 of the (synonym-expanded) query; entries with score 0 are left out."""
        if not self.entries or k <= 0:
            return []
        q = list(dict.fromkeys(terms(query)))
        for t in list(q):
            q += [s for s in SYNONYMS.get(t, ()) if s not in q]
        docs = [(e, Counter(terms(e.text))) for e in self.entries.values()]
        n = len(docs)
        avgdl = sum(sum(c.values()) for _, c in docs) / n or 1.0
        df = Counter(t for _, c in docs for t in c)
        scored = []
        for e, c in docs:
            dl = sum(c.values())
            s = 0.0
            for t in q:
                tf = c.get(t, 0)
                if tf:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
            if s > 0:
                scored.append((s, e.turn, e.id, e))
        scored.sort(key=lambda x: (-x[0], -x[1], -x[2]))
        return [x[3] for x in scored[:k]]


def render_entries(entries) -> str:
    return "\n".join(f"[{e.id}] {e.text}" for e in entries) if entries else "(none)"
