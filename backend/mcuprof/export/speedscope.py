"""Speedscope file format: one evented profile in microseconds.

Schema: https://www.speedscope.app/file-format-schema.json
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import __version__
from ..profile import Profile, Window
from ..textrows import Buffer, Chars, Ints, build, whole_floats
from .frames import CALLS_PER_STEP, appearance, frame_file_line, frame_name
from .nesting import Calls, calls

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
_EVENTS = "\x00events\x00"


def render(profile: Profile, name: str = "mcuprof capture", window: Window = None) -> str:
    buf = io.BytesIO()
    _write(profile, buf.write, name=name, window=window)
    return buf.getvalue().decode("ascii")


def write(
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    title: tuple[str, str] | None = None,
) -> None:
    """The export contract (export/__init__.py); the document is named as always."""
    _write(profile, out, window=window)


def _write(
    profile: Profile,
    out: Callable[[bytes], Any],
    name: str = "mcuprof capture",
    window: Window = None,
) -> None:
    """The document (ASCII), written piece by piece to ``out``: memory stays bounded by
    the calls' arrays (about 20 bytes per call) and a chunk of text."""
    c = calls(profile, window)
    to_us = 1e6 / profile.timer_freq
    frames, rank = _frames(profile, c)
    start_value, end_value = _bounds(profile, c, window, to_us)
    doc = {
        "$schema": SCHEMA,
        "shared": {"frames": frames},
        "profiles": [
            {
                "type": "evented",
                "name": name,
                "unit": "microseconds",
                "startValue": start_value,
                "endValue": end_value,
                "events": _EVENTS,
            }
        ],
        "name": name,
        "activeProfileIndex": 0,
        "exporter": f"mcuprof {__version__}",
    }
    head, tail = json.dumps(doc, separators=(",", ":")).split(json.dumps(_EVENTS))
    out(head.encode("ascii") + b"[")
    buf = Buffer()
    for p0, p1, carry in _chunks(c):
        out(_text(c, rank, to_us, p0, p1, carry, buf))
    out(b"]" + tail.encode("ascii"))


def _frames(profile: Profile, c: Calls) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The shared frames, in order of first appearance in the calls, and each frame
    id's rank among them (indexed by id + 1: "[unknown]" is -1)."""
    fids = appearance(c.frame, len(profile.frames))
    # Ranks in 32 unsigned bits: the digits' dtype, so the events' column needs no copy.
    rank = np.zeros(len(profile.frames) + 1, np.uint32)
    rank[fids + 1] = np.arange(len(fids), dtype=np.uint32)
    frames: list[dict[str, Any]] = []
    for fid in fids.tolist():
        frame: dict[str, Any] = {"name": frame_name(profile, fid)}
        file, line = frame_file_line(profile, fid)
        if file is not None:
            frame["file"] = file
        if line is not None:
            frame["line"] = line
        frames.append(frame)
    return frames, rank


def _bounds(profile: Profile, c: Calls, window: Window, to_us: float) -> tuple[float, float]:
    """The profile's start and end values (µs): the window's or the capture's, widened
    to the calls'."""
    if window is not None:
        a, b = sorted(window)
        start_value = (profile.ticks(a) - profile.t0_ticks) * to_us
        end_value = (profile.ticks(b) - profile.t0_ticks) * to_us
    else:
        start_value, end_value = 0.0, (profile.t1_ticks - profile.t0_ticks) * to_us
    if len(c):
        start_value = min(start_value, float(c.start[0]) * to_us)
        end_value = max(end_value, float(c.end_max) * to_us)  # x·c is monotonic in x
    return start_value, end_value


def _chunks(c: Calls) -> Iterator[tuple[int, int, np.ndarray]]:
    """The chunks of calls (first, end) and the calls still open when each begins (the
    enclosing chain, outermost first): those whose subtree of ``size`` calls ends after
    the chunk's first call."""
    n = len(c)
    carry = np.zeros(0, np.int64)
    for p0 in range(0, n, CALLS_PER_STEP):
        p1 = min(p0 + CALLS_PER_STEP, n)
        yield p0, p1, carry
        left = np.flatnonzero(np.arange(p0, p1) + c.size[p0:p1] > p1) + p0
        carry = np.concatenate([carry[carry + c.size[carry] > p1], left])


def _text(
    c: Calls, rank: np.ndarray, to_us: float, p0: int, p1: int, carry: np.ndarray, buf: Buffer
) -> np.ndarray | bytes:
    """The events of chunk ``p0``..``p1`` as text, each after a comma but the document's
    first: whole-number times (a 1 MHz timer's) formatted with array operations, others
    one by one (a float's repr, the same text)."""
    kind, frame, at = _events(c, rank, p0, p1, carry)
    lead = 1 if p0 == 0 else 0
    at = at.astype(np.float64) * to_us
    at_int = whole_floats(at)
    if at_int is not None:
        row = [b',{"type":"', Chars(kind), b'","frame":', Ints(frame), b',"at":', Ints(at_int)]
        return build(len(kind), [*row, b".0}"], buf)[lead:]
    text = ",".join(
        f'{{"type":"{chr(op)}","frame":{fi},"at":{t!r}}}'
        for op, fi, t in zip(kind.tolist(), frame.tolist(), at.tolist(), strict=True)
    )
    return (text if lead else "," + text).encode("ascii")


def _events(
    c: Calls, rank: np.ndarray, p0: int, p1: int, carry: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Open and close events (kind 'O'/'C', frame rank, time in ticks) in document
    order, from the open of call ``p0`` to that of ``p1`` (or the end): a call's subtree
    holds ``size`` calls, so its close is 2·size − 1 events after its open; the opens of
    the chunk fall after the closes of the calls that end before them. ``carry`` are the
    calls open before ``p0`` (``_chunks``): the k-th opened 2·j − k events into the
    document (j earlier opens, j − k closes), and their closes in the chunk are placed
    from that."""
    m = p1 - p0
    size_c = c.size[carry].astype(np.int64)
    e0 = 2 * p0 - len(carry)  # the first event of the chunk: the open of p0
    x = np.arange(m, dtype=np.int64)
    s = c.size[p0:p1].astype(np.int64)
    # closed[k]: calls closed before the open of local call k (subtrees ending by it).
    ends_at = x + s
    np.minimum(ends_at, m + 1, out=ends_at)
    counts = np.bincount(ends_at, minlength=m + 2)
    np.add.at(counts, np.minimum(carry + size_c - p0, m + 1), 1)
    closed = np.cumsum(counts)
    size = m + int(closed[m])
    # One slot past the end takes the closes that fall in later chunks.
    kind = np.full(size + 1, ord("C"), np.uint8)
    frame = np.empty(size + 1, rank.dtype)
    at = np.empty(size + 1, c.start.dtype)
    opens = closed[:m]
    opens += x
    kind[opens] = ord("O")
    f = np.take(rank, c.frame[p0:p1] + 1)
    frame[opens] = f
    at[opens] = c.start[p0:p1]
    s *= 2
    s -= 1
    s += opens  # each call's close
    np.minimum(s, size, out=s)
    frame[s] = f
    at[s] = c.ends(slice(p0, p1))
    g = 2 * carry - np.arange(len(carry)) + 2 * size_c - 1  # their closes' events
    g -= e0
    shut = g < size
    frame[g[shut]] = np.take(rank, c.frame[carry[shut]] + 1)
    at[g[shut]] = c.ends(carry[shut])
    return kind[:size], frame[:size], at[:size]
