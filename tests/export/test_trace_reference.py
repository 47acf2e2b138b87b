"""Speedscope and Chrome exports are byte for byte what ``json.dumps`` writes for the
documents built the plain way from the repair walk (one dict per event), on any stream:
overlaps, orphans, time jumping back, zero durations, timers that give fractional µs,
with and without a window."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof import __version__
from mcuprof.export import chrome, speedscope
from mcuprof.export.frames import frame_file_line, frame_name
from mcuprof.export.nesting import nested_calls
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE

record_st = st.tuples(
    st.sampled_from([0x100, 0x200, 0x300, 0x400, 0x500]),
    st.integers(0, 3000),
    st.integers(0, 1200),
    st.integers(0, 3),
)
freq_st = st.sampled_from([1_000_000, 3_000_000, 500_000, 168_000_000])


def _walk_events(walk) -> list[tuple[str, int]]:
    """(O|C, call index) in document order, from the depths."""
    events: list[tuple[str, int]] = []
    stack: list[int] = []
    for i, d in enumerate(walk.depth):
        while stack and walk.depth[stack[-1]] >= d:
            events.append(("C", stack.pop()))
        events.append(("O", i))
        stack.append(i)
    events += [("C", j) for j in reversed(stack)]
    return events


def speedscope_reference(p: Profile, window=None) -> str:
    walk = nested_calls(p, window)
    to_us = 1e6 / p.timer_freq
    fids: list[int] = []
    for f in walk.frame:
        if f not in fids:
            fids.append(f)
    frames = []
    for fid in fids:
        frame = {"name": frame_name(p, fid)}
        file, line = frame_file_line(p, fid)
        if file is not None:
            frame["file"] = file
        if line is not None:
            frame["line"] = line
        frames.append(frame)
    events = [
        {
            "type": kind,
            "frame": fids.index(walk.frame[i]),
            "at": (walk.start[i] if kind == "O" else walk.end[i]) * to_us,
        }
        for kind, i in _walk_events(walk)
    ]
    if window is not None:
        a, b = sorted(window)
        start_value = (p.ticks(a) - p.t0_ticks) * to_us
        end_value = (p.ticks(b) - p.t0_ticks) * to_us
    else:
        start_value, end_value = 0.0, (p.t1_ticks - p.t0_ticks) * to_us
    if walk.start:
        start_value = min(start_value, walk.start[0] * to_us)
        end_value = max(end_value, max(walk.end) * to_us)
    doc = {
        "$schema": speedscope.SCHEMA,
        "shared": {"frames": frames},
        "profiles": [
            {
                "type": "evented",
                "name": "mcuprof capture",
                "unit": "microseconds",
                "startValue": start_value,
                "endValue": end_value,
                "events": events,
            }
        ],
        "name": "mcuprof capture",
        "activeProfileIndex": 0,
        "exporter": f"mcuprof {__version__}",
    }
    return json.dumps(doc, separators=(",", ":"))


def chrome_reference(p: Profile, window=None) -> str:
    walk = nested_calls(p, window)
    to_us = 1e6 / p.timer_freq
    meta = [
        {"name": n, "ph": "M", "pid": 1, "tid": 1, "args": {"name": v}}
        for n, v in (("process_name", "mcuprof"), ("thread_name", "firmware"))
    ]
    xs = [
        {
            "name": frame_name(p, f),
            "cat": "function",
            "ph": "X",
            "pid": 1,
            "tid": 1,
            "ts": s * to_us,
            "dur": e * to_us - s * to_us,
        }
        for f, s, e in zip(walk.frame, walk.start, walk.end, strict=True)
    ]
    body = json.dumps({"traceEvents": meta + xs, "displayTimeUnit": "ms"}, separators=(",", ":"))
    other = json.dumps({"timer_freq": p.timer_freq, "records": p.n_records})
    return body[:-1] + f',"otherData":{other}}}'


def _profile(rows, freq, resets) -> Profile:
    p = Profile()
    p.set_timer_freq(freq)
    recs = np.array(rows, RECORD_DTYPE)
    for _ in range(resets):
        p.add(recs)
    return p


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(record_st, min_size=0, max_size=50),
    freq=freq_st,
    resets=st.integers(1, 3),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_exports_equal_the_plain_documents(rows, freq, resets, cut) -> None:
    p = _profile(rows, freq, resets)
    assert speedscope.render(p) == speedscope_reference(p)
    assert chrome.render(p) == chrome_reference(p)
    if p.n_records:
        span = p.t1_us - p.t0_us
        window = (p.t0_us + cut[0] * span, p.t0_us + cut[1] * span)
        assert speedscope.render(p, window=window) == speedscope_reference(p, window)
        assert chrome.render(p, window=window) == chrome_reference(p, window)


def test_many_chunks_deep_nesting_and_wide_numbers(monkeypatch) -> None:
    """Chunks end inside deep subtrees (the calls still open are carried over), times
    need more than 32 bits, frame numbers and names of many widths."""
    monkeypatch.setattr(speedscope, "CALLS_PER_STEP", 7)
    monkeypatch.setattr(chrome, "CALLS_PER_STEP", 5)
    rng = np.random.default_rng(3)
    recs = []
    t = 0
    for k in range(60):
        depth = int(rng.integers(1, 12))
        for d in reversed(range(depth)):  # a chain, deepest exits first
            recs.append((0x100 * (1 + (k * 7 + d) % 40), (t + d) & 0xFFFF_FFFF, 3 * (depth - d), d))
        t += 3 * depth + int(rng.integers(0, 2)) * 0x7000_0000  # wraps the 32-bit timer
    p = Profile()
    p.add(np.array(recs, RECORD_DTYPE))
    assert p.t1_ticks - p.t0_ticks > 1 << 33
    assert speedscope.render(p) == speedscope_reference(p)
    assert chrome.render(p) == chrome_reference(p)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(record_st, min_size=1, max_size=40),
    resets=st.integers(1, 3),
    chunk=st.integers(1, 6),
)
def test_small_chunks_equal_the_plain_documents(rows, resets, chunk) -> None:
    """Chunks of a few calls: calls stay open across many chunks (carried over) and
    close in any later one, orphans' wrappers and clamped calls included."""
    p = _profile(rows, 1_000_000, resets)
    old = speedscope.CALLS_PER_STEP, chrome.CALLS_PER_STEP
    speedscope.CALLS_PER_STEP = chrome.CALLS_PER_STEP = chunk
    try:
        assert speedscope.render(p) == speedscope_reference(p)
        assert chrome.render(p) == chrome_reference(p)
    finally:
        speedscope.CALLS_PER_STEP, chrome.CALLS_PER_STEP = old


def _written(module, p: Profile, window=None) -> str:
    """What ``export.write`` writes: chunks handed to ``out`` from reused buffers (each
    copied here, as a file's write copies it)."""
    got: list[bytes] = []
    module.write(p, lambda b: got.append(bytes(b)), window=window)
    return b"".join(got).decode("ascii")


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(record_st, min_size=0, max_size=40),
    freq=freq_st,
    resets=st.integers(1, 3),
    chunk=st.integers(1, 6),
)
def test_written_chunks_equal_the_plain_documents(rows, freq, resets, chunk) -> None:
    """Chunks handed to ``out`` from reused buffers make the same document."""
    p = _profile(rows, freq, resets)
    old = speedscope.CALLS_PER_STEP, chrome.CALLS_PER_STEP
    speedscope.CALLS_PER_STEP = chrome.CALLS_PER_STEP = chunk
    try:
        assert _written(speedscope, p) == speedscope_reference(p)
        assert _written(chrome, p) == chrome_reference(p)
    finally:
        speedscope.CALLS_PER_STEP, chrome.CALLS_PER_STEP = old
