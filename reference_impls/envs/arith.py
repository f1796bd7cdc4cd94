"""A safe arithmetic evaluator for the calculator tool: a recursive-descent parser, never ``eval``.

Grammar (whitespace ignored)::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/") unary)*
    unary   := ("-" | "+") unary | primary
    primary := NUMBER | "(" expr ")"
    NUMBER  := digits ["." digits] | "." digits

Values are exact ``fractions.Fraction`` so ``0.1+0.2`` is ``0.3`` and answers compare exactly.
Every way an input can be bad raises :class:`CalcError` (and only that):

- more than ``MAX_EXPR_CHARS`` characters, any character outside ``0-9 . + - * / ( ) space``
  (so ``__import__('os')`` is refused before parsing starts);
- nesting (parentheses and unary signs) deeper than ``MAX_DEPTH``;
- a literal with more than ``MAX_DIGITS`` digits, or any intermediate value with
  ``|v| > MAX_MAGNITUDE``, or a denominator above ``MAX_DENOMINATOR`` (keeps big-integer work tiny,
  so every call finishes in well under a millisecond);
- division by zero, syntax errors.
"""
from __future__ import annotations

from fractions import Fraction

MAX_EXPR_CHARS = 200
MAX_DEPTH = 32
MAX_DIGITS = 15
MAX_MAGNITUDE = Fraction(10**12)
MAX_DENOMINATOR = 10**12
_ALLOWED = set("0123456789.+-*/() \t")


class CalcError(ValueError):
    """The only exception :func:`evaluate` raises: the expression was refused or invalid."""


def _tokenize(text: str) -> list[str]:
    if len(text) > MAX_EXPR_CHARS:
        raise CalcError(f"expression longer than {MAX_EXPR_CHARS} characters")
    bad = set(text) - _ALLOWED
    if bad:
        raise CalcError(f"characters not allowed: {''.join(sorted(bad))!r}")
    tokens: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in " \t":
            i += 1
        elif ch in "+-*/()":
            tokens.append(ch)
            i += 1
        else:  # a number: digits with at most one dot
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] == "."):
                j += 1
            literal = text[i:j]
            if literal.count(".") > 1 or literal == ".":
                raise CalcError(f"bad number {literal!r}")
            if sum(c.isdigit() for c in literal) > MAX_DIGITS:
                raise CalcError(f"number {literal[:20]!r}... has more than {MAX_DIGITS} digits")
            tokens.append(literal)
            i = j
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]):
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise CalcError("unexpected end of expression")
        self.pos += 1
        return tok

    @staticmethod
    def check(value: Fraction) -> Fraction:
        if abs(value) > MAX_MAGNITUDE:
            raise CalcError("value too large")
        if value.denominator > MAX_DENOMINATOR:
            raise CalcError("value too precise")
        return value

    def expr(self) -> Fraction:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.term()
            value = self.check(value + rhs if op == "+" else value - rhs)
        return value

    def term(self) -> Fraction:
        value = self.unary()
        while self.peek() in ("*", "/"):
            op = self.take()
            rhs = self.unary()
            if op == "*":
                value = self.check(value * rhs)
            else:
                if rhs == 0:
                    raise CalcError("division by zero")
                value = self.check(value / rhs)
        return value

    def unary(self) -> Fraction:
        if self.peek() in ("-", "+"):
            op = self.take()
            self.enter()
            value = self.unary()
            self.depth -= 1
            return -value if op == "-" else value
        return self.primary()

    def primary(self) -> Fraction:
        tok = self.take()
        if tok == "(":
            self.enter()
            value = self.expr()
            if self.take() != ")":
                raise CalcError("expected ')'")
            self.depth -= 1
            return value
        if tok[0].isdigit() or tok[0] == ".":
            return self.check(Fraction(tok))
        raise CalcError(f"unexpected {tok!r}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalcError(f"nesting deeper than {MAX_DEPTH}")


def evaluate(text: str) -> Fraction:
    """Evaluate an arithmetic expression exactly; raise :class:`CalcError` on anything else."""
    if not isinstance(text, str):
        raise CalcError("expression must be a string")
    parser = _Parser(_tokenize(text))
    if not parser.tokens:
        raise CalcError("empty expression")
    value = parser.expr()
    if parser.peek() is not None:
        raise CalcError(f"unexpected {parser.peek()!r}")
    return value


def format_number(value: Fraction) -> str:
    """Integers print as ``12``; other values as a decimal rounded to 6 places (``2.5``, ``0.333333``)."""
    if value.denominator == 1:
        return str(value.numerator)
    text = f"{float(value):.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def parse_number(text: str) -> Fraction | None:
    """Parse a final answer such as ``"204"``, ``" -3.50 "`` or ``"1,204"``; None when not a number."""
    cleaned = text.strip().replace(",", "").rstrip(".")
    if not cleaned or len(cleaned) > 40:
        return None
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None
