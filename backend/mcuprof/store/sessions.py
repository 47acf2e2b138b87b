"""The session store: one SQLite database (WAL) plus plain files, under a data directory.

Layout::

    sessions.db        one row per session, one per stored ELF
    raw/<id>.zst       the device-to-host stream as received, zstd-compressed (store/zst.py)
    raw/<id>.raw       the same, uncompressed: sessions stored before compression
    elf/<sha256>.elf   ELF files, content-addressed: sessions of one build share a copy

Raw bytes go to an append-only file, not into SQLite chunks. An append is then one
write(2) of a complete zstd block, cheap enough for the reader thread on every chunk, and
once it returns the bytes survive this process being killed; an fsync at most every second
covers an unplug or power cut. Blob chunks would cost a transaction per chunk (or a buffer
that SIGKILL loses), push megabytes through the WAL, and every replay or export would have
to reassemble them. The database holds the byte count (as received) last fsync'd; it is
reconciled with the file on open. Every reader gets the bytes from ``raw_chunks``,
whatever the file's format.

A live writer holds an exclusive flock on its raw file. The kernel drops it when the process
dies, which is how a later open tells a crashed writer from a live one in another process,
without trusting PIDs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import kinds
from ..capture import CHUNK
from ..errors import UserError
from ..files import (
    MAX_ELF_BYTES,
    MAX_FILE_BYTES,
    file_error,
    open_regular_file,
    read_file,
)
from ..protocol import LinkStats, Metadata
from .importing import import_capture
from .location import ENV_VAR
from .model import (
    INTERRUPTED,
    RECORDING,
    SessionBusy,
    SessionInfo,
    SessionNotFound,
    clean_name,
    clean_notes,
    metadata_from_json,
    metadata_to_json,
    stats_to_json,
)
from .tags import check_tags, matches
from .writer import SessionWriter
from .zst import READ_BYTES, inflate, read_ahead

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no liveness check, see _writer_alive
    fcntl = None  # type: ignore[assignment]

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS elfs (
    sha256   TEXT PRIMARY KEY,
    size     INTEGER NOT NULL,
    added_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    notes      TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL CHECK (status IN ('recording', 'complete', 'interrupted')),
    source     TEXT NOT NULL DEFAULT 'live',
    created_at REAL NOT NULL,
    started_at REAL,
    stopped_at REAL,
    raw_bytes  INTEGER NOT NULL DEFAULT 0,
    elf_sha256 TEXT REFERENCES elfs(sha256),
    elf_name   TEXT,
    metadata   TEXT,
    link_stats TEXT,
    duration_us REAL
);
CREATE INDEX IF NOT EXISTS sessions_elf ON sessions(elf_sha256);
CREATE TABLE IF NOT EXISTS session_tags (
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (session_id, key)
);
CREATE INDEX IF NOT EXISTS session_tags_kv ON session_tags(key, value);
CREATE TABLE IF NOT EXISTS session_summaries (
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    summary    TEXT NOT NULL
);
"""
_COLUMNS = (
    "id, name, notes, status, source, created_at, started_at, stopped_at, raw_bytes, "
    "elf_sha256, elf_name, metadata, link_stats, duration_us, kind, loss"
)
# Added after schema 1 shipped; databases without it hold MiniProfiler sessions only.
_KIND_COLUMN = "ALTER TABLE sessions ADD COLUMN kind TEXT NOT NULL DEFAULT 'miniprofiler'"
KINDS = kinds.NAMES
# Added later still: the device's counters as of Stop and the stretches with loss
# (loss.py), as JSON. NULL in rows stored before it: "loss not recorded", never 0.
_LOSS_COLUMN = "ALTER TABLE sessions ADD COLUMN loss TEXT"

ElfInput = str | os.PathLike[str] | bytes | None

# Files inside the store get the checks a path from the command line gets (files.py): a
# raw file replaced by a FIFO would block a worker for ever, a link to /dev/zero would be
# read until memory runs out. Anything but a regular file makes its session unreadable.
STORE_HINT = "the store holds only regular files; delete the session or restore the file"
# A session's stream read whole (views that need it all at once); larger sessions are
# read in chunks (summary, download, comparison, S12Z analysis) with no size cap.
MAX_RAW_WHOLE = MAX_FILE_BYTES
_STREAMED = 1 << 62  # chunked readers: a regular file ends, whatever its size
ZST_SUFFIX = ".zst"  # sessions stored compressed (store/zst.py)
RAW_SUFFIX = ".raw"  # sessions an older mcuprof stored as received


