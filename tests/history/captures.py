"""Captures whose one function's mean call time is chosen: the series history reads."""

from __future__ import annotations

import numpy as np

from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data

STEP_ADDR = 0x0800_1000  # the function history follows (no ELF: named by its address)
OTHER_ADDR = 0x0800_2000
STEP_LABEL = "0x08001000"


def capture(mean_ticks: float, seed: int, calls: int = 200, build_id: int = 0x1234) -> bytes:
    """``calls`` top-level calls of STEP_ADDR around ``mean_ticks`` (1 µs ticks), each
    followed by one call of OTHER_ADDR."""
    rng = np.random.default_rng(seed)
    durs = np.maximum(1, np.round(rng.normal(mean_ticks, mean_ticks * 0.01, calls)))
    rec = np.zeros(2 * calls, dtype=RECORD_DTYPE)
    t = 1000
    for i, d in enumerate(durs.astype(np.int64)):
        rec[2 * i] = (STEP_ADDR, t, d, 0)
        rec[2 * i + 1] = (OTHER_ADDR, t + d + 1, 5, 0)
        t += int(d) + 10
    meta = Metadata(48_000_000, 1_000_000, build_id, "test")
    parts = [encode_metadata(meta)]
    parts += [encode_profile_data(rec[i : i + 32]) for i in range(0, len(rec), 32)]
    return b"".join(parts)
