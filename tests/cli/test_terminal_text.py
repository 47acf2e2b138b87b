"""Text from outside is data: names, notes and firmware strings that carry escape
sequences, NUL, bidirectional overrides or sheer length reach the terminal as visible
escapes, never as control codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.store import SessionStore

pytestmark = pytest.mark.timeout(120)

# Set the window title, clear the screen, ring the bell, overwrite the line, reverse
# the text that follows, hide a NUL: all in one name.
HOSTILE = "fw\x1b]0;pwned\x07\x1b[2J\r\x00\u202eexe.txt\u2066\x9b31m\x7f"
# What a terminal would obey. Newline stays (a line break is a line break).
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def mcuprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcuprof", *args], capture_output=True, text=True, timeout=60
    )


def _capture(fw: str) -> bytes:
    recs = np.zeros(3, dtype=RECORD_DTYPE)
    recs["func_addr"] = 0x08000101
    recs["entry_time"] = [10, 20, 30]
    recs["duration"] = 5
    return encode_metadata(Metadata(1_000_000, 1_000_000, 0, fw)) + encode_profile_data(recs)


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with SessionStore(data) as store:
        store.import_capture(HOSTILE, _capture("v1\x1b[5m\u202e"), None, notes="n\x1b[31m")
        store.import_capture("L" * 199 + "\u202e", _capture("ok"), None)
    return data


def test_sessions_list_and_show_escape_names(store_dir: Path) -> None:
    listed = mcuprof("sessions", "list", "--data-dir", str(store_dir))
    assert listed.returncode == 0, listed.stderr
    assert not CONTROL.search(listed.stdout), listed.stdout
    # (The store folds whitespace such as CR into single spaces in names.)
    assert "\\x1b]0;pwned\\x07\\x1b[2J \\x00\\u202eexe.txt" in listed.stdout
    # A very long name is cut to its column, so the table stays a table.
    long_row = next(line for line in listed.stdout.splitlines() if "LLLL" in line)
    assert long_row.endswith("L\u2026") and len(long_row) < 140
    for sid in ("1", "2"):
        shown = mcuprof("sessions", "show", sid, "--data-dir", str(store_dir))
        assert shown.returncode == 0, shown.stderr
        assert not CONTROL.search(shown.stdout), shown.stdout
    shown = mcuprof("sessions", "show", "1", "--data-dir", str(store_dir)).stdout
    assert "\\x1b[5m" in shown and "\\x1b[31m" not in shown.replace("\\x1b[31m", "", 1)
    # The data itself is kept exactly: JSON carries the name unchanged.
    raw = mcuprof("sessions", "list", "--json", "--data-dir", str(store_dir)).stdout
    assert " ".join(HOSTILE.split()) in [s["name"] for s in json.loads(raw)]


def test_rename_and_import_echo_escaped(store_dir: Path, tmp_path: Path) -> None:
    renamed = mcuprof("sessions", "rename", "2", "a\x1b[2Jb\u202ec", "--data-dir", str(store_dir))
    assert renamed.returncode == 0 and not CONTROL.search(renamed.stdout), renamed.stdout
    cap = tmp_path / "cap.bin"
    cap.write_bytes(_capture("x"))
    done = mcuprof(
        "sessions",
        "import",
        str(cap),
        "--name",
        "i\x1b]8;;http://x\x07",
        "--data-dir",
        str(store_dir),
    )
    assert done.returncode == 0 and not CONTROL.search(done.stdout), done.stdout
    assert "\\x1b]8;;http://x\\x07" in done.stdout


def test_errors_are_escaped(tmp_path: Path) -> None:
    result = mcuprof("info", str(tmp_path / "no\x1b[2Jsuch\u202e.bin"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and not CONTROL.search(result.stderr)
    assert "no\\x1b[2Jsuch\\u202e.bin: no such file" in result.stderr


def test_any_output_to_a_terminal_is_escaped(tmp_path: Path) -> None:
    # `info` prints the capture's name as given; on a terminal the name arrives escaped.
    cap = tmp_path / "a\x1b[2Jb\u202ec.bin"
    cap.write_bytes(_capture("fw"))
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcuprof", "info", str(cap)],
            stdout=slave,
            stderr=subprocess.PIPE,
        )
        os.close(slave)
        out = bytearray()
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(master)
    text = out.decode().replace("\r\n", "\n")  # the pty's own line discipline
    assert "a\\x1b[2Jb\\u202ec.bin" in text
    assert not CONTROL.search(text), text