class SessionStore:
    """Sessions under ``data_dir``. Safe to share between threads; several processes may
    open the same directory (SQLite WAL serialises writers, readers never wait)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        flush_interval_s: float = 1.0,
        autoflush: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.raw_dir = self.data_dir / "raw"
        self.elf_dir = self.data_dir / "elf"
        self._clock = clock
        self._wall = wall_clock
        self._interval = flush_interval_s
        self._autoflush = autoflush
        self._lock = threading.RLock()
        self._active: dict[int, SessionWriter] = {}
        self._to_recover: set[int] = set()  # closed, but the database missed it (full disk)
        self._flusher: threading.Thread | None = None
        self._stop = threading.Event()
        # Notified after every flusher pass, so callers can wait for a sync, not for time.
        self.flushed = threading.Condition()
        try:
            for d in (self.data_dir, self.raw_dir, self.elf_dir):
                d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"cannot create data directory {self.data_dir}: {exc.strerror or exc}"
            ) from None
        if not all(os.access(d, os.W_OK | os.X_OK) for d in (self.data_dir, self.raw_dir)):
            # SQLite would say "unable to open database file", which reads as corruption.
            raise UserError(
                f"data directory {self.data_dir} is read-only; make it writable or choose "
                f"another with --data-dir (or {ENV_VAR})"
            )
        self.db_path = self.data_dir / "sessions.db"
        self._db = self._connect()
        self.recover()

    # ------------------------------------------------------------------ setup

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                self.db_path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode keeps the database consistent after a kill or power cut;
            # at worst the last commit is rolled back, and recover() repairs byte counts.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UserError(
                    f"{self.db_path}: written by a newer mcuprof (schema {version}); upgrade"
                )
            db.executescript(_SCHEMA)
            if "kind" not in {row[1] for row in db.execute("PRAGMA table_info(sessions)")}:
                db.execute(_KIND_COLUMN)
            if "loss" not in {row[1] for row in db.execute("PRAGMA table_info(sessions)")}:
                db.execute(_LOSS_COLUMN)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.db_path}: not a usable mcuprof database ({exc})") from None
        return db

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front so concurrent writers queue, not deadlock."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise UserError(f"session database is busy ({exc})") from None
            try:
                yield db
                db.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):  # a full disk, a read-only directory
                    raise UserError(f"session database {self.db_path}: {exc}") from None
                raise

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the database; writers still open are closed as 'interrupted'."""
        self._stop.set()
        for writer in list(self._active.values()):
            with contextlib.suppress(UserError, OSError):
                writer.abort()
        if self._flusher is not None:
            self._flusher.join(timeout=5)
        with self._lock:
            self._db.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ recovery

    def recover(self) -> list[int]:
        """Mark sessions whose writer died as 'interrupted', with the byte length found on
        disk; remove files no row refers to (left by a kill between two steps). Returns the
        ids marked. Runs on open; cheap enough to call again."""
        marked: list[int] = []
        with self._write() as db:
            rows = db.execute("SELECT id FROM sessions WHERE status = ?", (RECORDING,)).fetchall()
            for (sid,) in rows:
                if sid in self._active:
                    continue
                found = self._dead_writer_size(sid)
                if found is None:
                    continue
                size, mtime = found
                db.execute(
                    "UPDATE sessions SET status = ?, raw_bytes = ?, "
                    "stopped_at = COALESCE(stopped_at, ?) WHERE id = ?",
                    (INTERRUPTED, size, mtime, sid),
                )
                marked.append(sid)
            self._sweep(db)
        return marked

    def _dead_writer_size(self, sid: int) -> tuple[int, float | None] | None:
        """(length, mtime) of a session file nobody writes any more; None while alive."""
        path = self.raw_path(sid)
        try:
            # O_NONBLOCK: a FIFO in the store's place must not hang the server's start.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return 0, None
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return None
            st = os.fstat(fd)
            if path.suffix == RAW_SUFFIX or not stat.S_ISREG(st.st_mode):
                return st.st_size, st.st_mtime  # a FIFO is not read: readers refuse it
            return _inflated_size(fd, f"session {sid} stream"), st.st_mtime
        finally:
            os.close(fd)  # also drops the probe lock

    def _sweep(self, db: sqlite3.Connection) -> None:
        ids = {row[0] for row in db.execute("SELECT id FROM sessions")}
        for path in self.raw_dir.iterdir():
            stored = path.suffix in (ZST_SUFFIX, RAW_SUFFIX) and path.stem.isdigit()
            if stored and int(path.stem) not in ids:
                path.unlink(missing_ok=True)
        db.execute(
            "DELETE FROM elfs WHERE sha256 NOT IN "
            "(SELECT elf_sha256 FROM sessions WHERE elf_sha256 IS NOT NULL)"
        )
        known = {row[0] for row in db.execute("SELECT sha256 FROM elfs")}
        for path in self.elf_dir.iterdir():
            # A .tmp is an ELF copy cut short by a kill; copies happen inside a write
            # transaction, so none can be in progress while we hold ours.
            stale = path.suffix == ".tmp" or (path.suffix == ".elf" and path.stem not in known)
            if stale:
                path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ paths

    def raw_path(self, session_id: int) -> Path:
        """The session's file: compressed (.zst), or uncompressed (.raw) when an older
        mcuprof stored it. Read it with ``raw_chunks``, never directly."""
        old = self.raw_dir / f"{int(session_id)}{RAW_SUFFIX}"
        return old if os.path.lexists(old) else old.with_suffix(ZST_SUFFIX)

    def elf_path(self, session_id: int) -> Path | None:
        info = self.get(session_id)
        return None if info.elf_sha256 is None else self.elf_dir / f"{info.elf_sha256}.elf"

    def raw_size(self, session_id: int) -> int:
        """Bytes stored so far, as received (for a session still recording, more than
        raw_bytes): at most what ``raw_chunks`` gives when called after."""
        sid = int(session_id)
        writer = self._active.get(sid)
        if writer is not None:
            return writer.bytes_written
        path = self.raw_path(sid)
        if path.suffix == RAW_SUFFIX:
            return path.lstat().st_size
        info = self.get(sid)
        if info.status != RECORDING:
            return info.raw_bytes
        if not os.path.lexists(path):
            return 0
        return sum(len(piece) for piece in self.raw_chunks(sid))  # another process's

    def raw_location(self, session_id: int) -> str:
        """Where the raw stream is, for people (store/api.py)."""
        return str(self.raw_path(session_id))

    def elf_location(self, session_id: int) -> str | None:
        path = self.elf_path(session_id)
        return None if path is None else str(path)

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
    ) -> SessionWriter:
        """Start a session and return its writer. ``elf_path`` may be a path or the ELF's
        bytes (then ``elf_name`` names it). The ELF is copied into the store."""
        name = clean_name(name)
        notes = clean_notes(notes)
        tags = check_tags(tags)
        elf_bytes, elf_label = _read_elf(elf_path, elf_name)
        now = self._wall()
        with self._write() as db:
            sha = None if elf_bytes is None else self._add_elf(db, elf_bytes, now)
            cur = db.execute(
                "INSERT INTO sessions (name, notes, status, source, created_at, started_at, "
                "elf_sha256, elf_name, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    notes,
                    RECORDING,
                    source,
                    now,
                    now if started_at is None else started_at,
                    sha,
                    elf_label,
                    metadata_to_json(metadata),
                ),
            )
            sid = int(cur.lastrowid or 0)
            if kind not in KINDS:
                raise ValueError(f"unknown session kind {kind!r}")
            db.execute("UPDATE sessions SET kind = ? WHERE id = ?", (kind, sid))
            _insert_tags(db, sid, tags)
            fd = self._open_raw(sid)
            writer = SessionWriter(self, sid, fd, self._clock, self._interval)
            self._active[sid] = writer
        self._start_flusher()
        return writer

    def _open_raw(self, sid: int) -> int:
        path = self.raw_dir / f"{sid}{ZST_SUFFIX}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_EXCL, 0o644)
        except OSError as exc:
            raise UserError(f"cannot create {path}: {exc.strerror or exc}") from None
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _fsync_dir(self.raw_dir)  # the file's name must survive a power cut too
        return fd

    def _add_elf(self, db: sqlite3.Connection, data: bytes, now: float) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self.elf_dir / f"{sha}.elf"
        if not path.exists():
            tmp = path.with_name(f"{sha}.{os.getpid()}.tmp")
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise UserError(f"cannot store ELF: {exc.strerror or exc}") from None
            _fsync_dir(self.elf_dir)
        db.execute(
            "INSERT OR IGNORE INTO elfs (sha256, size, added_at) VALUES (?, ?, ?)",
            (sha, len(data), now),
        )
        return sha

    def import_capture(
        self,
        name: str,
        data: bytes | str | os.PathLike[str],
        elf: ElfInput = None,
        **options: Any,
    ) -> SessionInfo:
        """Store a raw capture as a finished session (store/importing.py)."""
        return import_capture(self, name, data, elf, **options)

    def _discard(self, writer: SessionWriter) -> None:
        """An import that failed: its session goes, whatever it held."""
        writer.abort()
        self.delete(writer.id)

    # callbacks from SessionWriter

    def _set_raw_bytes(self, sid: int, n: int) -> None:
        with self._write() as db:
            db.execute("UPDATE sessions SET raw_bytes = ? WHERE id = ?", (n, sid))

    def _set_metadata(self, sid: int, meta: Metadata) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE sessions SET metadata = ? WHERE id = ?", (metadata_to_json(meta), sid)
            )

    def _finish(
        self,
        sid: int,
        status: str,
        n: int,
        stats: LinkStats | dict[str, Any] | None,
        duration_us: float | None,
        loss: dict[str, Any] | None = None,
    ) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE sessions SET status = ?, raw_bytes = ?, stopped_at = ?, "
                "link_stats = COALESCE(?, link_stats), duration_us = COALESCE(?, duration_us) "
                "WHERE id = ?",
                (status, n, self._wall(), stats_to_json(stats), duration_us, sid),
            )
            if loss is not None:
                db.execute("UPDATE sessions SET loss = ? WHERE id = ?", (json.dumps(loss), sid))
            self._active.pop(sid, None)

    def _unfinished(self, sid: int) -> None:
        with self._lock:
            self._active.pop(sid, None)
            self._to_recover.add(sid)

    # ------------------------------------------------------------------ flusher

    def _start_flusher(self) -> None:
        if not self._autoflush or self._flusher is not None:
            return
        with self._lock:
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_loop, name="mcuprof-store-flush", daemon=True
                )
                self._flusher.start()

    def _flush_loop(self) -> None:
        # Covers the tail of a capture that stops arriving: append() alone would never
        # sync bytes that are followed by silence.
        while not self._stop.wait(self._interval / 4):
            self.flush_due()

    def flush_due(self) -> None:
        for writer in list(self._active.values()):
            try:
                writer.flush_if_due()
            except UserError as exc:  # kept for the recorder to report; the flusher goes on
                writer.error = writer.error or str(exc)
        if self._to_recover:
            with contextlib.suppress(UserError):
                self.recover()
                self._to_recover.clear()
        with self.flushed:
            self.flushed.notify_all()

    def writer(self, session_id: int) -> SessionWriter | None:
        """The open writer of a session being recorded by this process, if any."""
        return self._active.get(int(session_id))

    # ------------------------------------------------------------------ reading

    def list(self, where: dict[str, str] | None = None) -> list[SessionInfo]:
        """All sessions, newest first; with ``where``, those carrying every tag given."""
        rows = self._read(f"SELECT {_COLUMNS} FROM sessions ORDER BY id DESC")
        tags: dict[int, dict[str, str]] = {}
        for sid, key, value in self._read("SELECT session_id, key, value FROM session_tags"):
            tags.setdefault(sid, {})[key] = value
        infos = (_info(r, tags.get(r[0], {})) for r in rows)
        return [i for i in infos if matches(i.tags, where or {})]

    def get(self, session_id: int) -> SessionInfo:
        rows = self._read(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (int(session_id),))
        if not rows:
            raise SessionNotFound(f"no session {session_id}")
        return _info(rows[0], self.tags(session_id))

    def tags(self, session_id: int) -> dict[str, str]:
        rows = self._read(
            "SELECT key, value FROM session_tags WHERE session_id = ? ORDER BY key",
            (int(session_id),),
        )
        return dict(rows)

    def set_tags(self, session_id: int, tags: dict[str, str]) -> SessionInfo:
        """Replace a session's tags (checked: store/tags.py)."""
        tags = check_tags(tags)
        sid = int(session_id)
        with self._write() as db:
            if db.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
                raise SessionNotFound(f"no session {sid}")
            db.execute("DELETE FROM session_tags WHERE session_id = ?", (sid,))
            _insert_tags(db, sid, tags)
        return self.get(sid)

    def summary(self, session_id: int, version: int) -> dict[str, Any] | None:
        """The per-function summary kept for a session (history/summary.py), if one of
        this ``version`` was kept."""
        import json

        rows = self._read(
            "SELECT summary FROM session_summaries WHERE session_id = ? AND version = ?",
            (int(session_id), version),
        )
        return json.loads(rows[0][0]) if rows else None

    def save_summary(self, session_id: int, version: int, summary: dict[str, Any]) -> None:
        import json

        text = json.dumps(summary, separators=(",", ":"), allow_nan=False)
        with self._write() as db:
            if db.execute("SELECT 1 FROM sessions WHERE id = ?", (int(session_id),)).fetchone():
                db.execute(
                    "INSERT OR REPLACE INTO session_summaries (session_id, version, summary) "
                    "VALUES (?, ?, ?)",
                    (int(session_id), version, text),
                )

    def raw(self, session_id: int) -> bytes:
        """The stored stream (at most MAX_RAW_WHOLE bytes). For a session still recording,
        what has been written so far."""
        label = f"session {session_id} stream"
        if self.raw_size(session_id) > MAX_RAW_WHOLE:  # refused before reading
            raise UserError(f"{label} too large (the limit is {MAX_RAW_WHOLE >> 20:,} MiB)")
        return whole(self.raw_chunks(session_id), label)

    def raw_chunks(self, session_id: int, chunk: int = CHUNK) -> Iterator[bytes]:
        """The stored stream as the device sent it, in pieces of at most ``chunk`` bytes:
        the one way to read a session's bytes (views, exports, replays, summaries). A
        one-line UserError when the file is not a regular file or not zstd."""
        return read_ahead(self._raw_pieces(session_id, chunk))

    def _raw_pieces(self, session_id: int, chunk: int) -> Generator[bytes, None, None]:
        self.get(session_id)
        path = self.raw_path(session_id)
        if not os.path.lexists(path):
            return
        label = f"session {session_id} stream"
        with open_regular_file(path, label, _STREAMED, STORE_HINT) as f:
            try:
                if path.suffix == RAW_SUFFIX:
                    while data := f.read(chunk):
                        yield data
                else:
                    reads = iter(lambda: f.read(READ_BYTES), b"")
                    yield from inflate(reads, chunk, label)
            except OSError as exc:
                raise file_error(path, exc) from None

    def elf_bytes(self, session_id: int) -> bytes | None:
        path = self.elf_path(session_id)
        if path is None:
            return None
        return read_file(path, f"session {session_id} ELF", MAX_ELF_BYTES, STORE_HINT)

    # ------------------------------------------------------------------ editing

    def set_tick_hz(self, session_id: int, hz: int) -> SessionInfo:
        """Re-read a QS session with another tick rate: its metadata keeps the rate its
        times are read with, and its stored span follows (same ticks, other µs)."""
        info = self.get(session_id)
        if info.status == RECORDING:  # its Stop would write the recorded rate back
            raise SessionBusy(f"session {session_id} is still being stored; re-read it after")
        meta = info.metadata
        if meta is None:
            raise UserError(f"session {session_id} has no target information to change")
        old = meta.timer_freq or hz
        with self._write() as db:
            db.execute(
                "UPDATE sessions SET metadata = ?, duration_us = duration_us * ? WHERE id = ?",
                (metadata_to_json(replace(meta, timer_freq=int(hz))), old / hz, info.id),
            )
        return self.get(session_id)

    def rename(self, session_id: int, name: str) -> SessionInfo:
        name = clean_name(name)
        with self._write() as db:
            cur = db.execute("UPDATE sessions SET name = ? WHERE id = ?", (name, int(session_id)))
            if cur.rowcount == 0:
                raise SessionNotFound(f"no session {session_id}")
        return self.get(session_id)

    def set_notes(self, session_id: int, notes: str) -> SessionInfo:
        notes = clean_notes(notes)
        with self._write() as db:
            cur = db.execute("UPDATE sessions SET notes = ? WHERE id = ?", (notes, int(session_id)))
            if cur.rowcount == 0:
                raise SessionNotFound(f"no session {session_id}")
        return self.get(session_id)

    def delete(self, session_id: int) -> None:
        """Remove the session, its raw file, and its ELF when no other session uses it."""
        sid = int(session_id)
        with self._write() as db:
            row = db.execute("SELECT status, elf_sha256 FROM sessions WHERE id = ?", (sid,))
            found = row.fetchone()
            if found is None:
                raise SessionNotFound(f"no session {sid}")
            status, sha = found
            if sid in self._active or (status == RECORDING and self._dead_writer_size(sid) is None):
                raise SessionBusy(f"session {sid} is still recording; stop it first")
            db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
            if sha is not None:
                (users,) = db.execute(
                    "SELECT COUNT(*) FROM sessions WHERE elf_sha256 = ?", (sha,)
                ).fetchone()
                if users == 0:
                    db.execute("DELETE FROM elfs WHERE sha256 = ?", (sha,))
                    # Inside the transaction: a concurrent create() of the same ELF waits
                    # for us and then finds the file gone, so it writes it again.
                    (self.elf_dir / f"{sha}.elf").unlink(missing_ok=True)
        # Ids are never reused (AUTOINCREMENT), so nothing can claim this name meanwhile.
        for suffix in (ZST_SUFFIX, RAW_SUFFIX):
            (self.raw_dir / f"{sid}{suffix}").unlink(missing_ok=True)


