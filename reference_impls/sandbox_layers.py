"""The sandbox's isolation layers (:mod:`reference_impls.sandbox`'s docstring says what each one isolates):
each layer's command line (bubblewrap's mounts and namespaces, unshare's private tmpfs setup, the uid drop
with setpriv), the interpreter a dropped uid can reach, the bootstrap with the rlimits layer's audit hook, and
the rlimits layer's run uid and clean-up (what that uid left in the world-writable folders, every process
that carries the run's tag). Running one process under a layer, with its limits, and choosing the layer are
:mod:`reference_impls.sandbox`."""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import stat
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

LAYERS = ("bwrap", "unshare", "rlimits")
SANDBOX_UID = 65534  # nobody
WORKDIR_IN_BWRAP = "/sandbox"
#: the host's world-writable folders: on the unshare layer each gets a fresh tmpfs of its own per run (if it
#: exists); on the rlimits layer what the run's uid left at their top is removed after the run
PRIVATE_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
#: each of those tmpfs mounts: at most this many bytes and files (they are memory)
TMPFS_OPTIONS = "mode=1777,nosuid,nodev,size=64m,nr_inodes=4096"
#: the rlimits layer as root runs each concurrent run as its own uid, RUN_UID_BASE + a free slot: a range no
#: distribution allocates (regular users start at 1000, subordinate uids for containers at 100000 and
#: rarely reach 10^9), so no file of a real user ever has one of these owners
RUN_UID_BASE = 1_600_000_000
RUN_UID_SLOTS = 4096

# the unshare layer's first program, as root inside the new mount namespace: a tmpfs over each world-writable
# folder, the run's files copied from the host's temp dir (still reachable as the cwd once /tmp is covered)
# into the same path in the private /tmp, then the uid switch and the interpreter ("$@")
_UNSHARE_SETUP = r"""
set -e
work=$1 owner=$2 opts=$3 mount=$4 dirs=$5; shift 5
cd "$work"
for dir in $dirs; do
    if [ -d "$dir" ] && [ ! -L "$dir" ]; then "$mount" -t tmpfs -o "$opts" tmpfs "$dir"; fi
done
mkdir -p "$work"
cp -a ./. "$work"
chmod 700 "$work"
if [ -n "$owner" ]; then chown -R "$owner" "$work"; fi
cd "$work"
exec "$@"
"""

# Our bootstrap (argument of ``-c``, so model code cannot edit it): optional audit hook, then run main.py as
# ``python main.py`` would (runpy: the standard library's runner, no hand-made exec), inside this process so the
# hook installed first stays in force.
_BOOTSTRAP = r"""
import sys
if {hook!r}:
    def _install():
        import os
        pg = os.getpgrp()
        deny = ("socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo", "subprocess.Popen",
                "os.system", "os.exec", "os.posix_spawn", "os.spawn", "ctypes.dlopen", "ctypes.cdata", "pty.spawn",
                # what could reach the hook's function object or rewrite the process's memory
                "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames")
        if {nofork!r}:  # root without a uid switch: RLIMIT_NPROC does not bind uid 0, so no fork at all
            deny = deny + ("os.fork", "os.forkpty")
        noimport = ("_posixsubprocess", "ctypes", "_ctypes", "_xxsubinterpreters", "_testcapi", "_testinternalcapi",
                    "_testbuffer", "_testmultiphase", "_testsinglephase")

        # a closure bound to no name anywhere (not a module global, no self-reference): model code cannot
        # fetch it to change its defaults, code or cells (issue 47: `__main__._hook.__defaults__ = ...`);
        # what it calls is bound here, so replacing builtins.isinstance or os.fsdecode changes nothing
        fsdecode, is_a, text = os.fsdecode, isinstance, (str, bytes)

        def hook(event, args):
            if event in deny:
                raise PermissionError("sandbox: " + event + " is not allowed")
            if event == "import" and args and args[0] in noimport:
                raise PermissionError("sandbox: importing " + args[0] + " is not allowed")
            if event in ("os.kill", "os.killpg") and args and args[0] not in (0, pg, -pg):
                raise PermissionError("sandbox: signals to other processes are not allowed")
            if event == "open" and args and is_a(args[0], text):
                path = fsdecode(args[0])
                if path.startswith("/proc/") and path.rstrip("/").rsplit("/", 1)[-1] == "mem":
                    raise PermissionError("sandbox: opening " + path + " is not allowed")
        sys.addaudithook(hook)
    _install()
    del _install
sys.argv = ["main.py"]
import runpy
runpy.run_path("main.py", run_name="__main__")
"""


def _program(name: str) -> str:
    """The absolute path of a layer's program on the user's PATH (the code's own environment has
    PATH=/usr/bin:/bin, so a bare name would be looked up there), or FileNotFoundError."""
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name} is not installed (not on PATH={os.environ.get('PATH', '')})")
    return found


def _interpreter() -> str:
    """The base interpreter (not the venv's: model code gets the standard library only)."""
    exe = Path(sys.executable).resolve()
    base = Path(sys.base_prefix) / "bin" / exe.name
    return str(base if base.exists() else exe)


