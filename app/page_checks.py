"""What each page of the explorer shows once it is complete, and which screenshots the docs show.

Shared by the browser tests, ``benchmarks/app_bench.py`` (which times every page of ``COMPLETE``) and
``scripts/screenshots.py`` (which takes ``screenshot_shots``), so that a page is described once. It imports no
Streamlit; ``tests/test_extending.py`` fails when a page of ``app.routes.PAGES`` is in neither ``COMPLETE`` nor
``NOT_TIMED``, or when a page listed in the navigation has no screenshot.

A check is a CSS selector and a text one of its elements must contain, ``(selector, text)``, or at least ``n`` such
elements, ``(selector, text, n)``. A shot is ``(file, URL path, ready checks, what to scroll to)``: a text, an ARIA
``(role, exact name)`` such as ``("heading", "search")``, or None.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from app import routes
from papers import Catalog


def _url(link: routes.Link) -> str:
    """A page's URL path from the server's root, as the browser opens it."""
    return "/" + link.url


#: the shipped catalog's size, as the Overview's first metric shows it on a fresh data folder
WORKS = str(len(Catalog.load().works))

# first meaningful render: the title and the counts, the first screenful of the home page
HOME_FIRST = [("h1", "Agentic RL Atlas"), ('[data-testid="stMetricValue"]', WORKS)]
# home complete: also the capability x task heat map (below the fold, drawn by ECharts)
HOME_READY = HOME_FIRST + [("svg text", "Perception")]

# every page by its URL and what "complete" means there: each of its sections on screen (selector, text), or at
# least n of them (selector, text, n)
TABLES = '[data-testid="stTable"], [data-testid="stDataFrame"]'
BENCH_QUERY = "memory agents that learn what to store"
COMPLETE = {
    "Overview": ("/", [("h1", "Agentic RL Atlas"), ('[data-testid="stMetricValue"]', WORKS),
                       ("svg text", "Perception"), ("h2", "Where to go next")]),
    "Taxonomy tree": (_url(routes.page("taxonomy")), [("h1", "Taxonomy"), ("svg text", "Memory (22)")]),
    "Node page (GRPO)": (_url(routes.node("alg-grpo")), [
        ("h1", "GRPO"), ("p", "Reference implementation"), ('[data-testid="stCaptionContainer"]',
                                                          "In the comparison grid"),
        ("h3", "Works ("), ("h3", "In the survey's tables"), ("h3", "Related nodes"), (TABLES, "", 2)]),
    "Search, no query": (_url(routes.search()), [("h1", "Search"), ('[data-testid="stCaptionContainer"]', "Browsing all")]),
    "Search, a query": (_url(routes.search(q=BENCH_QUERY)), [("h1", "Search"), ("p", f"for “{BENCH_QUERY}”"),
                                                                      ("p", "1. ")]),
    "Work (Search-R1)": (_url(routes.work("search-r1")), [("h1", "Search-R1"), ("h3", "Facts"), ("h3", "Similar works"),
                                                 ('[data-testid="stTabs"] p', "Similar in content")]),
    "Algorithms": (_url(routes.page("algorithms")), [("h1", "RL algorithms"), ("h2", "Side by side"), (TABLES, "", 2)]),
    "Import": (_url(routes.page("imports")), [("h1", "Import your works"), ("h3", "Your works")]),
    "Lab": (_url(routes.lab()), [("h1", "Lab"), ("button", "Launch")]),
    "Runs": (_url(routes.page("runs")), [("h1", "Runs"), ('[data-testid="stAlert"]', "No runs yet")]),
    # the default grid (the re-run, results/core) has one environment: drawn under its header, no tabs. Charts and
    # tables are drawn a moment after their element arrives: 3 charts (the interval chart, training curves and
    # pass@k) and 2 tables, whichever kind of table the page uses
    "Compare": (_url(routes.compare()), [("h1", "Compare algorithms"), ("h2", "calculator"),
                             ('[data-testid="stExpander"] summary', "Reproduce a cell"),
                             ('[data-testid="stVegaLiteChart"] svg.marks', "", 3), (TABLES, "", 2)]),
    # a grid of several environments: one per tab, only the open one drawn (the first by default, ``env=`` picks
    # another)
    "Compare, the first core grid": (_url(routes.compare(grid="core-first")), [
        ("h1", "Compare algorithms"), ('[data-testid="stTab"]', "calculator"), ('[data-testid="stTab"]', "search"),
        ('[data-testid="stExpander"] summary', "Reproduce a cell"),
        ('[data-testid="stVegaLiteChart"] svg.marks', "", 3), (TABLES, "", 2)]),
    "Compare, a linked tab": (_url(routes.compare(grid="core-first", env="frozenlake")), [
        ("h1", "Compare algorithms"), ('[data-testid="stTab"][aria-selected="true"]', "frozenlake"),
        ("p", "Map-blind bar:"), ('[data-testid="stExpander"] summary', "Reproduce a cell"),
        ('[data-testid="stVegaLiteChart"] svg.marks', "", 3), (TABLES, "", 2)]),
}
#: pages of ``app.routes.PAGES`` that ``COMPLETE`` leaves out, and why
NOT_TIMED = {
    "docs": "a Markdown file of docs/, reached from a path a page cites; its cost is reading one file",
    "source": "a source file of the checkout, reached from a path a page cites; its cost is reading one file",
}

#: in the browser: true when every check holds (none on a stale element) and Streamlit's running icon is gone
COMPLETE_JS = """([checks, running]) => {
  if (document.querySelector(running)) return false;
  for (const [sel, text, n] of checks) {
    const els = Array.from(document.querySelectorAll(sel));
    const found = els.filter(e => (e.textContent || '').includes(text) && !e.closest('[data-stale="true"]'));
    if (found.length < (n || 1)) return false;
  }
  return performance.now();
}"""


def page_of(url_path: str) -> str:
    """The page (``app.routes.PAGES`` key) a URL path opens: ``/compare?grid=core`` -> ``compare``; ``/`` -> the
    default page."""
    name = urlsplit(url_path).path.strip("/")
    return name or next(p.path for p in routes.PAGES.values() if p.default)


#: the explorer's screenshots that need nothing but the shipped data
EXPLORER_SHOTS = [
    ("overview.png", "/", HOME_READY, None),
    ("heatmap.png", "/?cap=tool-use&task=search-research", HOME_READY + [("h3", "8 works")], "Capabilities × tasks"),
    ("taxonomy-tree.png", _url(routes.page("taxonomy", dim="task")), [("svg text", "Code agent (42)")], None),
    ("taxonomy-graph.png", _url(routes.page("taxonomy", dim="capability", view="graph")), [("svg text", "Memory")], "Scroll to zoom"),
    ("node.png", _url(routes.node("memory")), [("h1", "Memory"), ("h3", "Works")], None),
    ("search.png", _url(routes.search(q="web search agents trained with outcome rewards", kind="method")),
     [("p", "for “web search agents"), ("span", "why")], None),
    ("work.png", _url(routes.work("search-r1")), [("h1", "Search-R1"), ("h3", "Facts")], None),
]
#: the shots that need a training run (the Lab and Runs show it)
RUN_SHOTS = ("lab.png", "runs.png")
#: taken while that run trains (``scripts/screenshots.py --mid-run STEPS``): the Lab's live curve over the band
MID_RUN_SHOTS = ("lab_running.png",)


def _compare_tab(env: str) -> list:
    """Another environment's tab of the Compare page, opened by its link, drawn down to "Reproduce a cell"."""
    return [("h1", "Compare algorithms"), ('[data-testid="stTab"][aria-selected="true"]', env),
            ('[data-testid="stExpander"] summary', "Reproduce a cell"), ('[data-testid="stVegaLiteChart"] svg.marks', "", 2)]


