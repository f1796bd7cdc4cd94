"""Every page of the explorer, defined once: its URL path, script, title, icon, section, and the links to it.

Streamlit-free, so the presentation code (``app.presentation``: table link columns), the Streamlit
helpers (``app.ui``: page links, chips, ``goto``), the entry script's navigation and the tests all
take a page's route from here::

    routes.work("search-r1").url            # "work?key=search-r1"
    routes.node("memory")                   # Link(page="taxonomy", query={"node": "memory"})
    routes.search(q="memory", kind="method")
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode


@dataclass(frozen=True)
class Page:
    path: str                 # the URL path (/<path>?...), also the page's name in links
    script: str               # its script, relative to app/streamlit_app.py
    title: str
    icon: str
    section: str              # the navigation section it is listed under
    param: str | None = None  # the query parameter that names what the page shows (work?key=...)
    default: bool = False
    hidden: bool = False      # reached from links only, not listed in the navigation


PAGES: dict[str, Page] = {p.path: p for p in (
    Page("overview", "views/overview.py", "Overview", ":material/home:", "Explore", default=True),
    Page("taxonomy", "views/taxonomy.py", "Taxonomy", ":material/account_tree:", "Explore", param="node"),
    Page("search", "views/search.py", "Search", ":material/search:", "Explore", param="q"),
    Page("algorithms", "views/algorithms.py", "Algorithms", ":material/functions:", "Explore"),
    Page("imports", "views/imports.py", "Import", ":material/upload:", "Explore"),
    # without a key the work page offers a picker
    Page("work", "views/work.py", "Work", ":material/article:", "Explore", param="key", hidden=True),
    Page("lab", "views/lab.py", "Lab", ":material/science:", "Lab", param="impl"),
    Page("runs", "views/runs.py", "Runs", ":material/monitoring:", "Lab"),
    Page("compare", "views/compare.py", "Compare", ":material/leaderboard:", "Lab", param="grid"),
    # the project's docs/*.md, reached from the paths the pages cite
    Page("docs", "views/docs.py", "Documentation", ":material/description:", "Explore", param="path", hidden=True),
    # a source file the pages cite (reference_impls/rollout.py), shown read-only
    Page("source", "views/source.py", "Source", ":material/code:", "Explore", param="path", hidden=True),
)}


@dataclass(frozen=True)
class Link:
    """A page and its query parameters: what a link, a chip or ``ui.goto`` opens."""

    page: str
    query: Mapping[str, str | list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.page not in PAGES:
            raise KeyError(f"no page '{self.page}' (pages: {', '.join(PAGES)})")
        # empty values are left out, so links stay short and equal links compare equal
        object.__setattr__(self, "query", {k: v for k, v in self.query.items() if v not in (None, "", [], ())})

    @property
    def script(self) -> str:
        return PAGES[self.page].script

    @property
    def url(self) -> str:
        """A relative URL (relative, so it also works under a base URL path)."""
        query = {k: (list(v) if isinstance(v, (list, tuple)) else str(v)) for k, v in self.query.items()}
        return self.page + (f"?{urlencode(query, doseq=True)}" if query else "")


def page(name: str, **query: str | list[str]) -> Link:
    return Link(name, query)


#: the Compare page's tab parameter: which environment is open (``compare?grid=core&env=frozenlake``)
COMPARE_ENV = "env"


def compare(grid: str = "", env: str = "") -> Link:
    return Link("compare", {PAGES["compare"].param: grid, COMPARE_ENV: env})


def work(key: str) -> Link:
    return Link("work", {PAGES["work"].param: key})


def node(node_id: str) -> Link:
    return Link("taxonomy", {PAGES["taxonomy"].param: node_id})


def search(**query: str | list[str]) -> Link:
    """A search; the parameters are those of ``app.presentation.search.SearchState`` plus ``like``."""
    return Link("search", query)


def doc(name: str) -> Link:
    """A document of docs/ (``security.md``), shown by the app."""
    return Link("docs", {PAGES["docs"].param: name})


def source(path: str) -> Link:
    """A source file of the checkout (``reference_impls/rollout.py``), shown by the app."""
    return Link("source", {PAGES["source"].param: path})


def lab(**query: str) -> Link:
    """The Lab: ``impl``, ``preset`` and ``run``."""
    return Link("lab", query)
