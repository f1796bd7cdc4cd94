"""The project's documentation (``docs/*.md`` of the checkout) and source files inside the app: which names are
documents, a document's Markdown with its links to other documents kept inside the app, which repository
paths are source files the app shows (``reference_impls/rollout.py``), and plain paths of either in the
app's text turned into links to them.

    link_doc_paths("How often it is right: docs/axis_inference.md.")
    # "How often it is right: [docs/axis_inference.md](docs?path=axis_inference.md)."
    link_doc_paths("The loop: reference\\_impls/rollout.py; `docs/compare.md` stays code.")
    # "The loop: [reference\\_impls/rollout.py](source?path=reference_impls%2Frollout.py); `docs/compare.md` stays code."
"""
from __future__ import annotations

import re
from pathlib import Path

from app import routes
from app.presentation.source import ROOT, SOURCE_DIRS, source_file

DOCS_DIR = ROOT / "docs"
#: a document's name below docs/: path segments of letters, digits, '_', '-' and '.', ending in .md (no '..')
DOC_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*\.md")
# a path as it stands in Markdown: '_' may be escaped ("docs/results\_memory.md", what md_escape writes); not
# part of a longer path or word, not followed by more of a name ("docs/a.mdx", "lab/x.py/")
_SEGMENT = r"\\?[A-Za-z0-9_-](?:\\?[A-Za-z0-9_.-])*"
PATH_IN_TEXT = re.compile(r"(?<![\w/.\\-])(?:docs|" + "|".join(SOURCE_DIRS).replace("_", r"\\?_")
                          + r")(?:/" + _SEGMENT + r")+?\.(?:md|py|yaml)(?![\w/-])")
# what a path inside it is never linked in: a fenced code block, a code span (any run of backticks up to the
# same run), a link or image ``[text](target)`` whole, an autolink or HTML tag ``<...>``, and an indented
# code block's line
_PROTECTED = re.compile(
    r"(?ms)^[ \t]{0,3}(```|~~~).*?(?:^[ \t]{0,3}\1[^\n]*$|\Z)"
    r"|(?<!`)(`+)(?!`).+?(?<!`)\2(?!`)"
    r"|!?\[(?:\\.|[^\]\\])*\]\([^)\s]*(?:\s+\"[^\"]*\")?\)"
    r"|<[^<>\n]+>"
    r"|^(?: {4}|\t)[^\n]*$")
RELATIVE_MD_LINK = re.compile(r"\]\((?!https?:|#|/)(" + DOC_NAME.pattern + r")(#[\w-]*)?\)")


def doc_file(name: str) -> Path | None:
    """The file of document ``name`` (``security.md``, ``redesign/fingerprint.md``), or None when ``name`` is not
    a document of docs/ (not a .md name, a '..' segment, outside the folder, missing)."""
    if not isinstance(name, str) or not DOC_NAME.fullmatch(name) or ".." in name.split("/"):
        return None
    path = (DOCS_DIR / name).resolve()
    return path if path.is_file() and DOCS_DIR.resolve() in path.parents else None


def doc_names() -> list[str]:
    """Every document of docs/, as names for ``routes.doc``."""
    if not DOCS_DIR.is_dir():
        return []
    return sorted(str(p.relative_to(DOCS_DIR)) for p in DOCS_DIR.rglob("*.md"))


def path_link(path: str) -> routes.Link | None:
    """The app's page for a repository path as a text cites it: ``docs/NAME.md`` -> the document,
    a source path -> its source; None when it names neither."""
    if path.startswith("docs/"):
        return routes.doc(path[len("docs/"):]) if doc_file(path[len("docs/"):]) else None
    return routes.source(path) if source_file(path) else None


def link_doc_paths(markdown: str) -> str:
    """``markdown`` with each plain documentation path (``docs/NAME.md``) or source path
    (``reference_impls/rollout.py``, see ``SOURCE_DIRS``) that names a file of this checkout made a link to its
    page in the app. A path inside a code span or block, a link, an autolink or an HTML tag stays as written, and
    so do paths of missing files. Escaped Markdown works too: ``docs/results\\_memory.md`` (md_escape's output)
    keeps its text and links to ``results_memory.md``."""
    def link(m: re.Match) -> str:
        target = path_link(m.group(0).replace("\\", ""))
        return f"[{m.group(0)}]({target.url})" if target else m.group(0)

    out, last = [], 0
    for protected in _PROTECTED.finditer(markdown):
        out.append(PATH_IN_TEXT.sub(link, markdown[last:protected.start()]))
        out.append(protected.group(0))
        last = protected.end()
    out.append(PATH_IN_TEXT.sub(link, markdown[last:]))
    return "".join(out)


def doc_markdown(name: str) -> str:
    """Document ``name``'s Markdown, its relative links to other documents pointing at their pages in the app.
    Raises KeyError for a name that is not a document (``doc_file``)."""
    path = doc_file(name)
    if path is None:
        raise KeyError(f"no document '{name}' in docs/")
    folder = str(Path(name).parent)

    def link(m: re.Match) -> str:
        target = m.group(1) if folder == "." else f"{folder}/{m.group(1)}"
        return f"]({routes.doc(target).url}{m.group(2) or ''})" if doc_file(target) else m.group(0)

    return RELATIVE_MD_LINK.sub(link, path.read_text(encoding="utf-8"))
