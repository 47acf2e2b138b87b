"""AddressTable.ids against a dict kept by hand: each batch's new addresses get the next
ids in ascending order, known ones keep theirs, whether the batch's addresses are dense
(looked up through a table) or sparse (searched); and their frames."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile.frames import AddressTable

addr_st = st.one_of(
    st.integers(0x0800_0000, 0x0800_0040),  # dense: firmware
    st.integers(0, (1 << 32) - 1),  # sparse: anywhere in the address space
)


@settings(max_examples=60)
@given(st.lists(st.lists(addr_st, max_size=40), max_size=5))
def test_ids_are_first_seen_then_ascending(batches: list[list[int]]) -> None:
    table = AddressTable()
    want: dict[int, int] = {}
    for batch in batches:
        for a in sorted(set(batch) - want.keys()):
            want[a] = len(want)
        got = table.ids(np.array(batch, np.uint32))
        assert got.dtype == np.int32
        assert got.tolist() == [want[a] for a in batch]
    assert table.addrs.tolist() == list(want)
    # Without symbols each address is a frame of its own, named by it, made once.
    names = [table.frames[f].name for f in table.frame_of.tolist()]
    assert names == [f"0x{a:08x}" for a in want]
    assert len(table.frames) == len(want)
