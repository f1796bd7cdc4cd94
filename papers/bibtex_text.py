"""Text as BibTeX field values: plain ASCII LaTeX that pdfLaTeX can typeset, that no imported value can break
out of, and that keeps a name's case under a re-casing style; and back again.

Three guarantees for every value ``latex_text`` writes (tests/test_formats.py checks each on the whole catalog
and on hostile input):

* **ASCII only.** Accented letters become accent commands in a brace group (``é`` -> ``{\\'e}``, ``ł`` ->
  ``{\\l}``), Greek letters and superscripts math in a brace group (``π0`` -> ``{$\\pi_0$}``, ``τ²`` ->
  ``{$\\tau^2$}``), dashes and quotes their LaTeX commands. A character without a LaTeX spelling here
  (a user's imported CJK title, say) is written as its ASCII compatibility form or "?", never as
  something pdfLaTeX cannot read; the shipped catalog has none (``unmapped_characters``, tested).
* **Balanced braces, nothing to follow.** The value's own ``{``, ``}`` and ``\\`` become ``\\textbraceleft{}``,
  ``\\textbraceright{}`` and ``\\textbackslash{}`` (BibTeX counts ``\\{`` as a brace, so escaping with a
  backslash is not enough), the other LaTeX specials their escapes; so a value can never close its field,
  open a new entry or run a command such as ``\\input``. Line breaks and control characters become spaces,
  so an ``@`` can never start a line.
* **Case kept only where it must be** (``bibtex_title``, the rule in its docstring).

``latex_to_text`` undoes all of this (and reads the common hand-written forms, ``\\'{e}``, ``\\"u``).
"""
from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

_SPECIALS = {"\\": r"\textbackslash{}", "{": r"\textbraceleft{}", "}": r"\textbraceright{}", "&": r"\&",
             "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_ACCENTS = {"\u0301": "'", "\u0300": "`", "\u0302": "^", "\u0308": '"', "\u0303": "~", "\u0304": "=", "\u0307": ".",
            "\u0327": "c", "\u030c": "v", "\u0328": "k", "\u030a": "r", "\u0306": "u", "\u030b": "H", "\u0323": "d"}
_LETTERS = {"ł": r"\l", "Ł": r"\L", "ß": r"\ss", "ø": r"\o", "Ø": r"\O", "æ": r"\ae", "Æ": r"\AE", "œ": r"\oe",
            "Œ": r"\OE", "ı": r"\i", "å": r"\aa", "Å": r"\AA"}
_SYMBOLS = {"\u2014": r"\textemdash{}", "\u2013": r"\textendash{}", "\u2018": r"\textquoteleft{}",
            "\u2019": r"\textquoteright{}", "\u201c": r"\textquotedblleft{}", "\u201d": r"\textquotedblright{}",
            "\u2026": r"\ldots{}", "\u00a0": "~", "\u00d7": r"$\times$", "\u2192": r"$\rightarrow$",
            "\u00b7": r"$\cdot$", "\u2212": r"$-$", "\u2264": r"$\leq$", "\u2265": r"$\geq$"}
_GREEK = {"α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
          "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi", "π": "pi",
          "ρ": "rho", "σ": "sigma", "τ": "tau", "υ": "upsilon", "φ": "varphi", "ϕ": "phi", "χ": "chi", "ψ": "psi",
          "ω": "omega", "Γ": "Gamma", "Δ": "Delta", "Θ": "Theta", "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Σ": "Sigma",
          "Φ": "Phi", "Ψ": "Psi", "Ω": "Omega"}
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789"))
# a Greek letter with the digits after it (π0 -> pi sub 0, τ² -> tau sup 2), or a run of superscript digits
_MATH_RUN = re.compile("([" + "".join(_GREEK) + "])([0-9]+|[" + "".join(_SUPERSCRIPTS) + "]+)?|([" + "".join(_SUPERSCRIPTS) + "]+)")


class UnmappedCharacter(ValueError):
    """A character ``latex_text`` has no pdfLaTeX-safe spelling for."""


def _script(digits: str) -> str:
    return digits if len(digits) == 1 else "{" + digits + "}"


