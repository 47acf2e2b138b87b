"""The reference QS capture and what QSPY 7.4 made of it (../shared/reference/qs/)."""

from __future__ import annotations

from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "qs"


@pytest.fixture(scope="session")
def ref_dir() -> Path:
    assert REFERENCE.is_dir(), f"reference files missing: {REFERENCE}"
    return REFERENCE


@pytest.fixture(scope="session")
def capture(ref_dir: Path) -> bytes:
    return (ref_dir / "dpp-posix64.bin").read_bytes()


@pytest.fixture(scope="session")
def qspy_lines(ref_dir: Path) -> list[str]:
    """QSPY's output bar its 3-line banner and its own <QSPY-> messages."""
    lines = (ref_dir / "dpp-posix64.qspy.txt").read_text().splitlines()[3:]
    return [line for line in lines if "<QSPY->" not in line]


@pytest.fixture(scope="session")
def ref_frames(ref_dir: Path) -> tuple[list[tuple[int, int, int, int, str]], dict[str, int]]:
    """frames.txt: (index, seq, rec, length, hex) per accepted frame, and the summary."""
    frames = []
    summary: dict[str, int] = {}
    for line in (ref_dir / "dpp-posix64.frames.txt").read_text().splitlines():
        if line.startswith("#FRAME"):
            _, index, seq, rec, length, hexdata = line.split()
            frames.append(
                (
                    int(index),
                    int(seq.split("=")[1]),
                    int(rec.split("=")[1]),
                    int(length.split("=")[1]),
                    hexdata,
                )
            )
        elif line.startswith("#SUMMARY"):
            for item in line.split()[1:]:
                key, value = item.split("=")
                summary[key] = int(value)
    return frames, summary
