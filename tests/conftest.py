import os
import signal
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _restore_signal_handlers_and_cwd():
    """Tests call CLIs' ``main`` in this process, and ``reference_impls.train.main`` installs SIGTERM/SIGINT
    handlers that stop its (by then finished) trainer: put the handlers, and the working directory, back
    after each test, so that Ctrl-C or a SIGTERM still ends the test run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    cwd = os.getcwd()
    yield
    for s, handler in handlers.items():
        if handler is not None and signal.getsignal(s) is not handler:
            signal.signal(s, handler)
    if os.getcwd() != cwd:
        os.chdir(cwd)


@pytest.fixture(scope="session")
def catalog():
    from papers import Catalog

    return Catalog.load()


@pytest.fixture(scope="session")
def taxonomy(catalog):
    return catalog.taxonomy


@pytest.fixture
def data_copy(tmp_path):
    """A writable copy of the shipped data files: (papers data dir, taxonomy data dir)."""
    import shutil

    papers_dir = tmp_path / "papers"
    tax_dir = tmp_path / "taxonomy"
    shutil.copytree(ROOT / "papers" / "data", papers_dir)
    shutil.copytree(ROOT / "taxonomy" / "data", tax_dir)
    return papers_dir, tax_dir
