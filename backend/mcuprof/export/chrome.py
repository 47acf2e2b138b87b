"""Chrome Trace Event JSON (Perfetto, chrome://tracing): complete ("X") events in µs."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..profile import Profile, Window
from .frames import frame_file_line, frame_label
from .nesting import nested_calls

PID = 1
TID = 1


def render(
    profile: Profile,
    process_name: str = "mcuprof",
    thread_name: str = "firmware",
    window: Window = None,
) -> str:
    calls = nested_calls(profile, window)
    to_us = 1e6 / profile.timer_freq
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": TID, "args": {"name": process_name}},
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": TID, "args": {"name": thread_name}},
    ]
    parts = [json.dumps(m, separators=(",", ":")) for m in meta]
    # Per frame, the constant prefix of its events, JSON-escaped once.
    prefix: dict[int, str] = {}
    for fid in set(calls.frame):
        file, line = frame_file_line(profile, fid)
        args: dict[str, Any] = {}
        if file is not None:
            args["file"] = file
        if line is not None:
            args["line"] = line
        name = json.dumps(frame_label(profile, fid))
        args_text = json.dumps(args, separators=(",", ":"))[1:-1]
        prefix[fid] = (
            f'{{"name":{name},"cat":"function","ph":"X","pid":{PID},"tid":{TID},'
            f'"args":{{{args_text}{"," if args_text else ""}"depth":'
        )
    ts = np.asarray(calls.start, np.float64) * to_us
    dur = np.asarray(calls.end, np.float64) * to_us - ts
    for fid, t, du, d in zip(calls.frame, ts.tolist(), dur.tolist(), calls.depth, strict=True):
        parts.append(f'{prefix[fid]}{d}}},"ts":{t!r},"dur":{du!r}}}')
    other = json.dumps({"timer_freq": profile.timer_freq, "records": profile.n_records})
    return '{"traceEvents":[' + ",".join(parts) + f'],"displayTimeUnit":"ms","otherData":{other}}}'
