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


def bursty_capture(
    firmware,
    seed: int,
    *,
    grow: float = 1.0,
    iterations: int = 8_000,
    storms: int = 10,
    storm_calls: int = 500,
    drop_share: float = 0.05,
) -> bytes:
    """A periodic control loop (control_iteration -> sensor_take, control_step, its time
    log-normal, times ``grow``) with ``storms`` bursts of fir_filter calls (and a few
    fir_filter calls between them); ``drop_share`` of all records is dropped from the
    middle of the bursts, where calls are densest, and the STATUS packets say so."""
    rng = np.random.default_rng(seed)
    period = 3000
    t0 = 1000 + np.arange(iterations, dtype=np.int64) * period
    take = rng.integers(6, 11, iterations)
    step = np.maximum(1, np.round(rng.lognormal(np.log(100.0), 0.4, iterations) * grow))
    step = step.astype(np.int64)
    s_entry = t0 + 2
    c_entry = s_entry + take + 1
    quiet = t0[::20] + 600  # fir_filter between the bursts
    burst_at = rng.choice(iterations - 1, storms, replace=False)
    burst = (t0[burst_at][:, None] + 700 + 4 * np.arange(storm_calls)).ravel()
    parts = [
        ("sensor_take", s_entry, take, 1),
        ("control_step", c_entry, step, 1),
        ("control_iteration", t0, c_entry + step + 2 - t0, 0),
        ("fir_filter", quiet, np.full(len(quiet), 3), 0),
        ("fir_filter", burst, rng.integers(1, 4, len(burst)), 0),
    ]
    rec = np.zeros(sum(len(p[1]) for p in parts), dtype=RECORD_DTYPE)
    i = 0
    for name, entry, dur, depth in parts:
        j = i + len(entry)
        rec["func_addr"][i:j] = firmware.addr(name)
        rec["entry_time"][i:j] = entry & 0xFFFFFFFF
        rec["duration"][i:j], rec["depth"][i:j] = dur, depth
        i = j
    exits = rec["entry_time"].astype(np.int64) + rec["duration"]
    rec = rec[np.argsort(exits, kind="stable")]
    in_burst = np.isin(rec["entry_time"].astype(np.int64), burst) & (rec["depth"] == 0)
    in_burst &= rec["func_addr"] == firmware.addr("fir_filter")
    dropped = np.zeros(len(rec), bool)
    per = round(drop_share * len(rec) / storms)
    starts = np.flatnonzero(in_burst & ~np.concatenate([[False], in_burst[:-1]]))
    for a in starts:  # the middle of each burst
        first = a + (storm_calls - per) // 2
        dropped[first : first + per] = True
    return lossy_stream(rec, dropped, firmware.meta)
