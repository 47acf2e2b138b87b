"""Tick arithmetic: unwrapping 32-bit timestamps in stream order (CLARIFICATIONS.md)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..protocol import DEFAULT_TIMER_FREQ
from .keyed import KeyedCalls

_WRAP = 1 << 32


def unwrap_exits(
    entry: np.ndarray,
    duration: np.ndarray,
    last_exit: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Unwrapped 64-bit exit ticks for records in stream order (into ``out``, int64, when
    given).

    ``last_exit`` is the unwrapped exit of the record before these, or None when
    these are the first records of the stream (the first exit is taken as it is).
    """
    # uint32 arithmetic wraps modulo 2**32 by itself, and a wrapped step read as int32 is
    # the signed step (back when >= 2**31): four passes, reading the (strided) record
    # fields in place, instead of copying them out first.
    n = len(entry)
    if n == 0:
        return np.empty(0, np.int64) if out is None else out
    e = entry if entry.dtype == np.uint32 else entry.astype(np.uint32)
    d = duration if duration.dtype == np.uint32 else duration.astype(np.uint32)
    raw = np.add(e, d)
    if last_exit is None:
        last_exit = int(raw[0])
    step = np.empty(n, np.uint32)
    step[0] = (int(raw[0]) - last_exit) & (_WRAP - 1)
    np.subtract(raw[1:], raw[:-1], out=step[1:])
    del raw
    # Widen first, then sum in place: cumsum with dtype= casts element by element
    # through a buffer, ten times slower than the two plain passes.
    if out is None:
        out = step.view(np.int32).astype(np.int64)
    else:
        np.copyto(out, step.view(np.int32))
    out[0] += last_exit  # the base rides in the first step: no pass to add it
    np.cumsum(out, out=out)
    return out


class PlacedRecords(NamedTuple):
    """A batch of records on the unwrapped time line."""

    entry: np.ndarray  # int64 ticks
    duration: np.ndarray  # uint32 ticks
    last_exit: int  # to pass on with the next batch
    lo: int  # earliest entry
    hi: int  # latest exit


def place(
    records: np.ndarray,
    last_exit: int | None,
    entry: np.ndarray | None = None,
    duration: np.ndarray | None = None,
) -> PlacedRecords:
    """``records`` (in stream order, after those whose last exit was ``last_exit``) with
    unwrapped entries, and the span they cover: what every consumer of a record stream
    (the profile, its whole-capture builder, compare's reduction) starts with. The
    entries and durations go into ``entry`` (int64) and ``duration`` (uint32) when given
    (a builder's columns: no copy of them after)."""
    if duration is None:
        dur = records["duration"].astype(np.uint32)
    else:
        dur = duration
        np.copyto(dur, records["duration"], casting="unsafe")
    exits = unwrap_exits(records["entry_time"], dur, last_exit, entry)
    last = int(exits[-1])
    hi = int(exits.max())
    entry = np.subtract(exits, dur, out=exits)  # in place: one int64 column less
    return PlacedRecords(entry, dur, last, int(entry.min()), hi)


def concat_records(batch: list[Any]) -> Any:
    """np.concatenate for record arrays, as bytes: concatenating structured arrays
    promotes their fields once per array (~15 µs each, most of a packet's cost). Keyed
    calls (keyed.py) are joined as such."""
    if len(batch) == 1:
        return batch[0]
    if isinstance(batch[0], KeyedCalls):
        return KeyedCalls.concat(batch)
    dtype = batch[0].dtype
    raw = np.concatenate([np.ascontiguousarray(r).view(np.uint8) for r in batch])
    return raw.view(dtype)


def timer_freq_or_default(timer_freq: int | None) -> int:
    return timer_freq if timer_freq else DEFAULT_TIMER_FREQ


class TickClock:
    """Ticks to microseconds, and a capture's span in both, defined once for every
    profile-shaped object (Profile, and stored.StoredProfile answering for one): each
    has ``timer_freq`` and its first and last ticks, ``t0_ticks`` and ``t1_ticks``."""

    timer_freq: int
    t0_ticks: int
    t1_ticks: int

    def us(self, ticks: Any) -> Any:
        """Ticks (scalar or array) to microseconds."""
        return ticks * (1e6 / self.timer_freq)

    def ticks(self, us: float) -> float:
        return us * self.timer_freq / 1e6

    @property
    def t0_us(self) -> float:
        return float(self.us(self.t0_ticks))

    @property
    def t1_us(self) -> float:
        return float(self.us(self.t1_ticks))

    @property
    def duration_us(self) -> float:
        return self.t1_us - self.t0_us
