"""Process start is part of every command: a whole-capture command imports what it
needs, not the web server, the plotting library or the ELF parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcuprof.protocol import Metadata, encode_metadata

# Never needed by a whole-capture command (tqdm only once a bar is shown on a terminal).
FORBIDDEN = [
    "fastapi", "uvicorn", "starlette", "plotly", "elftools", "serial", "tqdm",
    "mcuprof.web", "mcuprof.link", "mcuprof.qs", "mcuprof.s12z",
]  # fmt: skip
PROBE = (
    "import sys, json; from mcuprof.cli import main; rc = main(sys.argv[2:]); "
    "bad = json.loads(sys.argv[1]); "
    "hit = sorted(m for m in sys.modules if any(m == b or m.startswith(b + '.') for b in bad)); "
    "print(json.dumps([rc, hit]), file=sys.stderr)"
)


@pytest.mark.parametrize(
    ("argv", "also"),
    [
        (["info", "@CAP@"], ["mcuprof.diff", "mcuprof.store", "mcuprof.export"]),
        (["export", "@CAP@", "-f", "folded"], ["mcuprof.diff", "mcuprof.store"]),
        (["export", "@CAP@", "-f", "speedscope"], ["mcuprof.diff", "mcuprof.store"]),
        (["compare", "@CAP@", "@CAP@"], []),  # may open the session store, by id
    ],
)
def test_whole_capture_commands_import_only_what_they_need(
    tmp_path: Path, argv: list[str], also: list[str]
) -> None:
    cap = tmp_path / "cap.bin"
    cap.write_bytes(encode_metadata(Metadata(1, 1_000_000, 0, "x")))
    args = [str(cap) if a == "@CAP@" else a for a in argv]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(FORBIDDEN + also), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rc, loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    assert loaded == [], loaded
    assert rc in (0, 2)  # compare refuses a capture without records, in one line


def test_help_still_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcuprof", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    for name in ("compare", "export", "info", "record", "serve", "sessions", "simulate"):
        assert name in out


def _capture(path: Path) -> Path:
    import numpy as np

    from mcuprof.protocol import RECORD_DTYPE, encode_profile_data

    recs = np.zeros(3, RECORD_DTYPE)
    recs["func_addr"] = [0x100, 0x200, 0x100]
    recs["entry_time"] = [1, 0, 10]
    recs["duration"] = [2, 5, 3]
    recs["depth"] = [1, 0, 0]
    path.write_bytes(encode_metadata(Metadata(1, 1_000_000, 0, "x")) + encode_profile_data(recs))
    return path


def test_quick_exit_writes_everything_and_keeps_the_status(tmp_path: Path) -> None:
    """The whole-capture commands leave without the interpreter's teardown: what they
    print to a pipe is all there, atexit handlers still run, and the status is theirs."""
    cap = _capture(tmp_path / "cap.bin")
    run = [sys.executable, "-m", "mcuprof"]
    piped = subprocess.run([*run, "export", str(cap), "-f", "folded"], capture_output=True)
    assert piped.returncode == 0
    out = tmp_path / "out.folded"
    subprocess.run([*run, "export", str(cap), "-f", "folded", "-o", str(out)], check=True)
    assert piped.stdout == out.read_bytes() != b""
    # An atexit handler registered by the command's run (here: through a wrapper).
    probe = (
        "import atexit, sys; from mcuprof import cli; "
        "atexit.register(lambda: print('atexit ran', file=sys.stderr)); "
        "sys.argv = ['mcuprof', *sys.argv[1:]]; cli.run()"
    )
    done = subprocess.run([sys.executable, "-c", probe, "info", str(cap)], capture_output=True)
    assert done.returncode == 0
    assert b"records       3" in done.stdout
    assert done.stderr.strip().endswith(b"atexit ran")
    bad = subprocess.run([*run, "info", str(tmp_path / "missing.bin")], capture_output=True)
    assert bad.returncode == 2
    assert bad.stderr.startswith(b"mcuprof: error: ") and bad.stderr.count(b"\n") == 1
