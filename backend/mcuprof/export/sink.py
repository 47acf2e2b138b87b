"""Writing in a thread of its own, so that the file's writes (a copy into the page cache
per chunk, a third of a trace export's time) overlap the formatting of the next chunk;
and formatting chunks on worker threads (numpy releases the GIL in its loops, so two
cores format two chunks at once), written in order."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .rows import Scratch

_DEPTH = 3  # chunks waiting at most: memory stays a few chunks of text


def _threads() -> int:
    """Formatting threads: $MCUPROF_EXPORT_THREADS, else one. On the 2-core development
    machine a thread per core gained no wall time (chunks of 16k calls are numpy calls
    short enough that the GIL is handed back and forth) and cost up to 19% more CPU."""
    told = os.environ.get("MCUPROF_EXPORT_THREADS", "")
    if told.strip().isdigit():
        return max(1, int(told))
    return 1


WORKERS = _threads()

Job = Callable[[Scratch], Any]  # formats one chunk into the scratch it is given: bytes-like


class _Chunk:
    """A job, the scratch it runs with and, once ``done`` is set, its text or error."""

    __slots__ = ("done", "error", "job", "scratch", "text")

    def __init__(self, job: Job, scratch: Scratch) -> None:
        self.job, self.scratch = job, scratch
        self.done = threading.Event()
        self.text: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.text = self.job(self.scratch)
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()


class Sink:
    """``write`` hands a copy of each chunk to a writer thread calling ``out``; ``run``
    formats chunks on worker threads and hands their text over without a copy; ``close``
    waits for the writer and raises what ``out`` or a job raised (e.g. a full disk), if
    anything.

    The copies go into a few buffers that the writer hands back once ``out`` returns
    (so ``out`` must not keep what it is given): a fresh buffer per chunk would fault
    in its pages every time (large blocks come straight from mmap), which costs more
    than the copy itself. Jobs likewise get one of a few ``Scratch`` sets back from the
    writer."""

    def __init__(self, out: Callable[[bytes], Any], workers: int = WORKERS) -> None:
        self._out = out
        self._workers = max(1, workers)
        self._queue: queue.Queue[tuple[bytearray, int] | _Chunk | None]
        self._queue = queue.Queue(_DEPTH + self._workers)
        # One buffer per queue slot, one being written, one being filled; last in,
        # first out, so that a writer keeping up needs two of them only.
        self._free: queue.LifoQueue[bytearray] = queue.LifoQueue()
        for _ in range(_DEPTH + 2):
            self._free.put(bytearray())
        # A scratch per worker and one being written (writing a chunk is quicker than
        # formatting one): memory stays a few chunks' text.
        self._scratch: queue.LifoQueue[Scratch] = queue.LifoQueue()
        for _ in range(self._workers + 1):
            self._scratch.put(Scratch())
        self._jobs: queue.SimpleQueue[_Chunk | None] = queue.SimpleQueue()
        self._pool: list[threading.Thread] = []  # started on the first ``run``
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="export-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if isinstance(item, _Chunk):
                item.done.wait()
                if item.error is not None and self._error is None:
                    self._error = item.error
                if self._error is None:
                    try:
                        with memoryview(item.text) as view:
                            self._out(view)
                    except BaseException as exc:
                        self._error = exc
                item.text = None
                self._scratch.put(item.scratch)
                continue
            buf, n = item
            if self._error is None:
                try:
                    with memoryview(buf) as view:
                        self._out(view[:n])
                except BaseException as exc:
                    self._error = exc
            self._free.put(buf)

    def _work(self) -> None:
        while (chunk := self._jobs.get()) is not None:
            chunk.run()

    def write(self, data: bytes | memoryview) -> None:
        if self._error is not None:
            self.close()
        with memoryview(data) as view:
            flat = view.cast("B") if view.ndim != 1 or view.format != "B" else view
            n = flat.nbytes
            buf = self._free.get()
            if len(buf) < n:
                buf = bytearray(n + (n >> 3))  # a little room: chunks vary in size
            with memoryview(buf) as dst:
                dst[:n] = flat  # a copy: the caller reuses its buffers
        self._queue.put((buf, n))

    def run(self, jobs: Iterable[Job]) -> None:
        """Each job called on a worker thread with a ``Scratch`` of its own (not shared
        with a job running at the same time), and what it returns (bytes-like, valid
        until its scratch is reused) written in the jobs' order, after what was written
        before. Jobs must not depend on each other's results."""
        while len(self._pool) < self._workers:
            worker = threading.Thread(target=self._work, name="export-format", daemon=True)
            worker.start()
            self._pool.append(worker)
        for job in jobs:
            if self._error is not None:
                break
            chunk = _Chunk(job, self._scratch.get())  # blocks while every set is in use
            self._jobs.put(chunk)
            self._queue.put(chunk)
        if self._error is not None:
            self.close()

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        for _ in self._pool:
            self._jobs.put(None)
        for worker in self._pool:
            worker.join()
        self._pool = []
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def emit(out: Callable[[bytes], Any], jobs: Iterable[Job]) -> None:
    """The jobs' text written to ``out`` in order: formatted on the workers of the
    ``Sink`` whose ``write`` ``out`` is, else one after the other with one scratch."""
    sink = getattr(out, "__self__", None)
    if isinstance(sink, Sink):
        sink.run(jobs)
        return
    scratch = Scratch()
    for job in jobs:
        out(job(scratch))
