"""Chrome Trace Event JSON (Perfetto, chrome://tracing): complete ("X") events in µs.

Events carry only the function's display name: speedscope's importer makes one frame
per distinct (name, args), so per-call args (such as the depth) would split a function
into one frame per depth. The nesting is implied by the times, as the format intends.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..profile import Profile, Window
from .frames import CALLS_PER_STEP, appearance, frame_name
from .nesting import Calls, calls
from .rows import Ints, Scratch, Table, render_rows, whole_floats
from .sink import emit

PID = 1
TID = 1
_EXACT = 2**53  # integers below this are exact as floats


def render(
    profile: Profile,
    process_name: str = "mcuprof",
    thread_name: str = "firmware",
    window: Window = None,
) -> str:
    buf = io.BytesIO()
    write(profile, buf.write, process_name, thread_name, window)
    return buf.getvalue().decode("ascii")


def write(
    profile: Profile,
    out: Callable[[bytes], Any],
    process_name: str = "mcuprof",
    thread_name: str = "firmware",
    window: Window = None,
) -> None:
    """The trace (ASCII), written piece by piece to ``out`` (memory bounded by the
    calls' arrays and a few chunks of text). Through a ``Sink``'s ``write`` the chunks
    are formatted on its worker threads (see ``emit``)."""
    c = calls(profile, window, sizes=False)
    to_us = 1e6 / profile.timer_freq
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": TID, "args": {"name": process_name}},
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": TID, "args": {"name": thread_name}},
    ]
    head = '{"traceEvents":[' + ",".join(json.dumps(m, separators=(",", ":")) for m in meta)
    out(head.encode("ascii"))
    # Per frame id (+1: "[unknown]" is -1), the constant prefix of its events,
    # JSON-escaped once (ASCII: json.dumps escapes the rest).
    slots = len(profile.frames) + 1
    used = (appearance(c.frame, len(profile.frames)) + 1).tolist()  # no whole-capture temporary
    prefix = [""] * slots
    for slot in used:
        prefix[slot] = (
            f'{{"name":{json.dumps(frame_name(profile, slot - 1))},"cat":"function","ph":"X",'
            f'"pid":{PID},"tid":{TID},'
        )
    table = Table([b"," + p.encode("ascii") if p else b"" for p in prefix], np.zeros(0, np.int64))
    table.widths()  # its cache filled before the jobs share it
    # Whole-number times in ticks of a 1 MHz timer are the text itself (as floats the
    # duration is end − start exactly); others go through floats, formatted with array
    # operations when whole, else one by one: the text is the same.
    ticks_are_us = to_us == 1.0 and c.dur is not None and c.end_max < _EXACT
    text = partial(_text, c, table, prefix, to_us, ticks_are_us)
    emit(
        out,
        (
            partial(text, k, min(k + CALLS_PER_STEP, len(c)))
            for k in range(0, len(c), CALLS_PER_STEP)
        ),
    )
    other = json.dumps({"timer_freq": profile.timer_freq, "records": profile.n_records})
    out(f'],"displayTimeUnit":"ms","otherData":{other}}}'.encode("ascii"))


def _text(
    c: Calls,
    table: Table,
    prefix: list[str],
    to_us: float,
    ticks_are_us: bool,
    k0: int,
    k1: int,
    scratch: Scratch,
) -> np.ndarray | bytes:
    """The events of calls ``k0`` to ``k1``, each after a comma (a job: see ``emit``)."""
    part = slice(k0, k1)
    slot = c.frame[part].astype(np.intp)  # indexes twice: converted once
    slot += 1
    if ticks_are_us:
        ts_col: Ints | None = Ints(c.start[part], b".0")
        dur_col: Ints | None = Ints(c.dur[part], b".0")
    else:
        ts = c.start[part].astype(np.float64) * to_us
        dur = c.ends(part).astype(np.float64) * to_us - ts
        ts_col, dur_col = whole_floats(ts), whole_floats(dur)
    if ts_col is not None and dur_col is not None:
        rows = Table(table.strings, slot)
        rows._cache = table._cache  # the strings' arrays, built once
        parts = [rows, b'"ts":', ts_col, b',"dur":', dur_col, b"}"]
        return render_rows(len(slot), parts, scratch)
    text = ",".join(
        f'{prefix[s]}"ts":{t!r},"dur":{du!r}}}'
        for s, t, du in zip(slot.tolist(), ts.tolist(), dur.tolist(), strict=True)
    )
    return ("," + text).encode("ascii")
