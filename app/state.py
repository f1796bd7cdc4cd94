"""Cached resources shared by every page: loaded once per server process, not per rerun.

Nothing here runs at import. Once the first page of a server process has been served, one background thread
(``warm_in_background``, called by the entry script after every page) imports the reference implementations
(torch), scores the comparison grids (``GridResults.summary``: read from the shipped or stored summary, or
computed once per results), and, when the search embeddings are on disk, loads the search index and its
model (the model import takes ~10 s); ``ATLAS_WARM_SEARCH=0`` leaves the search out of it. Until the full
index is loaded, Search answers from a keyword-only index (``keyword_index``, about 1 s) and asks for the full
load (``want_search_index``), which starts once that page's script is done, so the two do not compete; a
search that needs the full index waits for that same load (the cache computes one value once and holds
other callers on its lock).
"""
from __future__ import annotations

import atexit
import gc
import logging
import os
import threading
from pathlib import Path

import streamlit as st

from app.presentation import algorithms, overview, taxonomy, work
from app.presentation.common import ChartView
from papers import Catalog

ROOT = Path(__file__).resolve().parents[1]
_log = logging.getLogger(__name__)


@st.cache_resource(show_spinner="Loading the catalog ...")
def catalog() -> Catalog:
    """Shipped works plus the user's imported works, marked origin='user'. Read from the data files once per
    server process (about 0.1 s); no file of the data folder is unpickled."""
    from papers.userstore import UserStore, default_store_path

    shipped = Catalog.load()
    return shipped.with_works(UserStore().works()) if default_store_path().exists() else shipped


def user_works_changed() -> None:
    """After an import, edit or delete: every cached view derived from the catalog is rebuilt."""
    global _search_thread
    st.cache_resource.clear()
    with _warm_lock:
        _search_ready.clear()
        _search_wanted.clear()
        if _search_thread is not None and not _search_thread.is_alive():
            _search_thread = None  # the next visit of Search loads the index of the new catalog


@st.cache_resource(show_spinner=False)
def tree_view(dimension: str) -> ChartView:
    return taxonomy.dimension_tree(catalog(), dimension)


@st.cache_resource(show_spinner="Laying out the graph ...")
def graph_view(dimension: str | None, show_works: bool, show_algorithms: bool) -> ChartView:
    return taxonomy.graph_view(catalog(), dimension, show_works=show_works, show_algorithms=show_algorithms)


@st.cache_resource(show_spinner=False)
def heatmap(selected: tuple[str, str] | None = None, with_inferred: bool = False) -> ChartView:
    return overview.heatmap(catalog(), selected, inferred_axes()[0] if with_inferred else None)


@st.cache_resource(show_spinner=False)
def year_chart() -> ChartView:
    return overview.year_chart(overview.works_per_year(catalog(), min_year=2018))


@st.cache_resource(show_spinner=False)
def node_options() -> dict[str, str]:
    return taxonomy.node_options(catalog())


@st.cache_resource(show_spinner=False)
def work_options() -> dict[str, str]:
    return work.work_options(catalog())


@st.cache_resource(show_spinner=False)
def algorithm_frame():
    return algorithms.algorithm_frame(catalog())


@st.cache_data(show_spinner=False, max_entries=128)
def export_text(keys: tuple[str, ...], fmt: str) -> str:
    """A result set in one export format (``papers.export.FORMATS``), cached per set and format."""
    from papers import to_format

    return to_format([catalog().works[k] for k in keys], fmt)


@st.cache_data(show_spinner=False, max_entries=256)
def comparison(methods: tuple[str, ...]):
    """The side-by-side frame of chosen algorithm variants and the attributes where they differ."""
    frame = algorithms.compare_algorithms(algorithm_frame(), list(methods))
    return frame, algorithms.differing_attributes(frame)


def search_available() -> bool:
    try:
        import papers.search  # noqa: F401  (cheap: the package imports its model lazily)
    except ImportError:
        return False
    return True


