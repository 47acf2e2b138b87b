"""The measures an S12Z analysis is made of, one definition each (see analysis.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol.s12z import TSOVF, TSOVF_CYCLES, LineFormat

PTW = int(LineFormat.PTW)
PTIB = int(LineFormat.PTIB)
PTVB = int(LineFormat.PTVB)
PTS = int(LineFormat.PTS)

_BYTE_ONES = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount(words: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(words)
    return _BYTE_ONES[words.astype("<u4").view(np.uint8)]


def carried_cycles(lines: np.ndarray) -> np.ndarray:
    """Bus cycles each line adds to trace time (see analysis.py's docstring)."""
    fmt = lines["format"]
    flagged = (lines["info"] & TSOVF).astype(bool) & (fmt != PTW)
    stamp = np.where(fmt == PTVB, lines["stamp"].astype(np.int64), 0)
    return stamp + flagged * TSOVF_CYCLES


def cof_counts(lines: np.ndarray) -> tuple[int, int]:
    """(taken, not taken) over all direct COFs of ``lines``."""
    word = lines["cof_word"]
    total = int(lines["cofs"].sum(dtype=np.int64))
    # Clear the stop bit (lines without COFs have a word of 0), count the ones below it.
    stop = np.left_shift(np.uint32(1), lines["cofs"].astype(np.uint32))
    payload = np.where(word > 0, word ^ stop, np.uint32(0))
    taken = int(_popcount(payload).sum(dtype=np.int64))
    return taken, total - taken


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0


def us(cycles: float | None, bus_hz: float | None) -> float | None:
    if cycles is None or not bus_hz:
        return None
    return cycles * 1e6 / bus_hz


def spread(values: np.ndarray, bus_hz: float | None) -> dict[str, Any]:
    if not len(values):
        return {"count": 0}
    out: dict[str, Any] = {
        "count": len(values),
        "min": int(values.min()),
        "median": float(np.median(values)),
        "mean": float(values.mean()),
        "max": int(values.max()),
    }
    if bus_hz:
        out["unit_us"] = {k: us(out[k], bus_hz) for k in ("min", "median", "mean", "max")}
    return out