def _math(m: re.Match) -> str:
    greek, tail, sup_only = m.groups()
    if sup_only:
        return "{$^" + _script("".join(_SUPERSCRIPTS[c] for c in sup_only)) + "$}"
    body = "\\" + _GREEK[greek]
    if tail and tail[0] in _SUPERSCRIPTS:
        body += "^" + _script("".join(_SUPERSCRIPTS[c] for c in tail))
    elif tail:
        body += "_" + _script(tail)
    return "{$" + body + "$}"


def _char(ch: str) -> str:
    if ch in _SPECIALS:
        return _SPECIALS[ch]
    if ch.isascii():
        return ch if ch.isprintable() else " "
    if ch in _SYMBOLS:
        return _SYMBOLS[ch]
    if ch in _LETTERS:
        return "{" + _LETTERS[ch] + "}"
    if not ch.isprintable() or ch.isspace():
        return " "
    base, *marks = unicodedata.normalize("NFD", ch)
    if marks and base.isascii() and all(m in _ACCENTS for m in marks):
        out = "\\i" if base == "i" else "\\j" if base == "j" else base
        for m in marks:
            cmd = _ACCENTS[m]
            out = f"\\{cmd}{out}" if not cmd.isalpha() and len(out) == 1 else f"\\{cmd}{{{out}}}"
        return "{" + out + "}"
    raise UnmappedCharacter(f"no LaTeX spelling for {ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, '?')})")


def _char_or_fallback(ch: str) -> str:
    """``_char``, or for a character it has no spelling for, its compatibility decomposition's ASCII
    letters ("ﬁ" -> "fi") or "?": an export never fails on a user's imported text, and the shipped
    catalog has no such character (tested with ``unmapped_characters``)."""
    try:
        return _char(ch)
    except UnmappedCharacter:
        ascii_form = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii")
        return "".join(_char(c) for c in ascii_form) or "?"


def latex_text(text: str) -> str:
    """``text`` as an ASCII LaTeX field value with balanced braces and no line breaks (module doc)."""
    out, pos = [], 0
    for m in _MATH_RUN.finditer(text):
        out += [_char_or_fallback(c) for c in text[pos:m.start()]]
        out.append(_math(m))
        pos = m.end()
    out += [_char_or_fallback(c) for c in text[pos:]]
    return "".join(out)


def unmapped_characters(text: str) -> set[str]:
    """The characters of ``text`` that ``latex_text`` would refuse."""
    bad = set()
    for ch in set(text):
        try:
            _char(ch)
        except UnmappedCharacter:
            if not _MATH_RUN.fullmatch(ch):
                bad.add(ch)
    return bad


# -- titles: which words keep their case -----------------------------------------------------------
PROPER_NOUNS = frozenset(
    "Python Dafny Lean Coq Isabelle Verilog Minecraft Atari Android Windows Linux Wikipedia Markov Bellman "
    "Monte Carlo Gemini Claude Qwen Llama Kimi Mistral Google Anthropic Doubao Grok Perplexity Manus Codex "
    "Mathlib Chinese English Bayesian Nash Pareto Gaussian Bradley Terry Shapley Boltzmann Hessian Go Sokoban "
    "Tetris Overcooked Hanabi Diplomacy Pokemon".split())
"""Capitalised words that are names wherever they stand in a title (a small explicit list: a word a
style could lower-case without harm, "Transformer", "Web", "Open", "Deep", "Research", is not one)."""
_TRAIL = "\"'\u201d\u2019:;,.?!"
_LEAD = "\"'\u201c\u2018"


def _split_word(word: str) -> tuple[str, str, str]:
    """(leading punctuation, core, trailing punctuation); parentheses stay in the core when they pair
    inside it ("GPT-4V(ision)") and go to the edges when they enclose it ("(VisTA):")."""
    core = word.lstrip(_LEAD)
    lead = word[: len(word) - len(core)]
    stripped = core.rstrip(_TRAIL)
    trail = core[len(stripped):]
    core = stripped
    while core.endswith(")") and core.count(")") > core.count("("):
        core, trail = core[:-1], ")" + trail
    while core.startswith("(") and core.count("(") > core.count(")"):
        core, lead = core[1:], lead + "("
    if core.startswith("(") and core.endswith(")") and "(" not in core[1:-1]:
        core, lead, trail = core[1:-1], lead + "(", ")" + trail
    return lead, core, trail


