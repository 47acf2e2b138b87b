"""``mcuprof sessions show`` on QS sessions stored without their counts: one stored by
``mcuprof qs scenario`` (it stores none), and one whose writer was killed with -9
(it never wrote them). Both crashed with ``internal error: KeyError: 'records'``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcuprof.cli import main
from mcuprof.store import SessionStore

SCRIPT = '{"reset": true}\n{"wait_steps": 5}\n'
# A writer that stores the bytes, then dies as kill -9 leaves it: no finish, no counts.
KILLED = """
import os, signal, sys
from pathlib import Path
from mcuprof.store import SessionStore
writer = SessionStore(Path(sys.argv[1])).create("cut short", source="live", kind="qs")
writer.append(Path(sys.argv[2]).read_bytes())
writer.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture(scope="module")
def scenario_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    base = tmp_path_factory.mktemp("show_counts")
    script = base / "boot.jsonl"
    script.write_text(SCRIPT)
    data = base / "data"
    argv = ["qs", "scenario", str(script), "--port", "sim://?proto=qs", "--data-dir", str(data)]
    assert main(argv) == 0
    with SessionStore(data) as store:
        (info,) = store.list()
    assert info.source == "scenario" and info.link_stats is None
    return data, info.id


def show(capsys: pytest.CaptureFixture[str], data: Path, sid: int) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["sessions", "show", str(sid), "--json", "--data-dir", str(data)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert main(["sessions", "show", str(sid), "--data-dir", str(data)]) == 0
    return shown, capsys.readouterr().out


def test_a_scenario_session_shows_its_counts(capsys, scenario_session) -> None:
    data, sid = scenario_session
    shown, text = show(capsys, data, sid)
    steps = shown["capture"]["rtc_steps"]
    assert steps >= 5 and shown["capture"]["records"] == 3 * steps
    assert f"records     {3 * steps:,} over - s" in text


def test_a_session_cut_by_kill_9_shows_its_counts(capsys, scenario_session, tmp_path) -> None:
    data, sid = scenario_session
    raw = tmp_path / "received.bin"
    with SessionStore(data) as store:
        raw.write_bytes(store.raw(sid))
    killed = subprocess.run([sys.executable, "-c", KILLED, str(data), str(raw)], check=False)
    assert killed.returncode == -9
    with SessionStore(data) as store:
        info = max(store.list(), key=lambda s: s.id)
    assert info.name == "cut short" and info.link_stats is None
    shown, text = show(capsys, data, info.id)
    assert shown["status"] == "interrupted"
    assert shown["capture"]["records"] == show(capsys, data, sid)[0]["capture"]["records"]
    assert "records " in text and "internal error" not in text
