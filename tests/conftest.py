import contextlib
import io
import fcntl
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _threads_per_worker() -> int:
    """CPU cores divided among the pytest-xdist workers (at least 1).

    Each process's torch (OpenMP) otherwise starts one thread per core: with 2 workers on 2 cores the threads
    outnumber the cores and wait on each other. Measured: the 19 two-step CLI tests of the GRPO family take
    110 s with the default threads and 28 s with one thread per worker (2 cores, `-n 2`)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // workers)


if os.environ.get("PYTEST_XDIST_WORKER"):
    # Before torch is imported, so that this worker and every process it starts (CLI runs, the app) inherit it;
    # a value the caller set is kept.
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(_threads_per_worker()))

# Caches under the data dir that every process may share: each is written atomically (temp file or folder,
# then a rename), so two pytest-xdist workers can fill them at once. Everything else there (user works,
# notes, runs, comparison grids) is a test's state and gets a folder per worker.
SHARED_CACHES = ("models", "search", "textgames", "sql-env")


def _base_data_dir() -> Path:
    root = os.environ.get("ATLAS_DATA_DIR")  # as atlas_data.data_dir() reads it
    return Path(root).expanduser() if root else Path.home() / ".cache" / "agentic-rl-atlas"


def link_shared_caches(folder: Path, base: Path) -> None:
    """Make ``folder/<cache>`` a symlink to ``base/<cache>`` for each shared cache."""
    for name in SHARED_CACHES:
        (base / name).mkdir(parents=True, exist_ok=True)
        link = folder / name
        if not link.is_symlink():
            shutil.rmtree(link, ignore_errors=True)
            link.symlink_to(base / name, target_is_directory=True)


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive lock between processes (pytest-xdist workers) on ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def pytest_configure(config):
    """Under pytest-xdist, each worker gets its own ATLAS_DATA_DIR (``<data dir>/xdist/<worker>``, emptied at
    start), so tests that write there (a user work, a note, the catalog pickle) never see another worker's
    files; the shared caches stay shared (symlinks to the base data dir's)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    if "torch" in sys.modules:  # imported before this conftest (a plugin): the variable came too late for it
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    base = _base_data_dir().absolute()  # the symlinks below must not depend on the cwd
    own = base / "xdist" / worker
    shutil.rmtree(own, ignore_errors=True)
    own.mkdir(parents=True)
    link_shared_caches(own, base)
    os.environ["ATLAS_DATA_DIR"] = str(own)
    config.atlas_base_data_dir = base


def pytest_collection_finish(session):
    """Under pytest-xdist, build the model caches that tests would otherwise build concurrently (the SmolLM2
    tokenizer every tiny-model test reads; the converted SmolLM2 model when slow tests run), once, under a
    lock: ``reference_impls.models`` renames a finished folder into place, and two workers finishing at the
    same moment would make the second rename fail."""
    base = getattr(session.config, "atlas_base_data_dir", None)
    if base is None:
        return
    models = base / "models"
    need_tokenizer = not any((models / d / "tokenizer_config.json").exists()
                             for d in ("smollm2-tokenizer", "smollm2-135m-instruct"))
    need_smollm2 = (any(item.get_closest_marker("slow") for item in session.items)
                    and not (models / "smollm2-135m-instruct" / "config.json").exists())
    if not (need_tokenizer or need_smollm2):
        return
    with file_lock(base / "models.lock"):
        from reference_impls import models as model_cache

        try:
            if need_smollm2 and not (models / "smollm2-135m-instruct" / "config.json").exists():
                model_cache.load_policy("smollm2-135m-instruct", device="cpu")
            model_cache.load_tokenizer()
        except model_cache.ModelPackageMissing:
            pass  # the tests that need it report it


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
    papers_dir = tmp_path / "papers"
    tax_dir = tmp_path / "taxonomy"
    shutil.copytree(ROOT / "papers" / "data", papers_dir)
    shutil.copytree(ROOT / "taxonomy" / "data", tax_dir)
    return papers_dir, tax_dir


# -- the app, served -----------------------------------------------------------------------------------------

def need_chromium() -> str:
    """Debian's chromium, or a skip (a failure under ATLAS_REQUIRE_BROWSER=1, as in CI)."""
    from app.testing import chromium_path

    path = chromium_path()
    if path:
        return path
    msg = "Debian's chromium is not installed (apt-get install chromium)"
    if os.environ.get("ATLAS_REQUIRE_BROWSER") == "1":
        pytest.fail(msg + " but ATLAS_REQUIRE_BROWSER=1")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def require_chromium() -> str:
    return need_chromium()


class AppServer:
    def __init__(self, url: str, port: int, data: Path, proc):
        self.url, self.port, self.data, self.proc = url, port, data, proc


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """The explorer, started once per session (per xdist worker) the way the README says (``make app`` on a
    free port), shared by the tests that drive it (tests/test_browser*.py, tests/test_make_app.py: all in
    xdist group "app-server", so one worker starts it).

    Its data folder is its own (runs launched from the Lab land there) and holds, before the server starts,
    what those tests read: test_browser_compare.py's comparison grid (the app caches comparison results for
    a minute, so a grid written later could go unseen). The shared caches (the search embeddings, the
    tokenizer) are linked in, as in a worker's data dir."""
    from app.testing import free_port, start_app, stop_app, wait_healthy
    from test_browser_compare import seed_demo_grid

    data = tmp_path_factory.mktemp("app-data")
    link_shared_caches(data, _base_data_dir().absolute())
    seed_demo_grid(data)
    port = free_port()
    proc = start_app(port, env={"ATLAS_DATA_DIR": str(data)})
    try:
        wait_healthy(port, proc)
        yield AppServer(f"http://127.0.0.1:{port}", port, data, proc)
    finally:
        stop_app(proc)


#: the node ``node_without_implementation`` stands in with when every node runs or tours (as since issue 65): a
#: leaf whose rows serve it, their link to it taken away for the test
STAND_IN_NODE = "scaling-environment"


@pytest.fixture
def node_without_implementation(taxonomy, monkeypatch):
    """A taxonomy node that no row serves and that has no tour, for tests of what such a node's page shows: one from
    the data while some node is such, else (every node runs or tours since issue 65, when the scaling nodes got
    their rows) ``STAND_IN_NODE`` with its rows' link to it taken away for the test (``registry.implementations``
    replaced, as a node added to the taxonomy later would be), as NODE_PROXIES' tests use a stand-in entry."""
    import dataclasses

    from app.presentation.node_sections import TOURS
    from lab import catalog as lab
    from reference_impls import registry

    bare = [node.id for node in taxonomy if node.id not in TOURS and not lab.for_node(node.id)]
    if bare:
        return sorted(bare)[0]
    node = STAND_IN_NODE
    assert node in taxonomy and not taxonomy.children.get(node) and node not in TOURS and lab.for_node(node), (
        f"{node} no longer stands in for a node without an implementation (a served leaf without a tour)")
    stripped = tuple(dataclasses.replace(row, nodes=tuple(n for n in row.nodes if n != node))
                     for row in registry.implementations())
    monkeypatch.setattr(registry, "implementations", lambda: stripped)
    assert not lab.for_node(node)
    return node


@pytest.fixture(scope="session")
def train_list_json() -> str:
    """The output of ``train --list --json``, run once per test process; each user parses its own copy."""
    from reference_impls import train

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert train.main(["--list", "--json"]) == 0
    return buffer.getvalue()