def _keeps_case(part: str) -> bool:
    """A word part whose capitals carry meaning: a capital after its first character (LLM, LLaMA, DigiRL,
    LLMs, OS, 4V) or a capital beside a digit (R1, V3)."""
    letters = part[1:]
    if any(ch.isupper() for ch in letters):
        return True
    return part[:1].isupper() and any(ch.isdigit() for ch in part)


def _protect_parts(core: str) -> str:
    """Brace each run of hyphen/slash parts that keeps its case; the others stay re-casable
    ("LLM-Based" -> "{LLM}-Based", "GPT-4V(ision)" -> "{GPT-4V(ision)}", "UI-TARS-2" -> "{UI-TARS}-2")."""
    pieces = re.split(r"([-/])", core)  # part, separator, part, ...
    parts, seps = pieces[0::2], pieces[1::2]
    keep = [_keeps_case(p) for p in parts]
    out, i = [], 0
    while i < len(parts):
        j = i
        if keep[i]:
            while j + 1 < len(parts) and keep[j + 1]:
                j += 1
            out.append("{" + latex_text("".join(pieces[2 * i: 2 * j + 1])) + "}")
        else:
            out.append(latex_text(parts[i]))
        if j < len(seps):
            out.append(latex_text(seps[j]))
        i = j + 1
    return "".join(out)


def bibtex_title(title: str, names: tuple[str, ...] = ()) -> str:
    """The BibTeX ``title`` value, with braces only where a re-casing style would break the title.

    The rule, word by word (words split at spaces; leading quotes and trailing punctuation stay outside):

    1. A word that is the work's own name or alias (``names``, in any case: "Search-R1", "τ²-Bench") or in
       ``PROPER_NOUNS`` (Python, Dafny, Atari, ...) is braced whole, as the title spells it.
    2. Otherwise each hyphen- or slash-separated part with a capital after its first character or a
       capital beside a digit is braced, adjacent such parts together: acronyms and mixed-case names
       (``{LLM}s`` is not needed: ``{LLMs}``), ``{LLM}-Based``, ``{GPT-4V(ision)}``, ``{R1}``.
    3. Nothing else: an ordinary capitalised word ("Transformer", "Web", "Open Deep Research") is left to
       the style, and the first word keeps its capital under every style anyway.

    Characters outside ASCII are written as LaTeX in their own brace group (``latex_text``), which also
    keeps a style from re-casing them.
    """
    own = {n.casefold() for n in names if n}
    out = []
    for word in title.split():
        lead, core, trail = _split_word(word)
        if not core:
            out.append(latex_text(word))
            continue
        if core.casefold() in own or core in PROPER_NOUNS:
            text = "{" + latex_text(core) + "}"
        else:
            text = _protect_parts(core)
        out.append(latex_text(lead) + text + latex_text(trail))
    return " ".join(out)


# -- urls -------------------------------------------------------------------------------------------
_URL_SAFE = "/:?&=+,;@!*'()[]-._~%#"


def bibtex_url(url: str) -> str:
    """A URL as a BibTeX ``url`` value: whitespace, braces, backslashes, quotes and non-ASCII characters
    percent-encoded, so the value is plain ASCII with no brace or command of its own; ``%`` and ``#``
    are escaped for LaTeX (the url package and biblatex read ``\\%``/``\\#`` as the characters)."""
    encoded = quote(url.strip(), safe=_URL_SAFE)
    return encoded.replace("%", r"\%").replace("#", r"\#")


_DOI = re.compile(r"10\.\d{4,9}/[-._;()/:A-Za-z0-9<>]+")


def bibtex_doi(doi: str) -> str:
    """A DOI in the character set DOIs are registered with, or ``""`` for anything else."""
    return doi if _DOI.fullmatch(doi) else ""


