"""Writing in a thread of its own, so that the file's writes (a copy into the page cache
per chunk, a third of a trace export's time) overlap the formatting of the next chunk.
(Formatting chunks on worker threads as well gained no wall time on 2 cores and cost up
to 19% more CPU: it went.)"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_DEPTH = 3  # chunks waiting at most: memory stays a few chunks of text


class Sink:
    """``write`` hands a copy of each chunk to a writer thread calling ``out``; ``close``
    waits for the writer and raises what ``out`` raised (e.g. a full disk), if anything.

    The copies go into a few buffers that the writer hands back once ``out`` returns
    (so ``out`` must not keep what it is given): a fresh buffer per chunk would fault
    in its pages every time (large blocks come straight from mmap), which costs more
    than the copy itself."""

    def __init__(self, out: Callable[[bytes], Any]) -> None:
        self._out = out
        self._queue: queue.Queue[tuple[bytearray, int] | None] = queue.Queue(_DEPTH)
        # One buffer per queue slot, one being written, one being filled; last in,
        # first out, so that a writer keeping up needs two of them only.
        self._free: queue.LifoQueue[bytearray] = queue.LifoQueue()
        for _ in range(_DEPTH + 2):
            self._free.put(bytearray())
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="export-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            buf, n = item
            if self._error is None:
                try:
                    with memoryview(buf) as view:
                        self._out(view[:n])
                except BaseException as exc:
                    self._error = exc
            self._free.put(buf)

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

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
