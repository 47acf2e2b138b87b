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
