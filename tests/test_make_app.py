"""`make app` starts the explorer on 127.0.0.1 (on a free port here, as the README says)."""
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(port: int) -> subprocess.Popen:
    return subprocess.Popen(
        ["make", "app", f"PORT={port}"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"app not healthy on port {port} after {timeout}s")


def stop_app(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def test_make_app_serves_on_loopback():
    port = free_port()
    proc = start_app(port)
    try:
        wait_healthy(port, proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        # bound to loopback only: the same port on another local address is closed
        addr = socket.gethostbyname(socket.gethostname())
        if not addr.startswith("127."):
            with socket.socket() as s:
                s.settimeout(1)
                assert s.connect_ex((addr, port)) != 0
    finally:
        stop_app(proc)
