"""Run model-written Python in a separate, locked-down process. Never in the trainer's process.

Every call of :func:`run_python` starts a fresh interpreter (``python -I -S``: isolated mode, no site,
no user site, ``PYTHON*`` variables ignored) in a fresh temporary directory, with

* resource limits set before exec by ``prlimit(1)`` (``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``,
  ``RLIMIT_NPROC``, ``RLIMIT_CORE=0``; a ``preexec_fn`` only where prlimit is missing) and a wall-clock timeout that kills the whole process group,
* an empty environment (``PATH``, ``LANG``, ``HOME`` = the temp dir; nothing of the trainer's),
* stdout / stderr read incrementally and cut at ``max_output_bytes`` (the process is killed when it
  writes more; the trainer never buffers more than the cap),
* the strongest isolation *layer* this machine allows, chosen once per process (:func:`active_layer`):

``bwrap``     bubblewrap: new net, pid, ipc, uts, cgroup (and user, when not root) namespaces; a root
              file system holding only read-only ``/usr`` and the interpreter's prefix, a private
              ``/tmp`` and ``/proc``, the temp dir bound read-write as the working directory. No network
              device but loopback; the parent is outside the pid namespace. As root, bwrap sets up the
              mounts and ``setpriv`` drops to uid/gid 65534 with no capabilities before Python starts
              (so ``RLIMIT_NPROC`` applies: the kernel exempts uid 0 from it).
``unshare``   ``unshare --net --pid --ipc --uts --mount --fork --mount-proc`` (``-r`` when not root): no
              network, own pid and ipc namespaces, and a private mount namespace in which fresh tmpfs mounts
              hide the host's world-writable folders (``PRIVATE_TMP_DIRS``: ``/tmp``, ``/var/tmp``,
              ``/dev/shm``, ``/run/lock``); the run's files are copied into its own ``/tmp``, so concurrent
              runs never see each other's, and everything the code writes there vanishes with the run. The
              rest of the file system is the host's (as uid 65534 when started as root).
``rlimits``   no namespaces: limits, as root a uid of its own per run (``RUN_UID_BASE`` + a slot no
              concurrent run holds; its temp dir is 0700, and what that uid left in the host's world-writable
              folders is removed after the run), and an audit hook installed by our bootstrap
              (not the model's code) that refuses socket creation, subprocesses and exec (also the
              ``_posixsubprocess`` import), ``ctypes`` and ``os.kill`` outside the group; at the end every
              process of the run is killed, found by its environment (a ``setsid`` grandchild included).
              An audit hook is *not* a security boundary, so this layer runs model code only when asked
              for: ``layer="rlimits"`` or ``ATLAS_SANDBOX_LAYER=rlimits``. Where it is merely the only
              layer that works, :func:`run_python` refuses (``sandbox_error``, saying why).

See docs/env_code_sql.md for what each layer does not protect against and which one is active here.
"""
from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# _fallback_interpreter is called through its module, so that one patch of it (a test's) reaches _command too
from . import sandbox_layers
from .sandbox_layers import (_BOOTSTRAP, LAYERS, SANDBOX_UID, _claimed_run_uid, _command, _interpreter, _is_root,
                             _kill_tagged, _remove_owned_by)