def whole(chunks: Iterator[bytes], label: str) -> bytes:
    """A stream's pieces joined, refused past MAX_RAW_WHOLE bytes (read it in chunks)."""
    out = bytearray()
    for piece in chunks:
        out += piece
        if len(out) > MAX_RAW_WHOLE:
            raise UserError(f"{label} too large (the limit is {MAX_RAW_WHOLE >> 20:,} MiB)")
    return bytes(out)


def _inflated_size(fd: int, label: str) -> int:
    """The length, as received, of the compressed file open at ``fd`` (read through)."""
    reads = iter(lambda: os.read(fd, READ_BYTES), b"")
    n = 0
    with contextlib.suppress(UserError):  # damaged: what decodes before the damage counts
        for piece in inflate(reads, READ_BYTES, label):
            n += len(piece)
    return n


def _insert_tags(db: sqlite3.Connection, sid: int, tags: dict[str, str]) -> None:
    db.executemany(
        "INSERT INTO session_tags (session_id, key, value) VALUES (?, ?, ?)",
        [(sid, k, v) for k, v in tags.items()],
    )


def _info(r: tuple[Any, ...], tags: dict[str, str] | None = None) -> SessionInfo:
    import json

    return SessionInfo(
        id=r[0],
        name=r[1],
        notes=r[2],
        status=r[3],
        source=r[4],
        created_at=r[5],
        started_at=r[6],
        stopped_at=r[7],
        raw_bytes=r[8],
        elf_sha256=r[9],
        elf_name=r[10],
        metadata=metadata_from_json(r[11]),
        link_stats=json.loads(r[12]) if r[12] else None,
        duration_us=r[13],
        kind=r[14],
        tags=dict(tags or {}),
        loss=json.loads(r[15]) if r[15] else None,
    )


def _read_elf(elf: ElfInput, elf_name: str | None) -> tuple[bytes | None, str | None]:
    if elf is None:
        return None, None
    if isinstance(elf, bytes | bytearray):
        return bytes(elf), elf_name or "firmware.elf"
    path = Path(elf)
    if not path.exists():
        raise UserError(f"{path}: no such ELF file")
    return read_file(path, "ELF file", MAX_ELF_BYTES), elf_name or path.name


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the data files are synced
    finally:
        os.close(fd)
