"""The writer thread gets every chunk as it was when written, in order, although the
caller refills its buffer and the sink recycles its own; errors reach the caller."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.export.sink import Sink


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=30))
def test_chunks_arrive_whole_and_in_order(sizes) -> None:
    got: list[bytes] = []
    sink = Sink(lambda b: got.append(bytes(b)))  # out copies: the sink reuses its buffers
    scratch = np.empty(max(sizes) + 1, np.uint8)
    want = []
    for k, n in enumerate(sizes):
        scratch[:n] = np.arange(n, dtype=np.int64) * 7 + k  # the caller's reused buffer
        sink.write(memoryview(scratch)[:n])
        want.append(scratch[:n].tobytes())
    sink.write(b"tail")
    sink.close()
    assert got == [*want, b"tail"]


def test_an_error_of_out_reaches_the_writer() -> None:
    def out(_: bytes) -> None:
        raise OSError(28, "No space left on device")

    sink = Sink(out)
    with pytest.raises(OSError, match="No space"):
        for _ in range(20):
            sink.write(b"x" * 1000)
        sink.close()
