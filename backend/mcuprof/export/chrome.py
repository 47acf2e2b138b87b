"""Chrome Trace Event JSON (Perfetto, chrome://tracing): complete ("X") events in µs.

Events carry only the function's display name: speedscope's importer makes one frame
per distinct (name, args), so per-call args (such as the depth) would split a function
into one frame per depth. The nesting is implied by the times, as the format intends.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from ..profile import Profile, Window
from .frames import frame_name
from .nesting import preorder
from .rows import Table, join_rows, whole_floats

PID = 1
TID = 1
_CHUNK = 1 << 16  # events formatted and written at a time


def render(
    profile: Profile,
    process_name: str = "mcuprof",
    thread_name: str = "firmware",
    window: Window = None,
) -> str:
    buf = io.StringIO()
    write(profile, buf.write, process_name, thread_name, window)
    return buf.getvalue()


def write(
    profile: Profile,
    out: Callable[[str], Any],
    process_name: str = "mcuprof",
    thread_name: str = "firmware",
    window: Window = None,
) -> None:
    """The trace, written piece by piece (memory bounded by the profile's arrays)."""
    calls = preorder(profile, window)
    to_us = 1e6 / profile.timer_freq
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": TID, "args": {"name": process_name}},
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": TID, "args": {"name": thread_name}},
    ]
    out('{"traceEvents":[' + ",".join(json.dumps(m, separators=(",", ":")) for m in meta))
    # Per frame, the constant prefix of its events, JSON-escaped once (ASCII: json.dumps
    # escapes the rest, so the table below holds no NUL bytes of its own).
    fids = np.unique(calls.frame)
    prefix = {
        fid: f'{{"name":{json.dumps(frame_name(profile, fid))},"cat":"function","ph":"X",'
        f'"pid":{PID},"tid":{TID},'
        for fid in fids.tolist()
    }
    table = [b"," + prefix[fid].encode("ascii") for fid in fids.tolist()]
    ts = calls.start * to_us
    dur = calls.end * to_us - ts
    for k in range(0, len(ts), _CHUNK):
        part = slice(k, k + _CHUNK)
        # Whole-number times (a 1 MHz timer) with array operations (rows.py), others
        # one by one: the text is the same.
        ts_col, dur_col = whole_floats(ts[part]), whole_floats(dur[part])
        if ts_col is not None and dur_col is not None:
            head = Table(table, np.searchsorted(fids, calls.frame[part]))
            parts = [head, b'"ts":', ts_col, b',"dur":', dur_col, b"}"]
            out(join_rows(len(head.index), parts))
            continue
        out(
            ","
            + ",".join(
                f'{prefix[fid]}"ts":{t!r},"dur":{du!r}}}'
                for fid, t, du in zip(
                    calls.frame[part].tolist(), ts[part].tolist(), dur[part].tolist(), strict=True
                )
            )
        )
    other = json.dumps({"timer_freq": profile.timer_freq, "records": profile.n_records})
    out(f'],"displayTimeUnit":"ms","otherData":{other}}}')
