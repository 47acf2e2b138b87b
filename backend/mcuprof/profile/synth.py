"""Simulated call trees with known truth, emitted as the device would (exit order).

Pure functions of a seeded ``random.Random``: used by the round-trip tests and the
benchmark, and reusable by a device simulator.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..protocol import RECORD_DTYPE


@dataclass
class Trace:
    """Calls in stream (exit) order with their true parents."""

    func: np.ndarray  # int64 index into the function list
    entry: np.ndarray  # int64 absolute ticks (not wrapped)
    duration: np.ndarray  # int64 ticks
    depth: np.ndarray  # int64
    parent: np.ndarray  # int64 stream index of the caller, -1 for a root

    def __len__(self) -> int:
        return len(self.func)

    def records(self, addrs: np.ndarray) -> np.ndarray:
        """RECORD_DTYPE records with the given raw address per call, ticks wrapped to 32 bits."""
        out = np.empty(len(self), RECORD_DTYPE)
        out["func_addr"] = addrs
        out["entry_time"] = self.entry & 0xFFFFFFFF
        out["duration"] = self.duration
        out["depth"] = self.depth
        return out


def generate(
    rng: random.Random,
    n_funcs: int,
    n_calls: int,
    *,
    max_depth: int = 8,
    max_children: int = 4,
    isr_funcs: Sequence[int] = (),
    isr_rate: float = 0.0,
    start_tick: int = 0,
    max_gap: int = 20,
    recursive_rate: float = 0.0,
) -> Trace:
    """Random call forest of about ``n_calls`` calls over functions 0..n_funcs-1.

    Siblings are separated by at least one tick, so every parent is unambiguous under
    the reconstruction rule. An ISR (a function of ``isr_funcs``) can interrupt any call
    at any depth: it becomes one more child there, exactly as the depth counter on the
    device sees it. ``recursive_rate`` makes a call re-enter its own function.
    """
    func: list[int] = []
    entry: list[int] = []
    dur: list[int] = []
    depth: list[int] = []
    parent: list[int] = []
    normal = [f for f in range(n_funcs) if f not in set(isr_funcs)] or list(range(n_funcs))

    def call(f: int, d: int, t: int) -> tuple[int, list[int]]:
        """Emit the subtree of one call entered at t; returns (exit, child stream ids)."""
        cur = t + rng.randint(0, max_gap)
        kids: list[int] = []
        budget = n_calls - len(func)
        n_kids = 0 if d >= max_depth or budget <= 1 else rng.randint(0, max_children)
        isr_at = rng.randint(0, n_kids) if isr_funcs and rng.random() < isr_rate else -1
        for i in range(n_kids + 1):
            if i == isr_at:
                exit_, sid = _child(rng.choice(list(isr_funcs)), d + 1, cur)
                kids.append(sid)
                cur = exit_ + 1 + rng.randint(0, max_gap)
            if i < n_kids and len(func) < n_calls:
                g = f if rng.random() < recursive_rate else rng.choice(normal)
                exit_, sid = _child(g, d + 1, cur)
                kids.append(sid)
                cur = exit_ + 1 + rng.randint(0, max_gap)
        return cur + rng.randint(0, max_gap), kids

    def _child(f: int, d: int, t: int) -> tuple[int, int]:
        exit_, kids = call(f, d, t)
        sid = len(func)
        func.append(f)
        entry.append(t)
        dur.append(exit_ - t)
        depth.append(d)
        parent.append(-1)
        for k in kids:
            parent[k] = sid
        return exit_, sid

    t = start_tick
    while len(func) < n_calls:
        exit_, _ = _child(rng.choice(normal), 0, t)
        t = exit_ + 1 + rng.randint(0, max_gap)
    return Trace(
        np.array(func, np.int64),
        np.array(entry, np.int64),
        np.array(dur, np.int64),
        np.array(depth, np.int64),
        np.array(parent, np.int64),
    )


def addresses(
    rng: random.Random,
    trace: Trace,
    ranges: Sequence[tuple[int, int]],
    *,
    style: str = "entry",
    thumb: bool = False,
) -> np.ndarray:
    """A raw func_addr per call: the function's entry (``style="entry"``), a return
    address inside its body (``"return"``) or either at random (``"mixed"``); with the
    Thumb bit set when ``thumb``."""
    out = np.empty(len(trace), np.uint32)
    for i, f in enumerate(trace.func.tolist()):
        start, end = ranges[f]
        use_return = style == "return" or (style == "mixed" and rng.random() < 0.5)
        a = rng.randrange(start + 2, end) & ~1 if use_return and end - start > 2 else start
        out[i] = a | 1 if thumb else a
    return out


def flat(func: np.ndarray, duration: np.ndarray, gap: np.ndarray) -> Trace:
    """Root calls of known durations, one after the other in the order given: call i
    starts ``gap[i]`` ticks after call i - 1 returns (the first at ``gap[0]``). The truth
    for distribution tests: each function's per-call durations are exactly ``duration``'s."""
    duration = np.asarray(duration, np.int64)
    ends_before = np.concatenate(([0], np.cumsum(duration)[:-1]))
    entry = np.cumsum(np.asarray(gap, np.int64)) + ends_before
    n = len(duration)
    zeros = np.zeros(n, np.int64)
    return Trace(np.asarray(func, np.int64), entry, duration, zeros, zeros - 1)


def restarting_records(
    rng: random.Random, restarts: int, calls: int, n_funcs: int = 24
) -> list[np.ndarray]:
    """A capture of a board in a reset loop, or captures joined with ``cat``: ``restarts
    + 1`` runs of about ``calls`` calls each, every run's clock starting again near 0 (time
    goes back at each restart). One RECORD_DTYPE array per run; function i at 0x0800_0000
    + 0x40 * i."""
    runs = []
    for _ in range(restarts + 1):
        trace = generate(rng, n_funcs, calls, start_tick=rng.randint(0, 50), max_depth=5)
        runs.append(trace.records((0x0800_0000 + 0x40 * trace.func).astype(np.uint32)))
    return runs