# -- and back ---------------------------------------------------------------------------------------
_REVERSE_GREEK = {v: k for k, v in _GREEK.items()}
_REVERSE_SYMBOLS = {v.rstrip("{}").lstrip("\\"): k for k, v in _SYMBOLS.items() if v.startswith("\\")}
_REVERSE_SPECIALS = {v.rstrip("{}").lstrip("\\"): k for k, v in _SPECIALS.items()}
_REVERSE_LETTERS = {v.lstrip("\\"): k for k, v in _LETTERS.items()}
_REVERSE_ACCENTS = {v: k for k, v in _ACCENTS.items()}
_TO_SUPERSCRIPT = {v: k for k, v in _SUPERSCRIPTS.items()}
_MATH_BODY = re.compile(r"^\\([A-Za-z]+)(?:_\{?(\d+)\}?|\^\{?(\d+)\}?)?$|^\^\{?(\d+)\}?$")
_MATH_SYMBOLS = {r"\times": "×", r"\rightarrow": "→", r"\cdot": "·", "-": "−", r"\leq": "≤", r"\geq": "≥"}


def _math_to_text(body: str) -> str | None:
    if body in _MATH_SYMBOLS:
        return _MATH_SYMBOLS[body]
    m = _MATH_BODY.match(body)
    if not m:
        return None
    name, sub, sup, sup_only = m.groups()
    if sup_only:
        return "".join(_TO_SUPERSCRIPT[d] for d in sup_only)
    if name not in _REVERSE_GREEK:
        return None
    return _REVERSE_GREEK[name] + (sub or "") + ("".join(_TO_SUPERSCRIPT[d] for d in sup) if sup else "")


def latex_to_text(text: str, drop_groups: bool = True) -> str:
    """Plain Unicode text from a BibTeX value written by ``latex_text`` (or by hand in the common forms):
    escapes, accent commands, special letters, the math runs it writes; bare grouping braces dropped
    (kept with ``drop_groups=False``). One left-to-right pass, linear in the length."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt.isalpha():
                j = i + 1
                while j < n and text[j].isalpha():
                    j += 1
                name = text[i + 1:j]
                if text.startswith("{}", j):
                    j += 2
                if name in _REVERSE_SPECIALS:
                    out.append(_REVERSE_SPECIALS[name])
                elif name in _REVERSE_SYMBOLS:
                    out.append(_REVERSE_SYMBOLS[name])
                elif name in _REVERSE_LETTERS:
                    out.append(_REVERSE_LETTERS[name])
                elif name == "i" or name == "j":
                    out.append(name)
                elif name in _REVERSE_ACCENTS and len(name) == 1:
                    # \c{c}, \v{s}, \k{a}, \r{a}: the letter follows in braces or after a space
                    k = j
                    while k < n and text[k] == " ":
                        k += 1
                    base, k = _accent_base(text, k)
                    out.append(unicodedata.normalize("NFC", base + _REVERSE_ACCENTS[name]) if base else "")
                    j = k
                else:
                    out.append(text[i:j])
                i = j
                continue
            if nxt in _REVERSE_ACCENTS:  # \'e, \'{e}, \"\i
                base, k = _accent_base(text, i + 2)
                out.append(unicodedata.normalize("NFC", base + _REVERSE_ACCENTS[nxt]) if base else nxt)
                i = k
                continue
            out.append(nxt)  # \& \% \$ \# \_ \{ \} and any other escaped character
            i += 2
            continue
        if ch == "$":
            end = text.find("$", i + 1)
            if end > i:
                decoded = _math_to_text(text[i + 1:end])
                if decoded is not None:
                    out.append(decoded)
                    i = end + 1
                    continue
            out.append(ch)
            i += 1
            continue
        if ch in "{}":
            if not drop_groups:
                out.append(ch)
            i += 1
            continue
        if ch == "~":  # LaTeX's tie: a space that does not break (J.~Doe)
            out.append(" ")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _accent_base(text: str, k: int) -> tuple[str, int]:
    """The letter an accent command applies to, at ``k`` (``e``, ``{e}``, ``\\i``, ``{\\i}``), and the
    position after it."""
    braced = text.startswith("{", k)
    if braced:
        k += 1
    if text.startswith("\\i", k) or text.startswith("\\j", k):
        base, k = text[k + 1], k + 2
    elif k < len(text):
        base, k = text[k], k + 1
    else:
        return "", k
    if braced and text.startswith("}", k):
        k += 1
    return base, k
