"""Speedscope file format: one evented profile in microseconds.

Schema: https://www.speedscope.app/file-format-schema.json
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .. import __version__
from ..profile import Profile, Window
from .frames import frame_file_line, frame_label
from .nesting import nested_calls

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
_EVENTS = "\x00events\x00"


def render(profile: Profile, name: str = "mcuprof capture", window: Window = None) -> str:
    calls = nested_calls(profile, window)
    to_us = 1e6 / profile.timer_freq
    index: dict[int, int] = {}
    frames: list[dict[str, Any]] = []
    for fid in calls.frame:
        if fid not in index:
            index[fid] = len(frames)
            frame: dict[str, Any] = {"name": frame_label(profile, fid)}
            file, line = frame_file_line(profile, fid)
            if file is not None:
                frame["file"] = file
            if line is not None:
                frame["line"] = line
            frames.append(frame)
    starts = (np.asarray(calls.start, np.float64) * to_us).tolist()
    ends = (np.asarray(calls.end, np.float64) * to_us).tolist()
    # Events are written as text: a dict per event through json.dumps costs several
    # times more for a million calls, and floats' repr is valid JSON.
    parts: list[str] = []
    open_: list[tuple[int, float]] = []
    for fid, s, e, d in zip(calls.frame, starts, ends, calls.depth, strict=True):
        while len(open_) > d:
            fi, end = open_.pop()
            parts.append(f'{{"type":"C","frame":{fi},"at":{end!r}}}')
        fi = index[fid]
        parts.append(f'{{"type":"O","frame":{fi},"at":{s!r}}}')
        open_.append((fi, e))
    while open_:
        fi, end = open_.pop()
        parts.append(f'{{"type":"C","frame":{fi},"at":{end!r}}}')
    if window is not None:
        a, b = sorted(window)
        start_value = (profile.ticks(a) - profile.t0_ticks) * to_us
        end_value = (profile.ticks(b) - profile.t0_ticks) * to_us
    else:
        start_value, end_value = 0.0, (profile.t1_ticks - profile.t0_ticks) * to_us
    if starts:
        start_value = min(start_value, starts[0])
        end_value = max(end_value, max(ends))
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
    return head + "[" + ",".join(parts) + "]" + tail
