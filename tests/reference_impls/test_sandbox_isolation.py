"""Issue 63, item 9: on every layer, concurrent runs cannot reach each other's files, and nothing a run writes
to the host's world-writable folders (``/tmp``, ``/var/tmp``, ``/dev/shm``, ``/run/lock``) outlives it.

Each layer this machine can run is tested explicitly (``run_python(..., layer=...)``), whichever is active:
bwrap, unshare and rlimits (the last one opted in, as ``layer="rlimits"`` is). The rlimits layer separates
runs only as root (a uid per run); not as root it runs as the user, which docs/security.md says plainly."""
from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pytest

from reference_impls import sandbox

WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # on Debian 12, all there are
LIM = sandbox.Limits(cpu_seconds=2, wall_seconds=8.0, memory_bytes=256 * 2**20, nprocs=8, max_output_bytes=16384)


def _layers():
    return [layer for layer in sandbox.LAYERS if sandbox.usable(layer)]


@pytest.fixture(params=_layers())
def layer(request):
    if request.param == "rlimits" and os.geteuid() != 0:
        pytest.skip("the rlimits layer runs as the user when not root: runs are not separated (docs/security.md)")
    return request.param


# the neighbour: holds a secret in main.py and its own solution.py, and waits
NEIGHBOUR = """
import time
SECRET = {secret!r}
open('solution.py', 'w').write('ANSWER = 1\\n')
print('ready', flush=True)
time.sleep(4)
print(open('solution.py').read().strip())
"""

# the prober: looks for other runs' folders where a run can look, reads what it can, rewrites what it can
PROBER = r"""
import glob, os
seen, read, wrote = [], [], []
mine = os.getcwd()
for folder in ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"]:
    for path in glob.glob(folder + "/atlas-sbx-*"):
        if os.path.realpath(path) == os.path.realpath(mine):
            continue
        seen.append(path)
        try:
            read.append(open(path + "/main.py").read())
        except OSError:
            pass
        try:
            open(path + "/solution.py", "w").write("ANSWER = 666\n")
            wrote.append(path)
        except OSError:
            pass
print("SEEN", len(seen))
print("READ", "".join(read))
print("WROTE", wrote)
"""


def test_a_concurrent_run_cannot_read_or_rewrite_another_runs_files(layer):
    """The probe of issue 63: on unshare and rlimits one run listed /tmp/atlas-sbx-*, read another's main.py (its
    secret) and rewrote its solution.py, all runs being uid 65534 on the host's /tmp."""
    secret = f"secret-{uuid.uuid4().hex}"
    result = {}
    neighbour = threading.Thread(target=lambda: result.setdefault(
        "r", sandbox.run_python(NEIGHBOUR.format(secret=secret), limits=LIM, layer=layer)))
    neighbour.start()
    try:
        time.sleep(1.5)  # the neighbour has started and written its solution.py
        probe = sandbox.run_python(PROBER, limits=LIM, layer=layer)
    finally:
        neighbour.join()
    first = result["r"]
    assert first.ok and first.stdout.split() == ["ready", "ANSWER", "=", "1"], first  # not rewritten
    assert probe.ok, probe
    assert secret not in probe.stdout, probe.stdout
    assert "WROTE []" in probe.stdout, probe.stdout


def test_files_written_to_world_writable_folders_do_not_outlive_the_run(layer):
    tag = f"atlas-persist-{uuid.uuid4().hex}"
    targets = [Path(d, tag) for d in WORLD_WRITABLE if os.path.isdir(d)]
    code = ("import os\n"
            f"for path in {[str(t) for t in targets]!r}:\n"
            "    try:\n"
            "        open(path, 'w').write('x' * 1000)\n"
            "        os.mkdir(path + '.d'); open(path + '.d/inner', 'w').write('y')\n"
            "        print('wrote', path)\n"
            "    except OSError as e:\n"
            "        print('refused', path, type(e).__name__)\n")
    try:
        r = sandbox.run_python(code, limits=LIM, layer=layer)
        assert r.ok, r
        left = [str(t) for t in targets if t.exists() or Path(f"{t}.d").exists()]
        assert left == [], f"{layer}: left behind {left}"
    finally:  # on a layer that does not hold, do not leave the test's own files behind either
        for t in targets:
            Path(f"{t}.d", "inner").unlink(missing_ok=True)
            if Path(f"{t}.d").is_dir():
                Path(f"{t}.d").rmdir()
            t.unlink(missing_ok=True)


def test_the_unshare_layer_sees_only_its_own_tmp():
    if not sandbox.usable("unshare"):
        pytest.skip("the unshare layer does not work here")
    marker = Path("/tmp", f"atlas-host-marker-{uuid.uuid4().hex}")
    marker.write_text("host")
    try:
        r = sandbox.run_python("import os\nprint(sorted(os.listdir('/tmp')), os.getcwd())", limits=LIM, layer="unshare")
    finally:
        marker.unlink()
    listing, cwd = r.stdout.rsplit(" ", 1)
    assert r.ok and marker.name not in listing and listing == str([Path(cwd.strip()).name]), r.stdout


def test_concurrent_rlimits_runs_run_as_distinct_uids():
    """As root the rlimits layer gives each run a uid of its own (the namespaced layers need none: their runs
    cannot see each other), so the kernel's file permissions keep concurrent runs apart."""
    if os.geteuid() != 0:
        pytest.skip("only as root (not as root the run is the user)")
    code = "import os, time\nprint(os.getuid(), flush=True)\ntime.sleep(2)"
    results = []
    runs = [threading.Thread(target=lambda: results.append(sandbox.run_python(code, limits=LIM, layer="rlimits")))
            for _ in range(3)]
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    uids = [int(r.stdout) for r in results]
    assert len(set(uids)) == 3 and 0 not in uids, uids
