"""The replay's pacing (each frame's due second) read from columns, against the
per-record decoding it replaces, on random QS streams: target infos of several
timestamp sizes (2, 4, 8 bytes) and resets, application records, misfits, clocks that
wrap or go back, flipped bytes and cuts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from tests.qs.test_columns import SETTINGS, build, corrupt, stream

from mcuprof.link.qs_replay import _due_seconds
from mcuprof.protocol.qs import QSDecoder, Record

REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "qs"


def reference_due(data: bytes, n: int, tick_hz: int) -> np.ndarray:
    """The per-record definition: decode every record, walk the timestamps in order."""
    due = np.zeros(n)
    t = 0
    last = None
    for e in QSDecoder().feed(data):
        if e.__class__ is not Record or e.timestamp is None or e.index >= n:
            continue
        wrap = 1 << (8 * e.config.tstamp_size)
        if last is not None:
            step = (e.timestamp - last) % wrap
            t += step if step < wrap // 2 else 0
        last = e.timestamp
        due[e.index] = t
    return np.maximum.accumulate(due) / tick_hz if n else due


def _flags(data: bytes) -> int:
    return data.count(b"\x7e")


@SETTINGS
@given(stream)
def test_due_seconds_equal_the_per_record_walk(case) -> None:
    ops, flips, cut, _ = case
    data = corrupt(build(ops), flips, cut)
    n = _flags(data)
    for hz in (1_000_000, 7):
        got = _due_seconds(data, n, hz)
        want = reference_due(data, n, hz)
        assert got.tobytes() == want.tobytes()


def test_due_seconds_of_the_reference_capture() -> None:
    captures = sorted(REFERENCE.glob("*.bin")) + sorted(REFERENCE.glob("*.qs"))
    assert captures, REFERENCE
    for path in captures:
        data = path.read_bytes()
        n = _flags(data)
        got = _due_seconds(data, n, 1_000_000)
        assert got.tobytes() == reference_due(data, n, 1_000_000).tobytes()
        assert n == 0 or got[-1] > 0  # the capture's clock advances
