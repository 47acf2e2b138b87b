"""Issue 26 F11/F15: the store does not trust its own files, and a raw download streams.

A session's raw file replaced by a FIFO used to block a worker for ever (eight of them
and the API stopped answering), one replaced by a link to /dev/zero was read until memory
ran out. Each reader below runs in a thread that must come back: a hang is a failure
(reported after 20 s), whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import threading
import tracemalloc

import pytest
from fastapi.testclient import TestClient

from mcuprof.errors import UserError
from mcuprof.store import SessionStore
from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings

from .conftest import capture

BASE_URL = "http://127.0.0.1:8000"


def _returns(fn, *args):
    """fn(*args) in a thread: (result or exception). Fails the test if it never returns."""
    out: list = []

    def run() -> None:
        try:
            out.append(fn(*args))
        except BaseException as exc:
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), f"{fn.__name__} hung"
    return out[0]


def _replace(path, how: str) -> None:
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    elif how == "zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()


@pytest.fixture
def stored(tmp_path):
    data = tmp_path / "data"
    with SessionStore(data, autoflush=False) as s:
        info = s.import_capture("one", capture(3))
    return data, info.id


@pytest.mark.parametrize(
    ("how", "what"), [("fifo", "a FIFO"), ("zero", "a character device"), ("dir", "a directory")]
)
def test_every_store_reader_refuses_a_raw_file_that_is_not_regular(stored, how, what) -> None:
    data, sid = stored
    with SessionStore(data, autoflush=False) as store:
        _replace(store.raw_path(sid), how)
        readers = (
            lambda i: store.raw(i),
            lambda i: list(store.raw_chunks(i)),
        )
        for reader in readers:
            err = _returns(reader, sid)
            assert isinstance(err, UserError), err
            msg = str(err)
            assert "\n" not in msg and f"{sid}.zst: is {what}" in msg
            assert f"session {sid} stream" in msg


def test_a_fifo_in_a_recording_sessions_place_does_not_hang_the_store_open(tmp_path) -> None:
    data = tmp_path / "data"
    store = SessionStore(data, autoflush=False)
    writer = store.create("live")
    writer.append(b"x")
    path = store.raw_path(writer.id)
    store._active.clear()  # as if the process died: no abort, the row says recording
    store._db.close()
    _replace(path, "fifo")
    reopened = _returns(SessionStore, data)
    assert isinstance(reopened, SessionStore)
    assert reopened.get(writer.id).status == "interrupted"
    reopened.close()


def test_api_answers_each_request_with_one_line_and_keeps_answering(stored) -> None:
    data, sid = stored
    with SessionStore(data, autoflush=False) as store:
        _replace(store.raw_path(sid), "fifo")
        app = create_app(Settings(autoconnect=False, data_dir=data), store=store)
        with TestClient(app, base_url=BASE_URL) as client:
            for _ in range(12):  # more than the thread pool would have had to spare
                r = _returns(client.get, f"/api/sessions/{sid}/raw")
                assert r.status_code == 400 and "is a FIFO" in r.json()["error"]
            r = _returns(client.get, f"/api/sessions/{sid}")
            assert r.status_code == 400 and "is a FIFO" in r.json()["error"]
            assert client.get("/api/sessions").status_code == 200


def test_sessions_show_says_why_and_exits(stored) -> None:
    data, sid = stored
    os.unlink(data / "raw" / f"{sid}.zst")
    os.symlink("/dev/zero", data / "raw" / f"{sid}.zst")
    proc = subprocess.run(
        [sys.executable, "-m", "mcuprof", "sessions", "show", str(sid), "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert "is a character device" in line and "regular files" in line


def test_raw_download_streams_the_session_in_pieces(tmp_path) -> None:
    """F15: the download held the whole session (a 2.4 GB session: 2.4 GB of RSS)."""
    from mcuprof.web.routes.sessions import stream_raw

    data = os.urandom(32 << 20)  # a download copies the stream out as it is
    with SessionStore(tmp_path / "data", autoflush=False) as store:
        writer = store.create("big")
        writer.append(data)
        sid = writer.finish().id
        tracemalloc.start()
        try:
            response = stream_raw(store, sid, "big.bin")
            digest = hashlib.sha256()

            async def drain() -> None:
                async for piece in response.body_iterator:
                    digest.update(piece)

            asyncio.run(drain())
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert digest.digest() == hashlib.sha256(data).digest()
    assert response.headers["content-length"] == str(len(data))
    # A few 1 MiB pieces in flight (one decompressed ahead, one queued, one sent), not
    # the session: 6 MiB, whatever its size.
    assert peak < len(data) // 4, f"the download held {peak:,} bytes"


class _FullDisk:
    """The store's connection, failing byte-count updates as SQLite does on a full disk."""

    def __init__(self, db) -> None:
        self._db = db

    def execute(self, sql: str, *args):
        if sql.startswith("UPDATE sessions SET raw_bytes"):
            import sqlite3

            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str):
        return getattr(self._db, name)


def test_flusher_survives_a_full_database_and_the_session_keeps_its_bytes(tmp_path) -> None:
    """F10: the flush thread died of an uncaught sqlite3.OperationalError."""
    clock = [0.0]
    store = SessionStore(tmp_path / "data", autoflush=False, clock=lambda: clock[0])
    writer = store.create("live")
    writer.append(b"abc")
    real = store._db
    store._db = _FullDisk(real)
    clock[0] += 5
    store.flush_due()  # what the flusher thread runs every pass
    assert writer.error is not None and "database or disk is full" in writer.error
    assert str(tmp_path / "data" / "sessions.db") in writer.error
    clock[0] += 5
    with pytest.raises(UserError, match="disk is full"):
        writer.append(b"def")  # the recorder hears it on its next append
    store._db = real
    info = writer.abort()
    assert info.status == "interrupted" and store.raw(info.id) == b"abcdef"
    store.close()
