"""Appending a live capture to disk, as it arrives, from the link's reader thread."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..protocol import LinkStats, Metadata
from .model import COMPLETE, INTERRUPTED, SessionInfo
from .zst import BlockCompressor

if TYPE_CHECKING:
    from .sessions import SessionStore


class SessionWriter:
    """Appends raw bytes, compressed, to one session's file. Thread-safe; ``append`` is
    one write(2) of a complete zstd block (store/zst.py).

    Bytes are handed to the kernel on every ``append``, so killing this process loses
    nothing; they are fsync'd, and the byte count committed to the database, at most
    ``flush_interval_s`` after they arrived (checked on every append and by the store's
    flusher thread), so an unplug or power cut loses at most that much. A write that
    fails (a full disk) is cut back off the file, which then ends with a complete block,
    and the writer takes no more: the compressor's window held bytes the file lacks.
    """

    def __init__(
        self,
        store: SessionStore,
        session_id: int,
        fd: int,
        clock: Callable[[], float],
        flush_interval_s: float,
    ) -> None:
        self._store = store
        self._id = session_id
        self._fd = fd
        self._clock = clock
        self._interval = flush_interval_s
        self._lock = threading.Lock()
        self._zst: BlockCompressor | None = BlockCompressor()
        self._written = 0  # bytes as received
        self._file_bytes = 0  # bytes in the file: whole blocks only
        self._synced = 0
        self._last_sync = clock()
        self._closed = False
        self.error: str | None = None

    @property
    def id(self) -> int:
        return self._id

    @property
    def bytes_written(self) -> int:
        return self._written

    @property
    def bytes_synced(self) -> int:
        return self._synced

    @property
    def closed(self) -> bool:
        return self._closed

    def append(self, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` now; late calls after ``finish`` are ignored (a reader thread
        may still deliver a chunk while the session is being stopped)."""
        view = memoryview(data).cast("B")
        if not len(view):
            return
        with self._lock:
            if self._closed:
                return
            if self._zst is None:  # a write failed: see the class's note
                raise UserError(self.error or f"session {self._id} cannot be written")
            self._write_locked(self._zst.block(view))
            self._written += len(view)
            if self._clock() - self._last_sync >= self._interval:
                self._sync_locked()

    def _write_locked(self, block: bytes) -> None:
        view = memoryview(block)
        try:
            while len(view):
                n = os.write(self._fd, view)
                view = view[n:]
                self._file_bytes += n
        except OSError as exc:
            self.error = f"cannot write session {self._id}: {exc.strerror or exc}"
            self._zst = None
            done = self._file_bytes - (len(block) - len(view))
            with contextlib.suppress(OSError):  # the file then ends with a whole block
                os.ftruncate(self._fd, done)
                self._file_bytes = done
            raise UserError(self.error) from None

    def set_metadata(self, meta: Metadata) -> None:
        self._store._set_metadata(self._id, meta)

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._sync_locked()

    def flush_if_due(self) -> bool:
        """The flusher thread's hook: sync when bytes have waited ``flush_interval_s``."""
        with self._lock:
            if self._closed or self._synced == self._written:
                return False
            if self._clock() - self._last_sync < self._interval:
                return False
            self._sync_locked()
            return True

    def finish(
        self,
        stats: LinkStats | dict[str, Any] | None = None,
        duration_us: float | None = None,
        loss: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """Close the session as 'complete'. ``duration_us`` is the capture's own time span
        (e.g. ``Profile.duration_us``), shown in session lists; optional. ``loss`` is what
        the device's counters say was lost (loss.py)."""
        return self._close(COMPLETE, stats, duration_us, loss)

    def abort(
        self,
        stats: LinkStats | dict[str, Any] | None = None,
        duration_us: float | None = None,
        loss: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """Close as 'interrupted' (the link dropped, the server is shutting down)."""
        return self._close(INTERRUPTED, stats, duration_us, loss)

    def _close(
        self,
        status: str,
        stats: LinkStats | dict[str, Any] | None,
        duration_us: float | None,
        loss: dict[str, Any] | None = None,
    ) -> SessionInfo:
        with self._lock:
            if not self._closed:
                # A failed sync (a full disk) still closes the session with what the
                # file holds; the reason stays in ``error``.
                with contextlib.suppress(UserError):
                    if self._zst is not None and self._file_bytes:
                        self._write_locked(self._zst.end())  # the frame is complete
                    self._sync_locked()
                self._closed = True
                try:
                    self._store._finish(self._id, status, self._written, stats, duration_us, loss)
                except UserError:
                    # The database could not take it (a full disk): the store's flusher
                    # recovers the session, as a dead writer's, once there is room.
                    self._store._unfinished(self._id)
                    raise
                finally:
                    os.close(self._fd)  # releases the flock that marks us alive
        return self._store.get(self._id)

    def _sync_locked(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self.error = f"cannot sync session {self._id}: {exc.strerror or exc}"
            raise UserError(self.error) from None
        self._last_sync = self._clock()
        if self._synced != self._written:
            self._store._set_raw_bytes(self._id, self._written)
            self._synced = self._written

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.abort()
