"""Captures of one small tree with a realistic spread of call times, for the gate's
statistical tests: control_iteration -> sensor_take, fir_filter."""

from __future__ import annotations

import numpy as np

from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data

WRAP = 2**32 - 1  # the largest duration a record holds


def noisy_capture(
    firmware,
    fir_mean: float,
    calls: int,
    seed: int,
    *,
    outlier: bool = False,
    timer_hz: int | None = None,
) -> bytes:
    """control_iteration -> sensor_take, fir_filter (gamma spread per call); ``outlier``
    adds one more fir_filter call of 2**32 - 1 ticks at the end."""
    rng = np.random.default_rng(seed)
    rows = []
    t = 1000
    for _ in range(calls):
        start = t
        t += 3
        take = int(rng.integers(6, 11))
        rows.append((firmware.addr("sensor_take"), t, take, 1))
        t += take
        fir = max(1, round(rng.gamma(4.0, fir_mean / 4.0)))
        rows.append((firmware.addr("fir_filter"), t, fir, 1))
        t += fir + 2
        rows.append((firmware.addr("control_iteration"), start, t - start, 0))
        t += 5
    if outlier:
        rows.append((firmware.addr("fir_filter"), t, WRAP, 0))
    rec = np.zeros(len(rows), dtype=RECORD_DTYPE)
    arr = np.array(rows, dtype=np.int64)
    rec["func_addr"], rec["entry_time"] = arr[:, 0], arr[:, 1] & 0xFFFFFFFF
    rec["duration"], rec["depth"] = arr[:, 2], arr[:, 3]
    meta = firmware.meta
    if timer_hz is not None:
        meta = Metadata(meta.mcu_clock_hz, timer_hz, meta.elf_build_id, meta.fw_version)
    parts = [encode_metadata(meta)]
    parts += [encode_profile_data(rec[i : i + 32]) for i in range(0, len(rec), 32)]
    return b"".join(parts)
