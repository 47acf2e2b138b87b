"""Uploading one session's raw bytes into PostgreSQL, a chunk at a time.

The writer owns its own connection, which holds the session's advisory lock from the
transaction that created the row until the one that makes it visible. A writer killed
in between leaves a hidden row whose lock the server dropped with the connection: the
next open of the store removes it (PgSessionStore.recover)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..protocol import LinkStats, Metadata
from .model import COMPLETE, INTERRUPTED, SessionInfo, metadata_to_json
from .zst import compress_frame

if TYPE_CHECKING:
    import psycopg

    from .pg import PgSessionStore

# One bytea row of the raw stream, as received; stored as one zstd frame (store/zst.py).
# Bytes wait in memory until a chunk is full or the flush interval passes, so a writer
# holds at most this much.
PG_CHUNK_BYTES = 1 << 20


class PgSessionWriter:
    """SessionWriter's interface over a PostgreSQL connection. Thread-safe."""

    def __init__(
        self,
        store: PgSessionStore,
        session_id: int,
        conn: psycopg.Connection,
        clock: Callable[[], float],
        flush_interval_s: float,
    ) -> None:
        self._store = store
        self._id = session_id
        self._conn = conn
        self._clock = clock
        self._interval = flush_interval_s
        self._lock = threading.Lock()
        self._pending = bytearray()
        self._chunks = 0
        self._written = 0
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
        view = memoryview(data).cast("B")
        if not len(view):
            return
        with self._lock:
            if self._closed:
                return
            while len(view):
                room = PG_CHUNK_BYTES - len(self._pending)
                self._pending += view[:room]
                view = view[room:]
                if len(self._pending) >= PG_CHUNK_BYTES:
                    self._put_chunk()
            self._written = self._synced + len(self._pending)
            if self._clock() - self._last_sync >= self._interval:
                self._sync_locked()

    def _exec(self, sql: str, params: tuple[Any, ...]) -> None:
        try:
            self._conn.execute(sql, params)  # type: ignore[arg-type]
        except Exception as exc:  # psycopg.Error: the server went away, a full disk
            self.error = f"cannot write session {self._id}: {self._store.scrub(exc)}"
            raise UserError(self.error) from None

    def _put_chunk(self) -> None:
        if not self._pending:
            return
        self._exec(
            "INSERT INTO raw_chunks (session_id, idx, data, size, zstd) "
            "VALUES (%s, %s, %s, %s, TRUE)",
            (self._id, self._chunks, compress_frame(self._pending), len(self._pending)),
        )
        self._chunks += 1
        self._synced += len(self._pending)
        self._pending.clear()

    def set_metadata(self, meta: Metadata) -> None:
        with self._lock:
            self._exec(
                "UPDATE sessions SET metadata = %s WHERE id = %s",
                (metadata_to_json(meta), self._id),
            )

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._sync_locked()

    def flush_if_due(self) -> bool:
        with self._lock:
            if self._closed or not self._pending:
                return False
            if self._clock() - self._last_sync < self._interval:
                return False
            self._sync_locked()
            return True

    def _sync_locked(self) -> None:
        self._put_chunk()
        self._last_sync = self._clock()
        self._exec("UPDATE sessions SET raw_bytes = %s WHERE id = %s", (self._synced, self._id))

    def finish(
        self,
        stats: LinkStats | dict[str, Any] | None = None,
        duration_us: float | None = None,
        loss: dict[str, Any] | None = None,
    ) -> SessionInfo:
        return self._close(COMPLETE, stats, duration_us, loss)

    def abort(
        self,
        stats: LinkStats | dict[str, Any] | None = None,
        duration_us: float | None = None,
        loss: dict[str, Any] | None = None,
    ) -> SessionInfo:
        return self._close(INTERRUPTED, stats, duration_us, loss)

    def _close(
        self,
        status: str,
        stats: LinkStats | dict[str, Any] | None,
        duration_us: float | None,
        loss: dict[str, Any] | None,
    ) -> SessionInfo:
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._put_chunk()
                    self._store._finish(self._conn, self._id, status, self._synced, stats,
                                        duration_us, loss)  # fmt: skip
                finally:
                    self._store._release(self._id)
                    with contextlib.suppress(Exception):
                        self._conn.close()  # drops the advisory lock with the connection
        return self._store.get(self._id)

    def __enter__(self) -> PgSessionWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.abort()