@st.cache_resource(show_spinner="Loading the search index (once per server; about 10-20 s) ...")
def search_index():
    from papers.search import SearchIndex

    index = SearchIndex.load_or_build(catalog())
    # torch and transformers leave a great many long-lived objects: freeze them so the garbage
    # collector does not walk them again on every later rerun
    gc.collect()
    gc.freeze()
    return index


@st.cache_resource(show_spinner=False)
def keyword_index():
    """A keyword-only (BM25) index of the catalog: built in about a second without the embedding model, it
    answers searches while the full index loads."""
    import dataclasses

    from papers.search.index import SearchIndex, build_corpus

    cat = catalog()
    return SearchIndex(dataclasses.replace(build_corpus(cat), dense_texts=None), catalog=cat)


_warm_lock = threading.Lock()
_warm_thread: threading.Thread | None = None
_search_thread: threading.Thread | None = None
_search_ready = threading.Event()  # set once the full index and its model are loaded in this process
_search_wanted = threading.Event()  # a page answered without the full index: load it after that page
_stopping = threading.Event()  # the process is exiting: the background work starts nothing new


def preload() -> None:
    """At server start (``app.serve``, once the server's runtime exists, before any page is asked for): what the
    first visit of any page needs, without torch: the catalog, the keyword search index and the node and work
    pickers. A page asked for meanwhile waits only for what is not loaded yet (each loader computes once and
    holds other callers on its lock). A failure is left to the page that needs the part (it loads and reports
    it again)."""
    for load in (catalog, keyword_index, node_options, work_options):
        if _stopping.is_set():
            return
        try:
            load()
        except Exception as e:  # noqa: BLE001
            _log.warning("preload: %s failed: %s", load.__name__, e)


def _finish_background_work(timeout_s: float = 60.0) -> None:
    """At exit, let the background threads end their current step before the interpreter goes away: a daemon
    thread still inside torch when it does aborts the process ("terminate called without an active
    exception", exit status 134), which a test run or a stopped server would report as a crash."""
    _stopping.set()
    for thread in (_warm_thread, _search_thread):
        if thread is not None:
            thread.join(timeout_s)


def _start(target, name: str) -> threading.Thread:
    if not _stopping.is_set() and not any(t is not None for t in (_warm_thread, _search_thread)):
        atexit.register(_finish_background_work)  # once, with the first background thread
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def search_ready(wait_s: float = 0.0) -> bool:
    """Whether the full search index (with the embedding model) is loaded: then a search never waits. With
    ``wait_s``, wait up to that long for it (tests)."""
    return _search_ready.wait(wait_s) if wait_s else _search_ready.is_set()


def want_search_index() -> None:
    """A page needs the full search index and did not wait for it: it is loaded (on a fresh data folder:
    built) in the background once that page's script is done (``warm_in_background``)."""
    if not _search_ready.is_set():
        _search_wanted.set()


def warm_in_background() -> bool:
    """Called after every page's script. Once per server process: import the reference implementations, score
    the comparison grids, then (when the
    embeddings are on disk and ``ATLAS_WARM_SEARCH`` is not 0) load the search index, in one daemon thread so
    the two do not compete for the CPU. And whenever a page asked for the full search index
    (``want_search_index``): load it. True if the warm-up started now."""
    global _warm_thread
    if _search_wanted.is_set():
        start_search_load()
    with _warm_lock:
        if _warm_thread is not None:
            return False
        _warm_thread = _start(_warm, "atlas-warm")
    return True


def start_search_load() -> bool:
    """Load (on a fresh data folder: build) the full search index in a daemon thread unless it is loaded or
    loading. True if it started."""
    global _search_thread
    if not search_available() or _search_ready.is_set() or _stopping.is_set():
        return False
    with _warm_lock:
        if _search_thread is not None:
            return False
        _search_thread = _start(_load_search, "atlas-search-load")
    return True


