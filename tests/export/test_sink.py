"""The writer thread gets every chunk as it was when written, in order, although the
caller refills its buffer and the sink recycles its own; chunks formatted on worker
threads are written in order too; errors reach the caller."""

from __future__ import annotations

import time
from functools import partial

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


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=0, max_size=25),
    workers=st.integers(1, 3),
    copies=st.lists(st.integers(0, 200), min_size=2, max_size=2),
)
def test_jobs_run_on_workers_and_are_written_in_order(sizes, workers, copies) -> None:
    """Jobs fill their scratch (reused once written) on several threads, finishing out of
    order; the text arrives in the jobs' order, between the copies written around it."""
    got: list[bytes] = []
    sink = Sink(lambda b: got.append(bytes(b)), workers=workers)
    rng = np.random.default_rng(len(sizes))
    delays = rng.random(len(sizes)) * 0.003

    def job(k: int, n: int, scratch) -> memoryview:
        buf = scratch.take("text", (n,))
        buf[:] = (np.arange(n) * 3 + k) % 256
        time.sleep(float(delays[k]))
        return memoryview(buf)

    sink.write(b"h" * copies[0])
    sink.run(partial(job, k, n) for k, n in enumerate(sizes))
    sink.write(b"t" * copies[1])
    sink.close()
    want = [((np.arange(n) * 3 + k) % 256).astype(np.uint8).tobytes() for k, n in enumerate(sizes)]
    assert got == [b"h" * copies[0], *want, b"t" * copies[1]]


def test_an_error_of_a_job_reaches_the_caller() -> None:
    def job(k: int, scratch) -> bytes:
        if k == 5:
            raise ValueError("bad chunk")
        return b"x" * 100

    got: list[bytes] = []
    sink = Sink(lambda b: got.append(bytes(b)), workers=2)
    with pytest.raises(ValueError, match="bad chunk"):
        sink.run(partial(job, k) for k in range(50))
        sink.close()
    assert got == [b"x" * 100] * 5  # what came before the failing chunk, nothing after


def test_threads_as_told_else_one(monkeypatch) -> None:
    from mcuprof.export import sink as sink_mod

    monkeypatch.setenv("MCUPROF_EXPORT_THREADS", "1")
    assert sink_mod._threads() == 1
    monkeypatch.setenv("MCUPROF_EXPORT_THREADS", "0")
    assert sink_mod._threads() == 1
    monkeypatch.setenv("MCUPROF_EXPORT_THREADS", "not a number")
    assert sink_mod._threads() == 1
    monkeypatch.setenv("MCUPROF_EXPORT_THREADS", "3")
    assert sink_mod._threads() == 3
