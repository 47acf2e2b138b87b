"""`mcuprof serve` as a user runs it: argument checks, a real server, real sockets."""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

from mcuprof.cli import main
from tests.helpers import Served, running_serve


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--host", "0.0.0.0"], "--allow-remote"),
        (["--host", "192.168.1.7"], "non-loopback"),
        (["--port", "http://evil.example/"], "not allowed"),
        (["--port", "/dev/definitely-not-here"], "no such serial port"),
        (["--elf", "/nonexistent/fw.elf"], "no such ELF"),
        (["--http-port", "70000"], "not a TCP port"),
        (["--baud", "0"], "--baud"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, tmp_path, args: list[str], needle: str) -> None:
    code = main(["serve", "--data-dir", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("mcuprof: error: ") and err.count("\n") == 1
    assert needle in err


def test_busy_http_port_is_a_one_line_error(capsys, tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code = main(
            ["serve", "--data-dir", str(tmp_path), "--http-port", str(port), "--no-connect"]
        )
    err = capsys.readouterr().err
    assert code == 2 and "cannot listen" in err and "--http-port" in err


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with running_serve(tmp_path / "data") as server:
        yield server


def get(url: str, host: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_default_serve_runs_the_simulated_device_on_loopback(served: Served) -> None:
    port, first = served.port, served.output().splitlines()[0]
    assert first.strip() == f"mcuprof: dashboard on http://127.0.0.1:{port}/  (Simulated device)"
    status, body = get(f"http://127.0.0.1:{port}/")
    assert status == 200 and b"mcuprof" in body
    status, _ = get(f"http://127.0.0.1:{port}/api/state", host="attacker.example")
    assert status == 400
    # Only loopback: nothing listens on the machine's other addresses.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))
        own = s.getsockname()[0]
    if own != "127.0.0.1":
        with pytest.raises(OSError), socket.create_connection((own, port), timeout=1):
            pass


def test_real_websocket_handshake_checks_origin(served: Served) -> None:
    port = served.port
    url = f"ws://127.0.0.1:{port}/ws"
    with pytest.raises(InvalidStatus) as info:
        ws_connect(url, origin="http://evil.example", open_timeout=10)
    assert info.value.response.status_code == 403
    with pytest.raises(InvalidStatus):
        ws_connect(url, open_timeout=10)  # no Origin at all
    with ws_connect(url, origin=f"http://127.0.0.1:{port}", open_timeout=10) as ws:
        assert '"type": "hello"' in ws.recv(timeout=10)


def test_allow_remote_prints_a_token_url_and_requires_it(tmp_path: Path) -> None:
    with running_serve(tmp_path / "data", "--allow-remote", "--no-connect") as served:
        port, first = served.port, served.output().splitlines()[0]
        m = re.search(rf"http://127\.0\.0\.1:{port}/\?token=([\w-]+)", first)
        assert m, first
        token = m.group(1)
        assert get(f"http://127.0.0.1:{port}/api/state")[0] == 401
        assert get(f"http://127.0.0.1:{port}/api/state?token=x{token}")[0] == 401
        assert get(f"http://127.0.0.1:{port}/api/state?token={token}")[0] == 200


def test_start_up_line_names_the_simulated_qs_target(tmp_path: Path) -> None:
    """Issue 34: the QS simulator is "Simulated QS target" in the start-up line, as in
    the device card, not the MiniProfiler's "Simulated device"."""
    with running_serve(tmp_path / "data", "--port", "sim://?proto=qs", "--no-connect") as s:
        first = s.output().splitlines()[0]
    expected = f"mcuprof: dashboard on http://127.0.0.1:{s.port}/  (Simulated QS target)"
    assert first.strip() == expected