def _world_reachable(path: str) -> bool:
    """Can an unrelated uid reach and execute ``path`` (every parent searchable by others)?"""
    p = Path(path).resolve()
    for parent in list(p.parents)[::-1]:
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(p).st_mode & stat.S_IXOTH)


def _is_root() -> bool:
    return os.geteuid() == 0


@lru_cache(maxsize=4)
def _fallback_interpreter() -> tuple[str, bool]:
    """(interpreter, drop_uid) for the layers without a private mount namespace. As root we drop to
    uid 65534 and need an interpreter that uid can reach; else we run as ourselves."""
    exe = _interpreter()
    if not _is_root():
        return exe, False
    for cand in (exe, "/usr/bin/python3"):
        if os.path.exists(cand) and _world_reachable(cand):
            return cand, True
    return exe, False


def _command(layer: str, workdir: str) -> tuple[list[str], bool, str, str]:
    """(argv prefix before the interpreter's arguments, drop uid in preexec, interpreter, cwd)."""
    if layer == "bwrap":
        exe = _interpreter()
        prefix = sys.base_prefix
        argv = [_program("bwrap"), "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
        for link in ("lib", "lib64", "bin", "sbin"):
            if os.path.islink(f"/{link}"):
                argv += ["--symlink", os.readlink(f"/{link}"), f"/{link}"]
            elif os.path.isdir(f"/{link}"):
                argv += ["--ro-bind", f"/{link}", f"/{link}"]
        if not prefix.startswith("/usr/"):
            argv += ["--ro-bind", prefix, prefix]
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", workdir, WORKDIR_IN_BWRAP,
                 "--chdir", WORKDIR_IN_BWRAP, "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
                 "--setenv", "LANG", "C.UTF-8", "--setenv", "HOME", WORKDIR_IN_BWRAP]
        if _is_root():
            argv += ["--", "/usr/bin/setpriv", "--reuid", str(SANDBOX_UID), "--regid", str(SANDBOX_UID),
                     "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        else:
            argv += ["--unshare-user", "--"]
        return argv, False, exe, WORKDIR_IN_BWRAP
    exe, drop = _fallback_interpreter()
    if layer == "unshare":
        argv = [_program("unshare"), "--net", "--pid", "--ipc", "--uts", "--mount", "--propagation", "private",
                "--fork", "--kill-child", "--mount-proc"]
        owner = ""
        if not _is_root():
            argv.insert(1, "-r")
            drop = False
        elif drop:
            owner = f"{SANDBOX_UID}:{SANDBOX_UID}"
        argv += ["/bin/sh", "-c", _UNSHARE_SETUP, "atlas-sandbox", workdir, owner, TMPFS_OPTIONS, _program("mount"),
                 " ".join(PRIVATE_TMP_DIRS)]
        if drop:
            # unshare must run as root to create namespaces (and the setup to mount); setpriv drops the uid after
            argv += ["/usr/bin/setpriv", "--reuid", str(SANDBOX_UID), "--regid", str(SANDBOX_UID),
                     "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
            drop = False
        return argv, drop, exe, workdir
    return [], drop, exe, workdir


@contextlib.contextmanager
def _claimed_run_uid():
    """A uid for one run of the rlimits layer, held (an exclusive ``flock`` on its slot's file) until the block
    ends, so no concurrent run, of this process or another, gets the same one: ``RUN_UID_BASE`` + the first
    free slot. What a run of a crashed process left under that uid is removed before it is used again."""
    folder = Path(tempfile.gettempdir(), "atlas-sbx-uids")
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise PermissionError(f"{folder} is not a private folder of this user: cannot claim a uid for the run")
    for slot in range(RUN_UID_SLOTS):
        fd = os.open(folder / str(slot), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            uid = RUN_UID_BASE + slot
            _remove_owned_by(uid)
            yield uid
        finally:
            os.close(fd)  # releases the lock
        return
    raise PermissionError(f"all {RUN_UID_SLOTS} sandbox uids are in use")


def _remove_owned_by(uid: int) -> int:
    """Remove what ``uid`` owns at the top of each of ``PRIVATE_TMP_DIRS`` (a folder with all it holds; links
    are removed, never followed). Run after that uid's processes are gone. Returns how many entries."""
    removed = 0
    for folder in PRIVATE_TMP_DIRS:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
                removed += 1
            except OSError:
                continue
    return removed


def _tagged(tag: bytes) -> list[int]:
    """Live processes whose initial environment holds ``tag`` (every process of one run: its environment,
    ``HOME`` = the run's own temp dir, is inherited by every fork, whatever session or group it moves to)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if tag not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{d}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    continue  # a zombie is dead already
        except (OSError, IndexError):
            continue
        pids.append(int(d))
    return pids


def _kill_tagged(tag: bytes) -> int:
    """SIGKILL every process of the run tagged ``tag``, until none is left (a forking process may add one
    between two scans; RLIMIT_NPROC bounds how many). Without a pid namespace (the rlimits layer) this is
    what reaches a grandchild that left the process group with ``setsid()``. Returns how many were killed."""
    killed = 0
    for _ in range(50):
        pids = _tagged(tag)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    return killed
