"""Speedscope file format: one evented profile in microseconds.

Schema: https://www.speedscope.app/file-format-schema.json
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import __version__
from ..profile import Profile, Window
from .frames import frame_file_line, frame_name
from .nesting import preorder
from .rows import Chars, Ints, join_rows, whole_floats

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
_EVENTS = "\x00events\x00"
_CHUNK = 1 << 16  # events formatted and written at a time


def render(profile: Profile, name: str = "mcuprof capture", window: Window = None) -> str:
    buf = io.StringIO()
    write(profile, buf.write, name=name, window=window)
    return buf.getvalue()


def write(
    profile: Profile,
    out: Callable[[str], Any],
    name: str = "mcuprof capture",
    window: Window = None,
) -> None:
    """The document, written piece by piece: memory stays bounded by the profile's
    arrays, not by the text (about 80 bytes per call)."""
    calls = preorder(profile, window)
    to_us = 1e6 / profile.timer_freq
    # Frames in order of first appearance in the sequence.
    uniq, first = np.unique(calls.frame, return_index=True)
    perm = np.argsort(first, kind="stable")  # appearance rank -> sorted slot
    rank = np.empty(len(uniq), np.int64)
    rank[perm] = np.arange(len(uniq))
    fids = uniq[perm]
    frames: list[dict[str, Any]] = []
    for fid in fids.tolist():
        frame: dict[str, Any] = {"name": frame_name(profile, fid)}
        file, line = frame_file_line(profile, fid)
        if file is not None:
            frame["file"] = file
        if line is not None:
            frame["line"] = line
        frames.append(frame)
    # Open at 2·pre − depth, close after the subtree at 2·(pre + size) − depth − 1.
    # Built in place and narrow, and the calls freed: this is the export's peak.
    n = len(calls.start)
    first_start = float(calls.start[0]) * to_us if n else 0.0
    last_end = float(calls.end.max()) * to_us if n else 0.0  # x·c is monotonic in x
    ev_frame = np.empty(2 * n, np.int32)
    ev_at = np.empty(2 * n)
    ev_open = np.zeros(2 * n, bool)
    o = np.arange(n, dtype=np.int64)
    o *= 2
    o -= calls.depth
    ev_frame[o] = rank[np.searchsorted(uniq, calls.frame)]
    ev_at[o] = calls.start * to_us
    ev_open[o] = True
    o += 2 * calls.size.astype(np.int64) - 1  # c = o + 2·size − 1
    ev_frame[o] = ev_frame[o - 2 * calls.size.astype(np.int64) + 1]
    ev_at[o] = calls.end * to_us
    del o, calls
    if window is not None:
        a, b = sorted(window)
        start_value = (profile.ticks(a) - profile.t0_ticks) * to_us
        end_value = (profile.ticks(b) - profile.t0_ticks) * to_us
    else:
        start_value, end_value = 0.0, (profile.t1_ticks - profile.t0_ticks) * to_us
    if n:
        start_value = min(start_value, first_start)
        end_value = max(end_value, last_end)
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
    out(head + "[")
    # Events are written as text: a dict per event through json.dumps costs several
    # times more for a million calls, and floats' repr is valid JSON. Whole-number times
    # (a 1 MHz timer) are formatted with array operations (rows.py), others one by one.
    for k in range(0, 2 * n, _CHUNK):
        part = slice(k, k + _CHUNK)
        at_col = whole_floats(ev_at[part])
        if at_col is not None:
            kind = Chars(np.where(ev_open[part], ord("O"), ord("C")).astype(np.uint8))
            row = [b',{"type":"', kind, b'","frame":', Ints(ev_frame[part])]
            text = join_rows(len(kind.values), [*row, b',"at":', at_col, b"}"])
            out(text if k else text[1:])
            continue
        text = ",".join(
            f'{{"type":"{"O" if op else "C"}","frame":{fi},"at":{at!r}}}'
            for op, fi, at in zip(
                ev_open[part].tolist(), ev_frame[part].tolist(), ev_at[part].tolist(), strict=True
            )
        )
        out(("," if k else "") + text)
    out("]" + tail)
