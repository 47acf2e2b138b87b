"""Writing in a thread of its own, so that the file's writes (a copy into the page cache
per chunk, a third of a trace export's time) overlap the formatting of the next chunk."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_DEPTH = 3  # chunks waiting at most: memory stays a few chunks of text


class Sink:
    """``write`` hands a copy of each chunk to a writer thread calling ``out``; ``close``
    waits for it and raises what ``out`` raised (e.g. a full disk), if anything."""

    def __init__(self, out: Callable[[bytes], Any]) -> None:
        self._out = out
        self._queue: queue.Queue[bytes | None] = queue.Queue(_DEPTH)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="export-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (chunk := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._out(chunk)
                except BaseException as exc:
                    self._error = exc

    def write(self, data: bytes | memoryview) -> None:
        if self._error is not None:
            self.close()
        self._queue.put(bytes(data))  # the caller reuses its buffers

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
