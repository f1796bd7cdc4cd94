"""Serve the explorer: what ``make app`` runs, ``streamlit run app/streamlit_app.py`` once the catalog and the
keyword search index are loaded.

    python -m app.serve --server.address 127.0.0.1 --server.port 8501 --server.headless true

Streamlit runs a page's script only when a browser asks for it, so without this the first visitor, whatever
page they open, waits for the page modules' imports (pandas, the presentation), the catalog and, on Search,
the keyword index: about 2 s of one core, far more on a loaded machine. Here the process does that first
(``preload``) and only then starts the server, so the server answers its health check and prints its URL once
a first page needs nothing more than its own script. It is done before the server starts rather than beside
it: the work is CPU-bound Python either way (one interpreter lock), and imports racing the server's own imports
are not safe (plotly's theme, imported by Streamlit, looks for a half-imported pandas in ``sys.modules``).
The heavy warm-up (torch, the grids' summaries, the embedding model) still starts after the first page
(``app.state.warm_in_background``), where it cannot delay a first page.
"""
from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "streamlit_app.py"
#: what the Explore section's pages import besides Streamlit (pandas, the presentation, the catalog and search code);
#: the Lab section's pages (torch) warm up in the background instead. tests/test_extending.py fails when an Explore
#: page imports a module of the project that these leave unloaded
PRELOAD_MODULES = ("app.presentation.search", "app.presentation.taxonomy", "app.presentation.node_sections",
                   "app.presentation.overview", "app.presentation.work", "app.presentation.algorithms",
                   "app.presentation.imports", "papers.search.index", "papers.worksets", "papers.authors",
                   "papers.companion", "app.ui", "app.state")

_log = logging.getLogger(__name__)


#: Streamlit's loggers that warn about a cached function used before the server's runtime exists (here, on
#: purpose: the resource caches are the process's, whether a runtime exists yet or not)
QUIET_LOGGERS = ("streamlit.runtime.caching.cache_data_api", "streamlit.runtime.scriptrunner_utils.script_run_context")


def preload() -> None:
    """The pages' imports, then the cached loaders every first visit needs (``app.state.preload``). A failure
    is logged and left to the page that needs the part (it loads and reports it again)."""
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        _preload()
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _preload() -> None:
    for name in PRELOAD_MODULES:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001
            _log.warning("preload: importing %s failed: %s", name, e)
    try:
        from app import state
    except Exception as e:  # noqa: BLE001
        _log.warning("preload: importing app.state failed: %s", e)
        return
    state.preload()


def main(argv: list[str] | None = None) -> None:
    from streamlit.web import cli

    preload()
    sys.argv = ["streamlit", "run", str(SCRIPT), *(sys.argv[1:] if argv is None else argv)]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
