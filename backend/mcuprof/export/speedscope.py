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
from .frames import frame_file_line, frame_name
from .nesting import Calls, calls
from .rows import Chars, Ints, Scratch, render_rows, whole_floats

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
_EVENTS = "\x00events\x00"
_CHUNK = 1 << 15  # calls whose events are formatted and written at a time
_EXACT = 2**53  # integers below this are exact as floats


def render(profile: Profile, name: str = "mcuprof capture", window: Window = None) -> str:
    buf = io.BytesIO()
    write(profile, buf.write, name=name, window=window)
    return buf.getvalue().decode("ascii")


def appearance(frame: np.ndarray, n_ids: int) -> np.ndarray:
    """The frame ids of ``frame`` (-1 .. n_ids - 1) in order of first appearance: per
    chunk, only the calls of frames not seen yet are looked at (usually none)."""
    seen = np.zeros(n_ids + 1, bool)
    found: list[np.ndarray] = []
    for k in range(0, len(frame), _CHUNK):
        part = frame[k : k + _CHUNK] + 1
        new = np.flatnonzero(~seen[part])
        if len(new):
            ids, first = np.unique(part[new], return_index=True)
            ids = ids[np.argsort(first, kind="stable")]
            seen[ids] = True
            found.append(ids - 1)
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def write(
    profile: Profile,
    out: Callable[[bytes], Any],
    name: str = "mcuprof capture",
    window: Window = None,
) -> None:
    """The document (ASCII), written piece by piece to ``out``: memory stays bounded by
    the calls' arrays (about 20 bytes per call) and one chunk of text."""
    c = calls(profile, window)
    n = len(c)
    to_us = 1e6 / profile.timer_freq
    # Frames in order of first appearance in the sequence.
    fids = appearance(c.frame, len(profile.frames))
    rank = np.zeros(len(profile.frames) + 1, np.int32)
    rank[fids + 1] = np.arange(len(fids), dtype=np.int32)
    frames: list[dict[str, Any]] = []
    for fid in fids.tolist():
        frame: dict[str, Any] = {"name": frame_name(profile, fid)}
        file, line = frame_file_line(profile, fid)
        if file is not None:
            frame["file"] = file
        if line is not None:
            frame["line"] = line
        frames.append(frame)
    if window is not None:
        a, b = sorted(window)
        start_value = (profile.ticks(a) - profile.t0_ticks) * to_us
        end_value = (profile.ticks(b) - profile.t0_ticks) * to_us
    else:
        start_value, end_value = 0.0, (profile.t1_ticks - profile.t0_ticks) * to_us
    if n:
        start_value = min(start_value, float(c.start[0]) * to_us)
        end_value = max(end_value, float(c.end_max) * to_us)  # x·c is monotonic in x
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
    # Whole-number times in ticks of a 1 MHz timer are the text itself; other times are
    # scaled to µs as floats, formatted with array operations when whole, else one by
    # one (floats' repr is valid JSON).
    ticks_are_us = to_us == 1.0 and c.dur is not None and c.end_max < _EXACT
    lead = 1
    scratch = Scratch()
    for kind, frame, at in _events(c, rank, scratch):
        if ticks_are_us:
            at_col: Ints | None = Ints(at, b".0")
        else:
            at = at.astype(np.float64) * to_us
            at_col = whole_floats(at)
        if at_col is not None:
            row = [b',{"type":"', Chars(kind), b'","frame":', Ints(frame), b',"at":', at_col]
            text = render_rows(len(kind), [*row, b"}"], scratch)
            out(memoryview(text)[lead:])
        else:
            out(
                (
                    ("," if not lead else "")
                    + ",".join(
                        f'{{"type":"{chr(op)}","frame":{fi},"at":{t!r}}}'
                        for op, fi, t in zip(
                            kind.tolist(), frame.tolist(), at.tolist(), strict=True
                        )
                    )
                ).encode("ascii")
            )
        lead = 0
    out(b"]" + tail.encode("ascii"))


def _events(
    c: Calls, rank: np.ndarray, scratch: Scratch
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Open and close events (kind 'O'/'C', frame rank, time in ticks) in document
    order, one chunk of calls at a time. A call opens at 2·p − depth and closes, after
    its subtree, at 2·(p + size) − depth − 1. The calls still open when a chunk starts
    (at most the depth) are carried over; depths come from the sizes: a call's depth
    is the number of calls open at its start."""
    n = len(c)
    carry_q = np.zeros(0, np.int64)  # where each open call's subtree ends
    carry_d = np.zeros(0, np.int64)
    carry_f = np.zeros(0, np.int32)
    carry_e = c.ends(slice(0, 0))
    for p0 in range(0, n, _CHUNK):
        p1 = min(p0 + _CHUNK, n)
        m = p1 - p0
        d0 = len(carry_q)
        q = np.arange(p0, p1, dtype=np.int64)
        q += c.size[p0:p1]
        # closed[x]: calls closed by local position x (their subtree ends at or before).
        ends_at = np.minimum(np.concatenate([carry_q, q]) - p0, m + 1)
        closed = np.cumsum(np.bincount(ends_at, minlength=m + 2))
        del ends_at
        x = np.arange(m, dtype=np.int64)
        depth = x - closed[:m]
        depth += d0
        size = m + int(closed[m])
        kind = scratch.take("kind", (size,))
        kind.fill(ord("C"))
        frame = scratch.take("frame", (size,), np.int32)
        at = scratch.take("at", (size,), c.start.dtype)
        x0 = 2 * p0 - d0  # the first event of the chunk: the open of p0
        # Opens: 2·p − depth − x0 = x + closed[x].
        x += closed[:m]
        kind[x] = ord("O")
        f = rank[c.frame[p0:p1] + 1]
        frame[x] = f
        at[x] = c.start[p0:p1]
        del x
        ends = c.ends(slice(p0, p1))
        for cq, cd, cf, ce in ((carry_q, carry_d, carry_f, carry_e), (q, depth, f, ends)):
            shut = np.flatnonzero(cq <= p1)
            i = 2 * cq[shut] - cd[shut] - 1 - x0
            frame[i] = cf[shut]
            at[i] = ce[shut]
        still = carry_q > p1
        left = q > p1
        carry_q = np.concatenate([carry_q[still], q[left]])
        carry_d = np.concatenate([carry_d[still], depth[left]])
        carry_f = np.concatenate([carry_f[still], f[left]])
        carry_e = np.concatenate([carry_e[still], ends[left]])
        yield kind, frame, at
