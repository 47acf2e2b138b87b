"""Captures of one small tree with a realistic spread of call times, for the gate's
statistical tests: control_iteration -> sensor_take, fir_filter."""

from __future__ import annotations

import numpy as np

from mcuprof.protocol import (
    RECORD_DTYPE,
    Metadata,
    Status,
    encode_metadata,
    encode_profile_data,
    encode_status,
)

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


def lossy_stream(
    rec: np.ndarray,
    dropped: np.ndarray,
    meta: Metadata,
    *,
    per_packet: int = 32,
    status_every: int = 4,
    lag: int = 16,
) -> bytes:
    """``rec`` (capture order) as the device sends it when it drops the records where
    ``dropped`` is True: the kept ones in packets, and a STATUS every ``status_every``
    packets with the counters as of ``lag`` records captured past the last one sent (so
    a status counts records still in the ring), the final one after the last packet."""
    kept_at = np.flatnonzero(~dropped)  # capture index of each kept record
    dropped_before = np.concatenate([[0], np.cumsum(dropped)])  # drops among the first i
    kept = rec[kept_at]
    parts = [encode_metadata(meta)]

    def status(captured: int) -> bytes:
        over = int(dropped_before[captured])
        return encode_status(Status(True, over, captured, 50))

    for n, i in enumerate(range(0, len(kept), per_packet)):
        parts.append(encode_profile_data(kept[i : i + per_packet]))
        if (n + 1) % status_every == 0:
            sent = min(i + per_packet, len(kept)) - 1
            parts.append(status(min(int(kept_at[sent]) + 1 + lag, len(rec))))
    parts.append(status(len(rec)))
    return b"".join(parts)