def _embeddings_cached() -> bool:
    """True when the search embeddings are on disk, in the data folder's cache or, for a data folder that has none
    yet, as the catalog's shipped vectors (``papers/data/search``, which a new data folder is seeded from): then the
    background load is the model only. Without either it would embed the whole catalog, minutes of CPU that the
    pages being used would compete with (seen: the Lab page stalled past 2 minutes on 2 cores), so only a page that
    needs the index starts that build (``want_search_index``)."""
    try:
        from papers.search.embed import EmbeddingCache, MiniLMEmbedder
        from papers.search.index import shipped_embeddings_path

        model_id = MiniLMEmbedder().model_id
        return EmbeddingCache.default_path(model_id).exists() or shipped_embeddings_path(model_id).exists()
    except Exception:  # noqa: BLE001  no warm-up is always safe
        return False


# the first page's script is done; its drawing is the browser's. With 1.0 s a node page visited 2 s after a start
# waited on the import (complete 1.7-2.2 s after its title; with 0.2 s 1.1-1.7 s: app_bench, 2026-12-06)
WARM_DELAY_S = 0.2


def _warm() -> None:
    if _stopping.wait(WARM_DELAY_S):
        return
    try:  # the reference implementations' registry imports torch and transformers: seconds a node page,
        # the Lab or a grid's first scoring would otherwise wait for
        from lab.catalog import available

        available()
    except Exception as e:  # noqa: BLE001  the page that needs it imports (and reports) it again
        _log.warning("background import of the reference implementations failed: %s", e)
    try:
        from lab.compare.results import available_results

        for grid in available_results():
            if _stopping.is_set():
                return
            grid.summary()
    except Exception as e:  # noqa: BLE001  a page computes (and reports) it again when shown
        _log.warning("background scoring of the comparison grids failed: %s", e)
    if os.environ.get("ATLAS_WARM_SEARCH", "1") != "0" and search_available() and _embeddings_cached():
        start_search_load()


def _load_search() -> None:
    if _stopping.wait(WARM_DELAY_S):  # the page that asked for it finishes drawing first
        return
    try:
        index = search_index()
        # the index loads from its cache without the model: load the model too (the costly part,
        # torch + sentence-transformers) and run one query, which also prepares the fast query path
        index.embedder.encode_query("agentic reinforcement learning")
        _search_ready.set()
    except Exception as e:  # noqa: BLE001  the Search page loads (and reports) it again when used
        _log.warning("background load of the search index failed: %s", e)


@st.cache_resource(show_spinner=False)
def inferred_axes() -> tuple[dict, str | None]:
    """The model's inferred capability/task axes (``papers.axes``), by work and axis, kept apart from the
    survey's placements; a malformed file gives no inferences and its error (file, row, field)."""
    from papers.axes import by_work, load_inferred
    from taxonomy import DataError

    try:
        return by_work(load_inferred(catalog())), None
    except DataError as e:
        return {}, str(e)


@st.cache_resource(show_spinner=False)
def run_manager():
    """The run registry (SQLite under the data dir); training runs are separate processes."""
    from lab.runs import RunManager

    return RunManager()


@st.cache_resource(show_spinner="Loading the placement model ...")
def placer():
    from papers import Catalog
    from papers.placement import Placer, default_encoder

    return Placer(Catalog.load(), default_encoder(), encode_new=default_encoder(cache_new=False))


def comparison_results():
    """The comparison grids' results (shipped and the user's own; re-read every minute as cells finish). Their
    statistics come from ``grid.summary()`` (computed once per results, see lab.compare.results)."""
    from atlas_data import data_dir

    return _comparison_results(str(data_dir()))


@st.cache_data(show_spinner=False, ttl=60)
def _comparison_results(data_dir_key: str):  # keyed by the data dir, so tests with their own dirs never mix
    from lab.compare.results import available_results

    return available_results()
