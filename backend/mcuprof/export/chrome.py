"""Chrome Trace Event JSON (Perfetto, chrome://tracing): complete ("X") events in µs.

Events carry the function's display name (the page's short name) and, when it differs,
the full signature in ``args``: speedscope's importer makes one frame per distinct
(name, args), so per-call args (such as the depth) would split a function into one
frame per depth, while the signature, one per function, splits none. The nesting is
implied by the times, as the format intends.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from ..profile import Profile, Window
from ..textrows import Buffer, Ints, Strings, StringTable, build, whole_floats
from .frames import CALLS_PER_STEP, appearance, frame_name, frame_signature
from .nesting import Calls, calls

PID = 1
TID = 1


def render(
    profile: Profile,
    process_name: str = "mcuprof",
    thread_name: str = "firmware",
    window: Window = None,
) -> str:
    buf = io.BytesIO()
    _write(profile, buf.write, process_name, thread_name, window)
    return buf.getvalue().decode("ascii")


def write(
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    title: tuple[str, str] | None = None,
) -> None:
    """The export contract (export/__init__.py); a trace carries no title."""
    _write(profile, out, window=window)


def _write(
    profile: Profile,
    out: Callable[[bytes], Any],
    process_name: str = "mcuprof",
    thread_name: str = "firmware",
    window: Window = None,
) -> None:
    """The trace (ASCII), written piece by piece to ``out`` (memory bounded by the
    calls' arrays and a chunk of text)."""
    c = calls(profile, window)
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
        name, signature = frame_name(profile, slot - 1), frame_signature(profile, slot - 1)
        # The full signature, constant per function: it adds no frames in speedscope's
        # importer, and keeps two overloads of one display name apart.
        args = f'"args":{{"signature":{json.dumps(signature)}}},' if signature != name else ""
        prefix[slot] = (
            f'{{"name":{json.dumps(name)},"cat":"function","ph":"X","pid":{PID},"tid":{TID},{args}'
        )
    table = StringTable([b"," + p.encode("ascii") if p else b"" for p in prefix])
    buf = Buffer()
    for k in range(0, len(c), CALLS_PER_STEP):
        out(_text(c, table, prefix, to_us, slice(k, k + CALLS_PER_STEP), buf))
    other = json.dumps({"timer_freq": profile.timer_freq, "records": profile.n_records})
    out(f'],"displayTimeUnit":"ms","otherData":{other}}}'.encode("ascii"))


def _text(
    c: Calls, table: StringTable, prefix: list[str], to_us: float, part: slice, buf: Buffer
) -> np.ndarray | bytes:
    """The events of the calls in ``part``, each after a comma: whole-number times (a
    1 MHz timer's) formatted with array operations, others one by one (a float's repr,
    the same text)."""
    slot = c.frame[part].astype(np.intp)  # indexes twice: converted once
    slot += 1
    ts = c.start[part].astype(np.float64) * to_us
    dur = c.ends(part).astype(np.float64) * to_us - ts
    ts_int, dur_int = whole_floats(ts), whole_floats(dur)
    if ts_int is not None and dur_int is not None:
        parts = [Strings(table, slot), b'"ts":', Ints(ts_int), b'.0,"dur":', Ints(dur_int)]
        return build(len(slot), [*parts, b".0}"], buf)
    text = ",".join(
        f'{prefix[s]}"ts":{t!r},"dur":{du!r}}}'
        for s, t, du in zip(slot.tolist(), ts.tolist(), dur.tolist(), strict=True)
    )
    return ("," + text).encode("ascii")
