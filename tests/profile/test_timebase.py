"""unwrap_exits against the rule written out record by record (CLARIFICATIONS: 32-bit
ticks unwrapped in stream order; a step back of less than 2**31 is time going back)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile.timebase import unwrap_exits

u32 = st.integers(0, (1 << 32) - 1)


def _reference(entry: list[int], dur: list[int], last: int | None) -> list[int]:
    out = []
    for e, d in zip(entry, dur, strict=True):
        raw = (e + d) & 0xFFFF_FFFF
        if last is None:
            last = raw
        else:
            step = (raw - last) & 0xFFFF_FFFF
            last += step - (1 << 32) if step >= 1 << 31 else step
        out.append(last)
    return out


@settings(max_examples=300)
@given(
    rows=st.lists(st.tuples(u32, u32), max_size=60),
    last=st.one_of(st.none(), st.integers(-(1 << 40), 1 << 40)),
    cut=st.integers(0, 60),
)
def test_unwrap_equals_the_rule_in_any_split(rows, last, cut) -> None:
    entry = np.array([r[0] for r in rows], np.uint32)
    dur = np.array([r[1] for r in rows], np.uint32)
    want = _reference(entry.tolist(), dur.tolist(), last)
    got = unwrap_exits(entry, dur, last)
    assert got.dtype == np.int64
    assert got.tolist() == want
    head = unwrap_exits(entry[:cut], dur[:cut], last)
    tail = unwrap_exits(entry[cut:], dur[cut:], int(head[-1]) if len(head) else last)
    assert np.concatenate([head, tail]).tolist() == want
