"""The real QView 7.4.1 (from PyPI), under Xvfb, drives the real QP/C DPP target through
``mcuprof qs listen --udp`` (issue 25, point 3 and its QView done-when line).

QView attaches, gets the target's info, and its customization script (qview_script.py)
sets filters, peeks and pokes the Table object, queries it, publishes and posts events
and sends a user command. The script writes every packet QView hands it, and every line
it shows, to a file, which this test reads: the target's answers reached QView.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .qsfe import NMIN_OFFSET, REAL, WAIT_S, Process, start_listen, start_target, wait_for

pytest.importorskip("qview", reason="QView is a test dependency: pip install qview==7.4.1")
pytest.importorskip("tkinter", reason="QView needs Tk: apt-get install python3-tk")
SCRIPT = Path(__file__).with_name("qview_script.py")
TARGET = "dpp-posix64"
ORIGIN = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def display():
    """A private X display from Xvfb (``-displayfd`` picks a free one), ended by PID."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("Xvfb is not installed (scripts/install-sysdeps.sh installs xvfb)")
    read, write = os.pipe()
    proc = subprocess.Popen(
        [xvfb, "-displayfd", str(write), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()  # written once the server accepts clients
    try:
        if not number:
            pytest.skip(f"Xvfb could not start (exit status {proc.wait(timeout=WAIT_S)})")
        yield f":{number}"
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT_S)


def _lines(path: Path) -> list[tuple[str, str]]:
    if not path.exists():
        return []
    return [tuple(line.split(" ", 1)) for line in path.read_text().splitlines() if " " in line]


def _run_qview(display: str, uport: int, out: Path) -> None:
    env = {**os.environ, "DISPLAY": display, "QVIEW_OUT": str(out)}
    env["QVIEW_NMIN"] = str(NMIN_OFFSET[TARGET])
    qview = Process([sys.executable, str(SCRIPT), f"127.0.0.1:{uport}"], env=env)
    try:
        assert qview.proc.wait(timeout=WAIT_S) == 0, qview.err[-10:]
    finally:
        qview.stop(signal.SIGKILL)


def test_qview_drives_the_real_target_through_mcuprof(display, tmp_path):
    if not (REAL / TARGET).exists():
        pytest.skip(f"the real target {REAL / TARGET} is missing")
    out = tmp_path / "qview.txt"
    host, tport, uport = start_listen()
    target = start_target(TARGET, tport)
    try:
        host.wait_line(r"QF_RUN")
        _run_qview(display, uport, out)
        assert target.proc.poll() is None  # the target lives on
    finally:
        target.stop(signal.SIGKILL)
        host.stop(signal.SIGINT)
    _check_answers(out)


def test_qview_drives_the_target_the_dashboard_profiles(display, tmp_path):
    """``mcuprof serve --port listen://... --qspy-udp``: the same QView run while the
    dashboard profiles the same target."""
    if not (REAL / TARGET).exists():
        pytest.skip(f"the real target {REAL / TARGET} is missing")
    from fastapi.testclient import TestClient

    from mcuprof.web.app import create_app
    from mcuprof.web.settings import Settings

    settings = Settings(port="listen://127.0.0.1:0", qspy_udp=0, data_dir=tmp_path / "data")
    out = tmp_path / "qview.txt"
    with TestClient(create_app(settings), base_url=ORIGIN) as client:

        def health() -> dict:
            return client.get("/api/state").json()["health"]

        listening = wait_for(
            lambda: client.get("/api/state").json()["device"]["listening_on"], "listening"
        )
        target = start_target(TARGET, int(str(listening).rsplit(":", 1)[1]))
        try:
            r = client.post("/api/start", headers={"Origin": ORIGIN})
            assert r.status_code == 200, r.text
            wait_for(lambda: health()["profile_records"] > 0, "RTC steps in the dashboard")
            _run_qview(display, client.app.state.qspy_udp.address[1], out)
            before = health()["profile_records"]
            wait_for(lambda: health()["profile_records"] > before, "more steps after QView")
            assert health()["profiling"] and target.proc.poll() is None
        finally:
            target.stop(signal.SIGKILL)
    _check_answers(out)


def _check_answers(out: Path) -> None:
    got = _lines(out)
    kinds = [k for k, _ in got]
    data = {k: [v for kk, v in got if kk == k] for k in kinds}
    # Target info, asked for by QView on attach: QView read the 64-bit target's sizes.
    assert data["INFO"] == [f"{data['INFO'][0].split()[0]} objPtr 8 sig 2"]
    assert data["INFO"][0][:6].isdigit() and data["INFO"][0][6] == "_"
    # Every command acknowledged, in the order sent (record ids of QS_RX_STATUS).
    acks = [int(v, 16) for v in data["QS_RX_STATUS"]]
    assert acks == [0x0A, 0x0B, 0x0D, 0x05, 0x0D, 0x0D, 0x10, 0x10, 0x0A, 0x10, 0x0A, 0x01]
    # The peeks: 16 bytes of Table_inst, then the value the poke wrote (after the
    # 4-byte timestamp: offset, size, count, data).
    first, second = (bytes.fromhex(v) for v in data["QS_PEEK_DATA"])
    assert first[4:8] == bytes([0, 0, 1, 16]) and len(first) == 8 + 16
    assert second[4:] == NMIN_OFFSET[TARGET].to_bytes(2, "little") + b"\x02\x01\x01\x00"
    # The query of the current state machine, and its line on QView's text channel.
    assert len(data["QS_QUERY_DATA"]) == 1
    assert any("Query-SM Obj=Table_inst,State=Table_serving" in t for t in data["TEXT"])
    # Events and the command are done (QS_TARGET_DONE); the first publish record
    # reached QView, the second was silenced by the global filter QView set.
    assert [int(v[-2:], 16) for v in data["QS_TARGET_DONE"]] == [0x10, 0x10, 0x10, 0x01]
    on = _nth(kinds, "QS_RX_STATUS", 7)  # the first publish acknowledged
    assert "QS_QF_PUBLISH" in kinds[on : kinds.index("QS_TARGET_DONE", on)]
    off = _nth(kinds, "QS_RX_STATUS", 9)  # the filter without QF acknowledged
    assert "QS_QF_PUBLISH" not in kinds[off : kinds.index("QS_TARGET_DONE", off)]
    # The text channel carried mcuprof's QSPY lines, acknowledgements included.
    assert any("Trg-Ack  QS_RX_COMMAND" in t for t in data["TEXT"])


def _nth(items: list[str], item: str, n: int) -> int:
    """Index of the n-th (1-based) occurrence of item."""
    found = [i for i, x in enumerate(items) if x == item]
    return found[n - 1]
