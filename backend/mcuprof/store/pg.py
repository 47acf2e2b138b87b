"""The team store: sessions, tags, summaries, ELFs and raw captures in PostgreSQL.

Same public interface as SessionStore (store/api.py), for many CI runners uploading to one
database and every engineer's dashboard reading it. Raw bytes are rows of at most
PG_CHUNK_BYTES, streamed in and out. A session is visible only once its writer's final
transaction sets ``visible``; until then the writer holds an advisory lock on its id, so
a later open can tell a dead upload (lock free) from a live one and remove it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from .. import kinds
from ..capture import CHUNK
from ..errors import UserError
from ..protocol import LinkStats, Metadata
from . import pgconnect
from .importing import import_capture
from .model import (
    INTERRUPTED,
    RECORDING,
    SessionInfo,
    SessionNotFound,
    clean_name,
    clean_notes,
    metadata_to_json,
    stats_to_json,
)
from .pgwriter import PgSessionWriter
from .sessions import MAX_RAW_WHOLE, ElfInput, _info, _read_elf, whole
from .tags import check_tags, matches
from .zst import inflate, read_ahead

_COLUMNS = (
    "id, name, notes, status, source, created_at, started_at, stopped_at, raw_bytes, "
    "elf_sha256, elf_name, metadata, link_stats, duration_us, kind, loss"
)
# What this process may see: finished sessions, and the ones its own writers hold.
_SEEN = "(visible OR id = ANY(%s))"


class PgSessionStore:
    """Sessions in the PostgreSQL database at ``url``; ``data_dir`` keeps only local
    caches (column spills, uploads in progress). Safe to share between threads."""

    def __init__(
        self,
        url: str,
        data_dir: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        flush_interval_s: float = 1.0,
        autoflush: bool = True,
    ) -> None:
        self.url = url
        self.location = pgconnect.scrub_url(url)
        self.data_dir = Path(data_dir)
        self._clock = clock
        self._wall = wall_clock
        self._interval = flush_interval_s
        self._autoflush = autoflush
        self._lock = threading.RLock()
        self._active: dict[int, PgSessionWriter] = {}
        self._flusher: threading.Thread | None = None
        self._stop = threading.Event()
        self.flushed = threading.Condition()
        self._db = pgconnect.connect(url)
        try:
            pgconnect.migrate(self._db)
        except Exception as exc:
            self._db.close()
            raise self._error(exc) from None
        self.swept = self.recover()  # dead uploads removed (or kept, if live) on open

    # ------------------------------------------------------------------ plumbing

    def scrub(self, exc: BaseException) -> str:
        return pgconnect.scrub_text(str(exc), self.url)

    def _error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, UserError):
            return exc
        return UserError(f"store {self.location}: {self.scrub(exc)}")

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Any]:
        """One transaction on the shared connection; psycopg errors become one line."""
        import psycopg

        with self._lock:
            try:
                with self._db.transaction():
                    yield self._db
            except psycopg.Error as exc:
                raise self._error(exc) from None

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._tx() as db:
            return db.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def _mine(self) -> list[int]:
        return list(self._active)

    def close(self) -> None:
        self._stop.set()
        for writer in list(self._active.values()):
            with contextlib.suppress(UserError, OSError):
                writer.abort()
        if self._flusher is not None:
            self._flusher.join(timeout=5)
        with self._lock:
            self._db.close()

    def __enter__(self) -> PgSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ recovery

    def recover(self) -> list[int]:
        """Hidden rows whose writer's lock is free belong to a dead writer: an upload's
        are deleted (it never completed); a recording's (live, scenario) are kept as
        'interrupted' with what reached the database: nothing received is lost.
        Returns the ids removed or kept."""
        done: list[int] = []
        hidden = self._read("SELECT id, source FROM sessions WHERE NOT visible ORDER BY id")
        for sid, source in hidden:
            if sid in self._active or not self._try_lock(sid):
                continue
            try:
                with self._tx() as db:
                    if source != "import":
                        db.execute(
                            "UPDATE sessions SET visible = TRUE, status = %s, stopped_at = "
                            "COALESCE(stopped_at, %s), raw_bytes = (SELECT COALESCE("
                            "SUM(size), 0) FROM raw_chunks WHERE session_id = %s) "
                            "WHERE id = %s AND NOT visible",
                            (INTERRUPTED, self._wall(), sid, sid),
                        )
                    else:
                        db.execute("DELETE FROM sessions WHERE id = %s AND NOT visible", (sid,))
                        self._drop_unused_elfs(db)
                done.append(sid)
            finally:
                self._unlock(sid)
        return done

    def _try_lock(self, sid: int) -> bool:
        rows = self._read("SELECT pg_try_advisory_lock(%s, %s)", (pgconnect.LOCK_CLASS, sid))
        return bool(rows[0][0])

    def _unlock(self, sid: int) -> None:
        self._read("SELECT pg_advisory_unlock(%s, %s)", (pgconnect.LOCK_CLASS, sid))

    def _drop_unused_elfs(self, db: Any) -> None:
        import psycopg

        # A create() of the same ELF committing meanwhile makes this a foreign key
        # violation: then the ELF is in use again and stays (the savepoint keeps the rest).
        with contextlib.suppress(psycopg.errors.ForeignKeyViolation), db.transaction():
            db.execute(
                "DELETE FROM elfs e WHERE NOT EXISTS (SELECT 1 FROM sessions s "
                "WHERE s.elf_sha256 = e.sha256)"
            )

    # ------------------------------------------------------------------ writing

    def create(
        self,
        name: str,
        elf_path: ElfInput = None,
        metadata: Metadata | None = None,
        *,
        elf_name: str | None = None,
        source: str = "live",
        notes: str = "",
        started_at: float | None = None,
        kind: str = "miniprofiler",
        tags: dict[str, str] | None = None,
    ) -> PgSessionWriter:
        """Start a hidden session on a connection of its own, holding its lock."""
        name, notes, tags = clean_name(name), clean_notes(notes), check_tags(tags)
        if kind not in kinds.NAMES:
            raise ValueError(f"unknown session kind {kind!r}")
        elf_bytes, elf_label = _read_elf(elf_path, elf_name)
        now = self._wall()
        row = (name, notes, RECORDING, source, now, now if started_at is None else started_at)
        conn = pgconnect.connect(self.url)
        try:
            with conn.transaction():
                sha = None if elf_bytes is None else _add_elf(conn, elf_bytes, now)
                (sid,) = conn.execute(
                    "INSERT INTO sessions (name, notes, status, source, created_at, started_at,"
                    " elf_sha256, elf_name, metadata, kind) VALUES (%s, %s, %s, %s, %s, %s, %s,"
                    " %s, %s, %s) RETURNING id",
                    (*row, sha, elf_label, metadata_to_json(metadata), kind),
                ).fetchone()
                if sid > pgconnect.MAX_SESSION_ID:
                    raise UserError(f"the store has run out of session ids ({sid})")
                # Taken before the row is committed: no one can see it unlocked.
                conn.execute("SELECT pg_advisory_lock(%s, %s)", (pgconnect.LOCK_CLASS, sid))
                _insert_tags(conn, sid, tags)
        except Exception as exc:
            conn.close()
            raise self._error(exc) from None
        writer = PgSessionWriter(self, sid, conn, self._clock, self._interval)
        with self._lock:
            self._active[sid] = writer
        self._start_flusher()
        return writer

    def import_capture(
        self, name: str, data: bytes | str | os.PathLike[str], elf: ElfInput = None, **opts: Any
    ) -> SessionInfo:
        """Store a raw capture as a finished session (store/importing.py)."""
        return import_capture(self, name, data, elf, **opts)

    def _discard(self, writer: PgSessionWriter) -> None:
        """A failed import: its hidden row goes, never having been visible."""
        sid = writer.id
        with self._lock:
            self._active.pop(sid, None)
        with contextlib.suppress(Exception):
            writer._conn.close()  # its lock goes with it
        with self._tx() as db:
            db.execute("DELETE FROM sessions WHERE id = %s AND NOT visible", (sid,))
            self._drop_unused_elfs(db)

    def _finish(
        self,
        conn: Any,
        sid: int,
        status: str,
        n: int,
        stats: LinkStats | dict[str, Any] | None,
        duration_us: float | None,
        loss: dict[str, Any] | None,
    ) -> None:
        """The upload's last transaction: the row becomes visible with its figures."""
        import psycopg

        try:
            conn.execute(
                "UPDATE sessions SET status = %s, raw_bytes = %s, stopped_at = %s, "
                "link_stats = COALESCE(%s, link_stats), duration_us = COALESCE(%s, "
                "duration_us), loss = COALESCE(%s, loss), visible = TRUE WHERE id = %s",
                (status, n, self._wall(), stats_to_json(stats), duration_us,
                 None if loss is None else json.dumps(loss), sid),
            )  # fmt: skip
        except psycopg.Error as exc:
            raise self._error(exc) from None

    def _release(self, sid: int) -> None:
        with self._lock:
            self._active.pop(sid, None)

    def _start_flusher(self) -> None:
        with self._lock:
            if self._autoflush and self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_loop, name="mcuprof-pg-flush", daemon=True
                )
                self._flusher.start()

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._interval / 4):
            self.flush_due()

    def flush_due(self) -> None:
        for writer in list(self._active.values()):
            try:
                writer.flush_if_due()
            except UserError as exc:
                writer.error = writer.error or str(exc)
        with self.flushed:
            self.flushed.notify_all()

    def writer(self, session_id: int) -> PgSessionWriter | None:
        return self._active.get(int(session_id))

    # ------------------------------------------------------------------ reading

    def list(self, where: dict[str, str] | None = None) -> list[SessionInfo]:
        mine = self._mine()
        rows = self._read(f"SELECT {_COLUMNS} FROM sessions WHERE {_SEEN} ORDER BY id DESC",
                          (mine,))  # fmt: skip
        tags: dict[int, dict[str, str]] = {}
        for sid, key, value in self._read(
            f"SELECT t.session_id, t.key, t.value FROM session_tags t JOIN sessions ON "
            f"sessions.id = t.session_id WHERE {_SEEN}",
            (mine,),
        ):
            tags.setdefault(sid, {})[key] = value
        infos = (_info(r, tags.get(r[0], {})) for r in rows)
        return [i for i in infos if matches(i.tags, where or {})]

    def get(self, session_id: int) -> SessionInfo:
        sid = int(session_id)
        rows = self._read(f"SELECT {_COLUMNS} FROM sessions WHERE id = %s AND {_SEEN}",
                          (sid, self._mine()))  # fmt: skip
        if not rows:
            raise SessionNotFound(f"no session {session_id}")
        return _info(rows[0], self.tags(sid))

    def tags(self, session_id: int) -> dict[str, str]:
        rows = self._read(
            "SELECT key, value FROM session_tags WHERE session_id = %s ORDER BY key",
            (int(session_id),),
        )
        return dict(rows)  # type: ignore[arg-type]

    def set_tags(self, session_id: int, tags: dict[str, str]) -> SessionInfo:
        tags = check_tags(tags)
        sid = self.get(session_id).id
        with self._tx() as db:
            db.execute("DELETE FROM session_tags WHERE session_id = %s", (sid,))
            _insert_tags(db, sid, tags)
        return self.get(sid)

    def summary(self, session_id: int, version: int) -> dict[str, Any] | None:
        rows = self._read(
            "SELECT summary FROM session_summaries WHERE session_id = %s AND version = %s",
            (int(session_id), version),
        )
        return json.loads(rows[0][0]) if rows else None

    def save_summary(self, session_id: int, version: int, summary: dict[str, Any]) -> None:
        text = json.dumps(summary, separators=(",", ":"), allow_nan=False)
        with self._tx() as db:
            db.execute(
                "INSERT INTO session_summaries (session_id, version, summary) "
                "SELECT id, %s, %s FROM sessions WHERE id = %s ON CONFLICT (session_id) "
                "DO UPDATE SET version = EXCLUDED.version, summary = EXCLUDED.summary",
                (version, text, int(session_id)),
            )

    def _chunk(self, sid: int, idx: int) -> tuple[bytes, bool] | None:
        """One row: its bytes, and whether they are a zstd frame (rows stored before
        compression are not)."""
        rows = self._read(
            "SELECT data, zstd FROM raw_chunks WHERE session_id = %s AND idx = %s", (sid, idx)
        )
        return (bytes(rows[0][0]), bool(rows[0][1])) if rows else None

    def raw(self, session_id: int) -> bytes:
        info = self.get(session_id)
        if info.raw_bytes > MAX_RAW_WHOLE:
            raise UserError(
                f"session {info.id} stream is {info.raw_bytes:,} bytes; at most "
                f"{MAX_RAW_WHOLE:,} are read whole"
            )
        return whole(self.raw_chunks(info.id), f"session {info.id} stream")

    def raw_chunks(self, session_id: int, chunk: int = CHUNK) -> Iterator[bytes]:
        """As SessionStore.raw_chunks: the bytes as received, a row at a time."""
        return read_ahead(self._raw_pieces(session_id, chunk))

    def _raw_pieces(self, session_id: int, chunk: int) -> Generator[bytes, None, None]:
        sid = self.get(session_id).id
        idx = 0
        while (row := self._chunk(sid, idx)) is not None:
            data, compressed = row
            if compressed:
                yield from inflate((data,), chunk, f"session {sid} stream row {idx}")
            else:
                for i in range(0, len(data), chunk):
                    yield data[i : i + chunk]
            idx += 1

    def elf_bytes(self, session_id: int) -> bytes | None:
        sha = self.get(session_id).elf_sha256
        if sha is None:
            return None
        rows = self._read("SELECT data FROM elfs WHERE sha256 = %s", (sha,))
        return bytes(rows[0][0]) if rows else None

    def raw_size(self, session_id: int) -> int:
        rows = self._read(
            "SELECT COALESCE(SUM(size), 0) FROM raw_chunks WHERE session_id = %s",
            (self.get(session_id).id,),
        )
        return int(rows[0][0])

    def raw_location(self, session_id: int) -> str:
        return f"{self.location} (raw_chunks of session {int(session_id)})"

    def elf_location(self, session_id: int) -> str | None:
        sha = self.get(session_id).elf_sha256
        return None if sha is None else f"{self.location} (elfs {sha})"

    # ------------------------------------------------------------------ editing

    def _update(self, session_id: int, column: str, value: str) -> SessionInfo:
        sid = self.get(session_id).id
        with self._tx() as db:
            db.execute(f"UPDATE sessions SET {column} = %s WHERE id = %s", (value, sid))
        return self.get(sid)

    def rename(self, session_id: int, name: str) -> SessionInfo:
        return self._update(session_id, "name", clean_name(name))

    def set_notes(self, session_id: int, notes: str) -> SessionInfo:
        return self._update(session_id, "notes", clean_notes(notes))

    def set_tick_hz(self, session_id: int, hz: int) -> SessionInfo:
        """As SessionStore.set_tick_hz: a QS session re-read with another tick rate."""
        from dataclasses import replace

        from .model import RECORDING, SessionBusy, metadata_to_json

        info = self.get(session_id)
        if info.status == RECORDING:
            raise SessionBusy(f"session {session_id} is still being stored; re-read it after")
        if info.metadata is None:
            raise UserError(f"session {session_id} has no target information to change")
        old = info.metadata.timer_freq or hz
        meta = metadata_to_json(replace(info.metadata, timer_freq=int(hz)))
        with self._tx() as db:
            db.execute(
                "UPDATE sessions SET metadata = %s, duration_us = duration_us * %s WHERE id = %s",
                (meta, old / hz, info.id),
            )
        return self.get(info.id)

    def delete(self, session_id: int) -> None:
        """Remove a visible session, its chunks, and its ELF when no other uses it."""
        from .model import SessionBusy

        sid = int(session_id)
        if sid in self._active:
            raise SessionBusy(f"session {sid} is still recording; stop it first")
        with self._tx() as db:
            cur = db.execute("DELETE FROM sessions WHERE id = %s AND visible", (sid,))
            if cur.rowcount == 0:
                raise SessionNotFound(f"no session {sid}")
            self._drop_unused_elfs(db)


def _add_elf(conn: Any, data: bytes, now: float) -> str:
    sha = hashlib.sha256(data).hexdigest()
    # DO UPDATE (not NOTHING) locks the row, so a concurrent delete of its last user
    # cannot remove it before this session's row refers to it.
    conn.execute(
        "INSERT INTO elfs (sha256, size, added_at, data) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (sha256) DO UPDATE SET added_at = elfs.added_at",
        (sha, len(data), now, data),
    )
    return sha


def _insert_tags(db: Any, sid: int, tags: dict[str, str]) -> None:
    if tags:
        with db.cursor() as cur:
            cur.executemany(
                "INSERT INTO session_tags (session_id, key, value) VALUES (%s, %s, %s)",
                [(sid, k, v) for k, v in tags.items()],
            )
