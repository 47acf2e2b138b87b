"""``mcuprof qs scenario`` against the QS demo under QEMU: a run is stored as a session and
its RTC steps reported; ``--baseline`` gates with compare's statistics. A build with a
deliberately slow Monitor step (QSDEMO_DELAY) fails the gate against the normal build's
session; the normal build against itself passes (issue 25, point 6)."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
from tests.conftest import ROOT

from mcuprof.cli import main
from mcuprof.qemu import QemuProcess
from mcuprof.store import SessionStore

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(
        shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
        reason="needs arm-none-eabi-gcc and qemu-system-arm (make sysdeps installs them)",
    ),
]

# Reset the demo, post a RATE event to Blinky by name, tick, and wait for 150 steps
# (about 1.3 s of the demo's time: the Monitor takes 100 samples a second).
SCRIPT = """\
# the QS demo: Blinky, Button, Monitor
{"reset": true}
{"glb_filter": "on"}
{"post": "RATE_SIG", "to": "l_blinky", "params": "1e00"}
{"tick": 2}
{"wait_steps": 150}
"""
DELAY = 100  # spin-loop turns added to each Monitor SAMPLE step: about 3x its time


@pytest.fixture(scope="module")
def normal_elf(firmware_build: Path) -> Path:
    return firmware_build / "mcuprof-qsdemo.elf"


@pytest.fixture(scope="module")
def slow_elf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("qsdemo-slow")
    done = subprocess.run(
        ["make", "-C", str(ROOT / "firmware"), f"BUILD_DIR={out}",
         f"QS_DEFS=-DQSDEMO_DELAY={DELAY}", "qsdemo"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out / "mcuprof-qsdemo.elf"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("scenario")
    (d / "demo.jsonl").write_text(SCRIPT)
    return d


class Done(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def scenario(elf: Path, workdir: Path, *extra: str) -> tuple[Done, int]:
    """``mcuprof qs scenario`` in this process (QEMU is the child): no interpreter start
    per run."""
    out, err = io.StringIO(), io.StringIO()
    with QemuProcess(elf) as proc:
        argv = [
            "qs",
            "scenario",
            str(workdir / "demo.jsonl"),
            "--data-dir",
            str(workdir / "data"),
            "--port",
            f"socket://127.0.0.1:{proc.port}",
            *extra,
        ]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    done = Done(code, out.getvalue(), err.getvalue())
    m = re.search(r"stored as session (\d+)", done.stderr)
    assert m, done.stderr
    return done, int(m.group(1))


@pytest.fixture(scope="module")
def baseline(normal_elf: Path, workdir: Path) -> tuple[Done, int]:
    return scenario(normal_elf, workdir)


def test_a_run_is_stored_and_its_steps_reported(baseline, workdir: Path) -> None:
    done, sid = baseline
    assert done.returncode == 0, done.stderr
    rows = {tuple(line.split()[:3]): line.split() for line in done.stdout.splitlines()[1:]}
    sample = rows["l_monitor", "monitor_collecting", "SAMPLE_SIG"]
    assert int(sample[3]) >= 100 and 0 < int(sample[5]) <= float(sample[6]) <= int(sample[7])
    # The posted RATE event was dispatched: Blinky's RATE step (in `off` or `on`).
    assert {k for k in rows if k[0] == "l_blinky" and k[2] == "RATE_SIG"}
    store = SessionStore(workdir / "data", autoflush=False)
    try:
        info = store.get(sid)
        assert (info.kind, info.status, info.source) == ("qs", "complete", "scenario")
        assert len(store.raw(sid)) > 1000  # the bytes the target sent
    finally:
        store.close()


def test_the_unchanged_build_passes_the_gate(baseline, normal_elf: Path, workdir: Path) -> None:
    done, _ = scenario(normal_elf, workdir, "--baseline", str(baseline[1]))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Regressions (grew more than 10%): 0" in done.stdout


def test_a_slowed_handler_fails_the_gate(baseline, slow_elf: Path, workdir: Path) -> None:
    done, _ = scenario(slow_elf, workdir, "--baseline", str(baseline[1]))
    assert done.returncode == 1, done.stdout + done.stderr
    regressions = done.stdout.split("Regressions (grew more than 10%): 1")[1]
    assert regressions.splitlines()[2].split()[0] == "SAMPLE_SIG"
    assert "FAIL: 1 function(s) grew" in done.stdout


def test_a_refusal_stops_the_run_with_one_line_and_keeps_the_session(
    normal_elf: Path, tmp_path: Path
) -> None:
    # Ten parameter bytes: more than the demo's 12-byte pool block holds, so the target
    # acknowledges the event, then refuses it (Trg-ERR).
    (tmp_path / "demo.jsonl").write_text(
        '{"wait_steps": 5}\n{"post": "RATE_SIG", "to": "l_blinky", "params": "000102030405060708ff"}\n'
        '{"wait_steps": 5}\n'
    )
    done, sid = scenario(normal_elf, tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == ["mcuprof: error: line 2: the target refused QS_RX_EVENT (Trg-ERR)"]
    store = SessionStore(tmp_path / "data", autoflush=False)
    try:
        info = store.get(sid)
        assert info.status == "interrupted" and len(store.raw(sid)) > 100
    finally:
        store.close()
