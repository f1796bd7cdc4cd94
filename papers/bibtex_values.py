"""BibTeX field values as BibTeX itself reads them, in time linear in their length.

A raw value (as the file holds it) is one or more parts joined by ``#``: ``{braced}``, ``"quoted"``, a
number, or the name of an ``@string`` (case-insensitive; ``jan`` ... ``dec`` are predefined, as in
BibTeX's standard styles). ``resolve`` joins the parts, with every ``@string`` resolved (an ``@string`` may
use the ones defined before it), and refuses a name that is not defined and a result longer than its
limit, before any further work on it. ``unwrap`` removes the braces that enclose a whole value
(``{{Title}}`` -> ``Title``) in one pass.

A brace right after a backslash (``\\{``) is text, not a group: the parser that split the file
(bibtexparser) reads it so, and so does this module.
"""
from __future__ import annotations

import re

MONTHS = {name[:3]: name for name in ("january", "february", "march", "april", "may", "june", "july", "august",
                                      "september", "october", "november", "december")}
MONTH_MACROS = {short: full.capitalize() for short, full in MONTHS.items()}
_NAME = re.compile(r"[^\s\"#%'(),={}0-9][^\s\"#%'(),={}]*")
_NUMBER = re.compile(r"[0-9]+")
#: how much longer than its limit a value may be as written, before it is refused unread
RAW_FACTOR = 20


class BibValueError(ValueError):
    """A value that cannot be read; the message names the field (or ``@string``) and what is wrong."""


def _is_brace(text: str, i: int) -> bool:
    return text[i] in "{}" and (i == 0 or text[i - 1] != "\\")


def split_parts(raw: str) -> list[str]:
    """The ``#``-joined parts of a raw value (``"a" # {b} # name`` -> ``['"a"', '{b}', 'name']``), stripped;
    a ``#`` inside braces or quotes is text."""
    parts, start, depth, quoted = [], 0, 0, False
    for i, ch in enumerate(raw):
        if _is_brace(raw, i):
            depth += 1 if ch == "{" else -1
        elif ch == '"' and depth == 0:
            quoted = not quoted
        elif ch == "#" and depth == 0 and not quoted:
            parts.append(raw[start:i].strip())
            start = i + 1
    parts.append(raw[start:].strip())
    return parts


def resolve(raw: str, macros: dict[str, str], what: str, allowed: int) -> str:
    """The text of raw value ``raw`` (``what`` names it in messages: "field 'title'", "@string 'x'"): each part's
    delimiters removed, ``@string`` names replaced by their text (``macros``, keyed in lower case), the parts
    joined. ``BibValueError`` for an undefined name, a part that is none of the four kinds, or a value too
    long: more than ``RAW_FACTOR`` x ``allowed`` characters as written (braces and escapes included; the
    longest LaTeX escape, ``\\textasciicircum{}``, is 18 characters for one) or once its ``@string`` names are
    resolved (checked after each part, so nested ``@string`` cannot blow it up). ``allowed`` is what the
    field may hold once read; the caller checks that exactly."""
    limit = RAW_FACTOR * allowed
    if len(raw) > limit:
        inner = raw[1:-1] if raw[:1] + raw[-1:] in ("{}", '""') else raw
        raise BibValueError(f"{what} is {len(inner):,} characters long; at most {allowed:,} are allowed")
    parts = split_parts(raw)
    if len(parts) == 1 and parts[0][:1] != '"' and not _NAME.fullmatch(parts[0]):
        return parts[0]  # one braced value (its braces go through ``unwrap``), a number, or text as it stands
    out: list[str] = []
    size = 0
    for part in parts:
        if len(part) >= 2 and part[0] == "{" and part[-1] == "}":
            text = part[1:-1]
        elif len(part) >= 2 and part[0] == '"' and part[-1] == '"':
            text = part[1:-1]
        elif _NUMBER.fullmatch(part):
            text = part
        elif _NAME.fullmatch(part):
            name = part.lower()
            if name not in macros:
                raise BibValueError(f"{what} uses @string '{part[:40]}', which is not defined")
            text = macros[name]
        else:
            raise BibValueError(f"{what}: cannot read '{part[:40]}' (expected {{text}}, \"text\", a number or an "
                                "@string name, joined by #)")
        size += len(text)
        if size > limit:
            raise BibValueError(f"{what} is over {limit:,} characters long once its @strings are resolved; at most "
                                f"{allowed:,} are allowed")
        out.append(text)
    return "".join(out)


def unwrap(value: str) -> str:
    """``value`` without the braces that enclose all of it, however deep (``{{{T}}}`` -> ``T``; ``{A} and {B}``
    stays). One pass to pair the braces, one to count the enclosing pairs: linear in ``len(value)``."""
    n = len(value)
    if n < 2 or value[0] != "{" or value[-1] != "}":
        return value
    opens: list[int] = []
    partner: dict[int, int] = {}
    for i, ch in enumerate(value):
        if not _is_brace(value, i):
            continue
        if ch == "{":
            opens.append(i)
        elif opens:
            partner[opens.pop()] = i
        else:
            break  # a closing brace with no opening one: nothing after it pairs with the first brace
    k = 0
    while k < n - 1 - k and value[k] == "{" and partner.get(k) == n - 1 - k:
        k += 1
    return value[k:n - k]
