"""The project's documentation (``docs/*.md`` of the checkout) inside the app: which names are documents, a
document's Markdown with its links to other documents kept inside the app, and plain "docs/NAME.md" paths in
the app's own text turned into links to them.

    link_doc_paths("How often it is right: docs/axis_inference.md.")
    # "How often it is right: [docs/axis_inference.md](docs?path=axis_inference.md)."
"""
from __future__ import annotations

import re
from pathlib import Path

from app import routes

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
#: a document's name below docs/: path segments of letters, digits, '_', '-' and '.', ending in .md (no '..')
DOC_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*\.md")
DOC_PATH_IN_TEXT = re.compile(r"(?<![\w/\[(])docs/(" + DOC_NAME.pattern + r")")
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


def link_doc_paths(markdown: str) -> str:
    """``markdown`` with each bare ``docs/NAME.md`` that names a document made a link to it in the app (paths of
    missing documents, and paths already inside a link, stay as written)."""
    def link(m: re.Match) -> str:
        return f"[{m.group(0)}]({routes.doc(m.group(1)).url})" if doc_file(m.group(1)) else m.group(0)

    return DOC_PATH_IN_TEXT.sub(link, markdown)


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
