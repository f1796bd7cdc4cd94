"""Sets of works chosen by who wrote them or how you tagged them: the author and tag filters that
the CLI (``--author``, ``--tag``) and the Search page share. The result is a list of keys for
``SearchFilters(keys=...)`` or for filtering a list."""
from __future__ import annotations

from papers.annotations import AnnotationError, AnnotationStore
from papers.authors import UnknownAuthorError, works_by


def restrict_keys(catalog, authors: list[str] | str | None = None, tags: list[str] | None = None,
                  store: AnnotationStore | None = None) -> list[str] | None:
    """Keys written by any of ``authors`` AND tagged with any of ``tags``; None when neither is given.

    Raises ``UnknownAuthorError`` / ``AnnotationError`` (with close matches) for a name or tag that
    matches nothing."""
    if isinstance(authors, str):
        authors = [authors]
    authors = [a for a in (authors or []) if a.strip()]
    tags = [t for t in (tags or []) if t.strip()]
    allowed: list[str] | None = None
    if authors:
        allowed = works_by(catalog, authors)
    if tags:
        tagged = set((store or AnnotationStore()).keys_with_tags(tags))
        allowed = [k for k in (allowed if allowed is not None else catalog.works) if k in tagged]
    return allowed


def restrict_keys_or_problem(catalog, authors, tags, store: AnnotationStore | None = None) -> tuple[list[str] | None, str | None]:
    """``restrict_keys`` for a page: bad input becomes a message (and no works), never an exception."""
    try:
        return restrict_keys(catalog, authors, tags, store), None
    except (UnknownAuthorError, AnnotationError) as e:
        return [], str(e)


def tag_counts(store: AnnotationStore | None = None) -> dict[str, int]:
    return (store or AnnotationStore()).all_tags()
