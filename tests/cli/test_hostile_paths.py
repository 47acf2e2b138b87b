"""Special files named where a capture, an ELF or an import is expected: refused at
once with one line, never read until memory runs out, never waited on."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mcuprof.errors import UserError
from mcuprof.files import read_file
from mcuprof.paths import default_elf

from .test_info import make_capture

pytestmark = pytest.mark.timeout(300)


def mcuprof(*args: str) -> subprocess.CompletedProcess[str]:
    # A FIFO or /dev/zero that is read would hang or exhaust memory: the timeout and a
    # memory limit turn either into a failure instead of taking the machine down.
    return subprocess.run(
        [sys.executable, "-m", "mcuprof", *args],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=_limit_memory,
    )


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.fixture
def specials(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    return {"/dev/zero": "a character device", str(fifo): "a FIFO", str(folder): "a directory"}


@pytest.fixture
def capture(tmp_path: Path) -> str:
    path = tmp_path / "cap.bin"
    make_capture(path)
    return str(path)


def _one_line_refusal(result: subprocess.CompletedProcess[str], path: str, what: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"mcuprof: error: {path}: is ")
    assert what in result.stderr


def test_capture_paths_must_be_regular_files(specials, capture, tmp_path) -> None:
    elf = str(default_elf())
    data = str(tmp_path / "data")
    cases = []
    for path, what in specials.items():
        for argv in (
            ["info", path],
            ["export", path, "-f", "folded"],
            ["sessions", "import", path, "--data-dir", data],
            ["compare", path, capture],
            ["compare", capture, path],
        ):
            cases.append((argv, path, what))
        for argv in (
            ["info", capture, "--elf", path],
            ["export", capture, "--elf", path, "-f", "folded"],
            ["sessions", "import", capture, "--elf", path, "--data-dir", data],
            ["compare", capture, capture, "--elf", path],
            ["compare", capture, capture, "--elf", elf, "--elf-new", path],
        ):
            cases.append((argv, path, what))
    # Thirty interpreters: two at a time, so a loaded machine does not reach the test's timeout.
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda case: mcuprof(*case[0]), cases))
    for (_, path, what), result in zip(cases, results, strict=True):
        _one_line_refusal(result, path, what)


def test_size_cap_refuses_before_reading(tmp_path) -> None:
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(100_000)  # sparse: the size is what is judged
    with pytest.raises(UserError, match=r"big.bin: capture file too large .*limit is 1,000 bytes"):
        read_file(big, "capture file", limit=1000)
    assert len(read_file(big, "capture file", limit=100_000)) == 100_000


def test_a_size_just_over_the_cap_says_a_true_figure(tmp_path) -> None:
    """Issue 35: "too large (1,024 MiB; the limit is 1,024 MiB)" for a file one byte over."""
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate((1 << 30) + 1)  # sparse
    with pytest.raises(UserError) as info:
        read_file(big, "capture file", limit=1 << 30)
    assert str(info.value).endswith(
        "too large (1,073,741,825 bytes; the limit is 1,073,741,824 bytes)"
    )
    with pytest.raises(UserError, match=r"too large \(1,024 MiB; the limit is 1 MiB\)"):
        read_file(big, "capture file", limit=1 << 20)


def test_a_symlink_to_a_regular_file_is_fine(capture, tmp_path) -> None:
    link = tmp_path / "link.bin"
    link.symlink_to(capture)
    result = mcuprof("info", str(link), "--json")
    assert result.returncode == 0, result.stderr
    assert '"records"' in result.stdout or result.stdout.startswith("{")
