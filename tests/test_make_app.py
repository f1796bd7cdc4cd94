"""`make app` starts the explorer on 127.0.0.1 (on a free port here, as the README says)."""
import socket
import urllib.request

from app.testing import free_port, start_app, stop_app, wait_healthy


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