from .sandbox_layers import RUN_UID_BASE, RUN_UID_SLOTS  # noqa: F401 - the layers' constants that callers read here


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run code on this machine (a ``sandbox_error``: not the code's fault). Environments
    raise it instead of scoring the episode 0, so a training run stops and says why."""


def check(result: "Result") -> "Result":
    """``result``, or :class:`SandboxUnavailable` when it is a ``sandbox_error``."""
    if result.status == "sandbox_error":
        raise SandboxUnavailable(f"the {result.layer} sandbox layer cannot run code here: {result.stderr.strip()}")
    return result


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 2
    wall_seconds: float = 5.0
    memory_bytes: int = 512 * 2**20  # address space; Python itself needs ~30 MB
    file_bytes: int = 2**20
    nprocs: int = 16
    max_output_bytes: int = 64 * 2**10


@dataclass
class Result:
    status: str  # ok | error | timeout | cpu_limit | output_limit | killed | sandbox_error
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    layer: str
    truncated: bool = False
    info: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _user_tasks(uid: int) -> int:
    """Tasks (threads count) currently owned by ``uid``: RLIMIT_NPROC counts them all."""
    n = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                uid_ok = threads = None
                for line in f:
                    if line.startswith("Uid:"):
                        uid_ok = int(line.split()[1]) == uid
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
                if uid_ok:
                    n += threads or 1
        except (OSError, ValueError):
            continue
    return n


def _prlimit_argv(limits: Limits, nproc_base: int) -> list[str]:
    exe = shutil.which("prlimit")
    if not exe:
        return []
    c, m, f, n = limits.cpu_seconds, limits.memory_bytes, limits.file_bytes, nproc_base + limits.nprocs
    return [exe, f"--cpu={c}:{c + 1}", f"--as={m}:{m}", f"--fsize={f}:{f}", "--core=0:0", f"--nproc={n}:{n}", "--"]


def _preexec(limits: Limits, drop_to: int | None, nproc_base: int):
    import resource

    def fn():
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        nproc = nproc_base + limits.nprocs
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if drop_to is not None:
            os.setgroups([])
            os.setgid(drop_to)
            os.setuid(drop_to)
    return fn


def _env(home: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home}


def _spawn(layer: str, code: str, stdin: str, limits: Limits, files: dict[str, str] | None = None) -> Result:
    workdir = tempfile.mkdtemp(prefix="atlas-sbx-")
    t0 = time.perf_counter()
    proc = None
    cwd = workdir
    run_uid, drop = None, False
    with contextlib.ExitStack() as stack:
        try:
            # a lone surrogate (model text can hold one) cannot be UTF-8: written as its escape, which inside a
            # string literal means the same character and elsewhere is the syntax error the character would be
            text = dict(encoding="utf-8", errors="backslashreplace")
            Path(workdir, "main.py").write_text(code, **text)
            Path(workdir, "stdin.txt").write_text(stdin, **text)
            extra = dict(files or {})
            for name, body in extra.items():
                if "/" in name or name in ("main.py", "stdin.txt", "", ".", ".."):
                    raise ValueError(f"sandbox file name {name!r}")
                Path(workdir, name).write_text(body, **text)
            argv, drop, exe, cwd = _command(layer, workdir)
            if drop:  # the rlimits layer as root: a uid no concurrent run has (held until the run is cleaned up)
                run_uid = stack.enter_context(_claimed_run_uid())
            elif _is_root() and (layer == "bwrap" or "setpriv" in argv):
                run_uid = SANDBOX_UID
            # the unshare layer copies the temp dir into its private /tmp and chowns the copy there: the host's
            # stays the trainer's, 0700, out of reach of any run on another layer
            if run_uid is not None and layer != "unshare":
                os.chown(workdir, run_uid, run_uid)
                for name in ("main.py", "stdin.txt", *extra):
                    os.chown(Path(workdir, name), run_uid, run_uid)
            os.chmod(workdir, 0o700)
            # RLIMIT_NPROC counts every task of the uid: relative to what that uid already runs
            nproc_base = _user_tasks(run_uid if run_uid is not None else os.getuid())
            hook = layer == "rlimits"
            boot = _BOOTSTRAP.format(hook=hook, nofork=hook and _is_root() and not drop)
            with open(Path(workdir, "stdin.txt"), "rb") as fin:
                # limits via prlimit(1) and the uid switch via Popen's own (C-level) user/group arguments: no
                # Python runs between fork and exec in a trainer that has threads (preexec_fn only without prlimit)
                prl = _prlimit_argv(limits, nproc_base)
                kw = dict(user=run_uid, group=run_uid, extra_groups=[]) if drop and prl else {}
                proc = subprocess.Popen(prl + argv + [exe, "-I", "-S", "-c", boot],
                                        cwd=workdir if layer != "bwrap" else None,
                                        stdin=fin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(cwd),
                                        start_new_session=True, close_fds=True,
                                        preexec_fn=None if prl else _preexec(limits, run_uid if drop else None,
                                                                             nproc_base), **kw)
            out, err, why, cpu = _collect(proc, limits)
            rc = proc.returncode
        except OSError as e:
            return Result("sandbox_error", None, "", f"{type(e).__name__}: {e}", time.perf_counter() - t0, layer)
        finally:
            if proc is not None:
                _kill_group(proc)
                if layer == "rlimits":  # no pid namespace: find what left the group (the namespaced layers end with it)
                    _kill_tagged(f"HOME={cwd}".encode())
            if drop and run_uid is not None:  # before the uid is free for the next run
                _remove_owned_by(run_uid)
            shutil.rmtree(workdir, ignore_errors=True)
    wall = time.perf_counter() - t0
    truncated = why == "output_limit"
    if why:
        status = why
    elif rc == 0:
        status = "ok"
    elif rc in (-signal.SIGXCPU, 128 + signal.SIGXCPU) or (cpu is not None and cpu >= 0.9 * limits.cpu_seconds):
        status = "cpu_limit"
    elif rc is not None and (rc < 0 or rc > 128):
        status = "killed"
    else:
        status = "error"
    cap = limits.max_output_bytes
    return Result(status, rc, out[:cap].decode("utf-8", "replace"), err[:cap].decode("utf-8", "replace"), wall, layer,
                  truncated, {"cpu_s": cpu})


def _collect(proc: subprocess.Popen, limits: Limits) -> tuple[bytes, bytes, str | None, float | None]:
    bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    sel = selectors.DefaultSelector()
    for f in bufs:
        sel.register(f, selectors.EVENT_READ)
    deadline = time.monotonic() + limits.wall_seconds
    why = None
    open_ = 2
    cpu = None
    while open_:
        left = deadline - time.monotonic()
        if left <= 0:
            if proc.returncode is None:
                why = "timeout"
            break
        if proc.returncode is None:
            cpu = _wait(proc, 0.0)
            if proc.returncode is not None:
                # the program has exited: what it wrote is in the pipes now. A descendant still holding them
                # open must not turn a clean exit into a timeout, so read for a moment more, then stop.
                deadline = min(deadline, time.monotonic() + 0.2)
        for key, _ in sel.select(timeout=min(left, 0.05 if proc.returncode is not None else 0.5)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_ -= 1
                continue
            buf = bufs[key.fileobj]
            buf += chunk[: limits.max_output_bytes + 1 - len(buf)]
            if len(buf) > limits.max_output_bytes:
                why = "output_limit"
        if why:
            break
    sel.close()
    if why:
        _kill_group(proc)
    elif proc.returncode is None:
        cpu = _wait(proc, max(0.1, deadline - time.monotonic()))
        if cpu is None:
            why = "timeout"
            _kill_group(proc)
    if proc.returncode is None:
        cpu = _wait(proc, 5.0)
    for f in bufs:
        f.close()
    return bytes(bufs[proc.stdout]), bytes(bufs[proc.stderr]), why, cpu


def _wait(proc: subprocess.Popen, timeout: float) -> float | None:
    """Reap ``proc`` within ``timeout`` (None if it is still running); returns its CPU seconds, including
    the children it reaped (os.wait4's rusage), which tells a CPU-limit kill from other deaths."""
    end = time.monotonic() + timeout
    while True:
        try:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return 0.0 if proc.returncode is not None else None
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return ru.ru_utime + ru.ru_stime
        if time.monotonic() > end:
            return None
        time.sleep(0.005)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


@lru_cache(maxsize=1)
def _probe() -> tuple[str, dict]:
    notes: dict[str, str] = {}
    forced = os.environ.get("ATLAS_SANDBOX_LAYER")
    if forced:
        if forced not in LAYERS:
            raise ValueError(f"ATLAS_SANDBOX_LAYER must be one of {LAYERS}")
        notes = {"forced": forced}
        if forced != "rlimits":  # checked once, so a layer that cannot work is a sandbox_error, not code at fault
            r = _spawn(forced, "print('ok')", "", Limits())
            if not (r.status == "ok" and r.stdout.strip() == "ok"):
                notes["problem"] = f"ATLAS_SANDBOX_LAYER={forced}, but it does not work here: " + \
                    (r.stderr.strip() or r.status)[-300:]
        return forced, notes
    for layer in LAYERS[:-1]:
        if shutil.which(layer) is None:
            notes[layer] = "not installed"
            continue
        if layer == "unshare" and _is_root() and not sandbox_layers._fallback_interpreter()[1]:
            notes[layer] = "root, and no interpreter that uid 65534 can reach: it would run as root"
            continue
        r = _spawn(layer, "print('ok')", "", Limits())
        if r.status == "ok" and r.stdout.strip() == "ok":
            return layer, notes
        notes[layer] = (r.stderr or r.status)[-300:]
    return "rlimits", notes


def usable(layer: str) -> bool:
    """Does ``layer`` work on this machine (the layer itself, not only its program being installed)?"""
    if layer == "rlimits":
        return True
    if layer == active_layer():
        return True
    if LAYERS.index(layer) < LAYERS.index(active_layer()):
        return False  # probed and failed
    unreachable = layer == "unshare" and _is_root() and not sandbox_layers._fallback_interpreter()[1]
    if shutil.which(layer) is None or unreachable:
        return False
    return _spawn(layer, "print('ok')", "", Limits()).stdout.strip() == "ok"


def protects_files(layer: str) -> bool:
    """Does ``layer`` keep the code away from the trainer user's files? bwrap: a private file system;
    the others: only when they run the code as uid 65534 (i.e. the trainer is root)."""
    if layer == "bwrap":
        return True
    return _is_root() and sandbox_layers._fallback_interpreter()[1]


def active_layer() -> str:
    """The isolation layer used by default here (probed once per process; ``ATLAS_SANDBOX_LAYER`` forces one)."""
    return _probe()[0]


def layer_report() -> dict:
    layer, notes = _probe()
    return {"layer": layer, "why_not_stronger": notes, "root": _is_root(), "interpreter": _interpreter()}


def run_python(code: str, stdin: str = "", limits: Limits | None = None, layer: str | None = None,
               files: dict[str, str] | None = None) -> Result:
    """Run ``code`` as ``main.py`` in a sandbox (``files``: more files beside it, e.g. a model's module);
    never raises for anything the code does."""
    if layer is None:
        layer = active_layer()
        if _probe()[1].get("problem"):
            return Result("sandbox_error", None, "", _probe()[1]["problem"], 0.0, layer)
        if layer == "rlimits" and os.environ.get("ATLAS_SANDBOX_LAYER") != "rlimits":
            return Result("sandbox_error", None, "", rlimits_refusal(), 0.0, layer, info={"refused": True})
    if layer not in LAYERS:
        raise ValueError(f"layer must be one of {LAYERS}")
    return _spawn(layer, code, stdin, limits or Limits(), files)


def rlimits_refusal() -> str:
    """Why model code is not run by default where only the rlimits layer works (issue 47)."""
    notes = "; ".join(f"{k}: {v}" for k, v in _probe()[1].items()) or "none usable"
    return ("sandbox: no isolating layer works on this machine (" + notes + "), and the rlimits layer alone is "
            "not a security boundary: it has no network or file-system isolation, only an audit hook inside the "
            "code's own interpreter, which code can get around. Untrusted code was not run. Install bubblewrap "
            "(apt-get install bubblewrap), or set ATLAS_SANDBOX_LAYER=rlimits to run it on this layer anyway.")