def screenshot_shots(run_id: str | None = None, preset: str = "quick") -> list[tuple]:
    """Every screenshot of docs/tour.md (README.md shows the first), in the order they are taken. ``run_id``: the
    training run the Lab and Runs show (started with Lab preset ``preset``)."""
    rerun = COMPLETE["Compare"][1]  # the default grid (the re-run of the core grid), every chart and table drawn
    return [
        *EXPLORER_SHOTS,
        # a measured learning preset on its node page: both arms' curves from the shipped records (issue 59)
        ("node_learning.png", _url(routes.node("memory")), [("h1", "Memory"), ("strong", "Measured learning on memory")],
         "Measured learning on memory"),
        ("algorithms.png", _url(routes.page("algorithms")), [("h1", "RL algorithms")], None),
        # the shipped grids' results (results/<grid>), drawn from the repository's files
        ("compare.png", _url(routes.compare()), rerun, None),
        ("compare_search.png", _url(routes.compare(grid="core-first", env="search")), _compare_tab("search"), None),
        ("compare_frozenlake.png", _url(routes.compare(grid="core-first", env="frozenlake")), _compare_tab("frozenlake"), None),
        ("compare_passk.png", _url(routes.compare()), rerun, "pass@k on held-out problems"),
        ("compare_envs.png", _url(routes.compare(grid="envs-code-web")), [("h1", "Compare algorithms")], None),
        ("import.png", _url(routes.page("imports")), [("h1", "Import your works")], None),
        ("lab.png", _url(routes.lab(impl="calculator-grpo", preset=preset, run=run_id or "")), [("h3", f"Run {run_id}")], f"Run {run_id}"),
        ("runs.png", _url(routes.page("runs")), [("h1", "Runs")], None),
    ]
