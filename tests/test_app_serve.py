"""app.serve: ``make app`` loads what every first page needs (imports, catalog, keyword search index) before the
server answers, so the first query does not wait for it (timing: benchmarks/app_bench.py)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_make_app_starts_the_server_through_the_preloading_launcher():
    recipe = ROOT.joinpath("Makefile").read_text().split("\napp:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"\$\(PY\) -m app\.serve\b", recipe), recipe
    assert "--server.address 127.0.0.1" in recipe  # still bound to loopback


def test_preload_fills_the_caches_a_first_page_reads(monkeypatch):
    import papers.catalog
    import papers.search.index
    from app import serve, state

    for loader in (state.catalog, state.keyword_index, state.node_options, state.work_options):
        loader.clear()
    serve.preload()

    def no_second_load(*args, **kwargs):
        raise AssertionError("loaded again after the preload")

    monkeypatch.setattr(papers.catalog.Catalog, "load", no_second_load)
    monkeypatch.setattr(papers.search.index, "build_corpus", no_second_load)
    cat = state.catalog()
    assert len(cat.works) > 500
    assert state.keyword_index().search("memory agents", k=3, mode="lexical").hits
    assert state.node_options() and state.work_options()


def test_the_launcher_runs_streamlit_on_the_entry_script_with_the_given_options(monkeypatch):
    import sys

    from streamlit.web import cli

    from app import serve

    seen = {}
    monkeypatch.setattr(serve, "preload", lambda: seen.setdefault("preloaded", True))
    monkeypatch.setattr(cli, "main", lambda **kw: seen.setdefault("argv", list(sys.argv)))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    serve.main(["--server.port", "8599"])
    assert seen["preloaded"] and seen["argv"] == ["streamlit", "run", str(serve.SCRIPT), "--server.port", "8599"]
    assert serve.SCRIPT == ROOT / "app" / "streamlit_app.py"
