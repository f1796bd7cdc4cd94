"""`make app` starts the explorer on 127.0.0.1 (on a free port here, as the README says).

The server is the session's shared one (tests/conftest.py's ``app_server``), which is started with
``make app PORT=<free port>``: this test checks what that command serves."""
import socket
import urllib.request

import pytest

pytestmark = pytest.mark.xdist_group("app-server")


def test_make_app_serves_on_loopback(app_server):
    port = app_server.port
    assert app_server.proc.args == ["make", "app", f"PORT={port}"]  # started as the README says
    assert app_server.proc.poll() is None
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
        assert r.status == 200 and b"<html" in r.read().lower()
    # bound to loopback only: the same port on another local address is closed
    addr = socket.gethostbyname(socket.gethostname())
    if not addr.startswith("127."):
        with socket.socket() as s:
            s.settimeout(1)
            assert s.connect_ex((addr, port)) != 0
