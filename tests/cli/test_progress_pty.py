"""Progress bars of the whole-capture commands, seen through a real pty: a bar (bytes,
rate, time left, records) when stderr is a terminal, nothing when it is piped. The
"after a second" delay is set to 0 through the environment, so nothing is timed."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pytest

from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    n = 20_000
    recs = np.zeros(n, RECORD_DTYPE)
    recs["func_addr"] = 0x0800_0100 + 0x20 * (np.arange(n) % 7)
    recs["entry_time"] = np.arange(n) * 10
    recs["duration"] = 5
    body = b"".join(encode_profile_data(recs[i : i + 20]) for i in range(0, n, 20))
    path = tmp_path_factory.mktemp("progress") / "cap.bin"
    path.write_bytes(encode_metadata(Metadata(168_000_000, 1_000_000, 0, "pty")) + body)
    return path


def _commands(cap: Path, out: Path) -> dict[str, list[str]]:
    return {
        "info": ["info", str(cap)],
        "export": ["export", str(cap), "-f", "speedscope", "-o", str(out)],
        "compare": ["compare", str(cap), str(cap)],
        "import": ["sessions", "import", str(cap), "--data-dir", str(out.with_name("store"))],
    }


def _env() -> dict[str, str]:
    return {**os.environ, "MCUPROF_PROGRESS_AFTER_S": "0", "COLUMNS": "120"}


@pytest.mark.parametrize("name", ["info", "export", "compare", "import"])
def test_bar_on_a_terminal(capture: Path, tmp_path: Path, name: str) -> None:
    argv = _commands(capture, tmp_path / "out.json")[name]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))  # a terminal
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcuprof", *argv],
            stdout=subprocess.DEVNULL,
            stderr=slave,
            env=_env(),
        )
        os.close(slave)
        err = bytearray()
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            err += chunk
        assert proc.wait(timeout=60) == 0, err.decode(errors="replace")
    finally:
        os.close(master)
    text = err.decode(errors="replace")
    # export without --elf ends with one line saying names are addresses, after the bar
    text, _, warning = text.partition("mcuprof: warning: no --elf")
    assert bool(warning) == (name == "export")
    both = name == "compare"  # one bar over both captures
    what = {"compare": "reading captures", "import": "importing capture"}
    assert f"mcuprof: {what.get(name, 'reading capture')}:" in text
    assert f"{40_000 if both else 20_000:,} records" in text  # the decoder's count
    assert "B/s" in text and "<" in text  # the rate, and elapsed<left as tqdm prints them
    assert "100%" in text
    # the bar's line is cleared at the end (tqdm blanks it; a status line is erased)
    assert text.rstrip(" ").endswith("\r") or text.endswith("\r\x1b[K")
    step = {"export": "rendering speedscope", "compare": "comparing"}.get(name)
    assert step is None or f"mcuprof: {step}" in text  # then what follows the read


@pytest.mark.parametrize("name", ["info", "export", "compare", "import"])
def test_quiet_when_piped(capture: Path, tmp_path: Path, name: str) -> None:
    argv = _commands(capture, tmp_path / "out.json")[name]
    proc = subprocess.run(
        [sys.executable, "-m", "mcuprof", *argv],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    # no bar; export without --elf says in one line that names are addresses
    expected = ["mcuprof: warning: no --elf"] if name == "export" else []
    assert [line[:26] for line in proc.stderr.splitlines()] == expected
    assert proc.stdout or name == "export"  # the command's own output is there (export: -o)
