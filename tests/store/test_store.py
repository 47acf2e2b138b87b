"""SessionStore: persistence, durability bookkeeping, deletion, and bad input."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.errors import UserError
from mcuprof.protocol import LinkStats, ProfileData, decode_stream
from mcuprof.store import (
    COMPLETE,
    INTERRUPTED,
    RECORDING,
    SessionBusy,
    SessionNotFound,
    SessionStore,
    resolve_data_dir,
)


def open_store(path: Path, clock=None) -> SessionStore:
    if clock is None:
        return SessionStore(path, autoflush=False)
    return SessionStore(path, autoflush=False, clock=clock)


def test_session_survives_restart(tmp_path, make_capture, fake_elf, meta):
    data = make_capture(4)
    store = open_store(tmp_path / "d")
    writer = store.create("before fix", fake_elf, None)
    writer.set_metadata(meta)
    for i in range(0, len(data), 333):
        writer.append(data[i : i + 333])
    stats = LinkStats(bytes=len(data), records=200)
    info = writer.finish(stats)
    store.set_notes(info.id, "baseline\nfor the CI gate")
    store.close()

    again = open_store(tmp_path / "d")
    [got] = again.list()
    assert got.id == info.id
    assert got.name == "before fix"
    assert got.notes == "baseline\nfor the CI gate"
    assert got.status == COMPLETE
    assert got.raw_bytes == len(data)
    assert got.metadata == meta
    assert got.link_stats is not None and got.link_stats["records"] == 200
    assert got.stopped_at is not None and got.started_at is not None
    assert got.stopped_at >= got.started_at
    assert again.raw(info.id) == data
    elf_copy = again.elf_path(info.id)
    assert elf_copy is not None and elf_copy.read_bytes() == fake_elf.read_bytes()
    assert got.elf_sha256 == hashlib.sha256(fake_elf.read_bytes()).hexdigest()
    assert got.elf_name == "fw.elf"
    events, dstats = decode_stream(again.raw(info.id))
    assert sum(len(e) for e in events if isinstance(e, ProfileData)) == 200
    assert dstats.crc_errors == 0
    again.close()


def test_sync_is_driven_by_the_injected_clock(tmp_path, fake_clock):
    store = open_store(tmp_path, fake_clock)
    observer = open_store(tmp_path)  # a second connection sees only what was committed
    writer = store.create("live", None, None)
    writer.append(b"a" * 100)
    # Written to the file at once, a whole zstd block (a kill cannot lose it) ...
    assert observer.raw(writer.id) == b"a" * 100
    # ... but not yet counted as synced: the interval has not elapsed.
    assert observer.get(writer.id).raw_bytes == 0
    fake_clock.now += 0.5
    writer.append(b"b" * 10)
    assert observer.get(writer.id).raw_bytes == 0
    fake_clock.now += 0.6
    writer.append(b"c" * 5)
    assert observer.get(writer.id).raw_bytes == 115
    assert writer.bytes_synced == 115
    # A tail followed by silence is synced by the flusher's poll, not by append.
    writer.append(b"d" * 7)
    store.flush_due()
    assert observer.get(writer.id).raw_bytes == 115
    fake_clock.now += 1.0
    store.flush_due()
    assert observer.get(writer.id).raw_bytes == 122
    writer.finish()
    observer.close()
    store.close()


def test_background_flusher_syncs_an_idle_tail(tmp_path, fake_clock):
    store = SessionStore(tmp_path, clock=fake_clock, flush_interval_s=0.01)
    writer = store.create("idle", None, None)
    writer.append(b"x" * 42)
    fake_clock.now += 1.0
    # The real flusher thread runs on its own; wait for its effect, not for time.
    with store.flushed:
        synced = store.flushed.wait_for(lambda: store.get(writer.id).raw_bytes == 42, 30)
    assert synced
    writer.finish()
    store.close()


def test_concurrent_capture_while_browsing(tmp_path, make_capture):
    data = make_capture(40, per_packet=20)
    store = open_store(tmp_path)
    old = store.import_capture("old run", make_capture(3))
    writer = store.create("live run", None, None)
    browser = open_store(tmp_path)  # e.g. the dashboard in another process
    started = threading.Event()
    errors: list[BaseException] = []

    def reader_thread() -> None:
        try:
            started.set()
            for i in range(0, len(data), 97):
                writer.append(data[i : i + 97])
                writer.flush()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    t = threading.Thread(target=reader_thread)
    t.start()
    started.wait()
    seen_sizes = []
    while t.is_alive():
        assert browser.raw(old.id) == make_capture(3)
        ids = [s.id for s in browser.list()]
        assert ids == [writer.id, old.id]
        assert browser.get(writer.id).status == RECORDING
        live = store.raw(writer.id)
        assert data.startswith(live)  # a prefix of the stream, never garbage
        seen_sizes.append(len(live))
    t.join()
    assert not errors
    assert seen_sizes == sorted(seen_sizes)
    writer.finish()
    assert browser.raw(writer.id) == data
    assert browser.get(writer.id).raw_bytes == len(data)
    browser.close()
    store.close()


def test_delete_removes_files_and_keeps_shared_elf(tmp_path, make_capture, fake_elf):
    store = open_store(tmp_path)
    a = store.import_capture("a", make_capture(1), fake_elf)
    b = store.import_capture("b", make_capture(2), fake_elf)
    elf_copy = store.elf_path(a.id)
    assert elf_copy is not None and elf_copy == store.elf_path(b.id)
    raw_a, raw_b = store.raw_path(a.id), store.raw_path(b.id)
    assert raw_a.exists() and raw_b.exists()

    store.delete(a.id)
    assert not raw_a.exists()
    assert elf_copy.exists()  # b still uses it
    with pytest.raises(SessionNotFound):
        store.get(a.id)

    store.delete(b.id)
    assert not raw_b.exists()
    assert not elf_copy.exists()
    assert list(store.elf_dir.iterdir()) == []
    assert list(store.raw_dir.iterdir()) == []
    assert store.list() == []
    with pytest.raises(SessionNotFound):
        store.delete(b.id)
    # Ids are never reused: a script holding an old id cannot hit a new session.
    c = store.import_capture("c", make_capture(1))
    assert c.id > b.id
    store.close()


def test_delete_refuses_a_live_recording(tmp_path):
    store = open_store(tmp_path)
    writer = store.create("live", None, None)
    other = open_store(tmp_path)
    with pytest.raises(SessionBusy):
        store.delete(writer.id)
    with pytest.raises(SessionBusy):
        other.delete(writer.id)  # another process: told by the file lock
    writer.finish()
    other.delete(writer.id)
    assert not store.raw_path(writer.id).exists()
    other.close()
    store.close()


def test_open_marks_dead_writers_interrupted_but_not_live_ones(tmp_path):
    store = open_store(tmp_path)
    live = store.create("live", None, None)
    live.append(b"12345")
    # Another process opening the store must not take a live capture for a dead one.
    other = open_store(tmp_path)
    assert other.recover() == []
    assert other.get(live.id).status == RECORDING
    other.close()
    live.finish()

    # Simulate a crashed writer: a 'recording' row whose file nobody holds.
    with sqlite3.connect(tmp_path / "sessions.db") as db:
        db.execute("UPDATE sessions SET status='recording', raw_bytes=2 WHERE id=?", (live.id,))
    store.close()
    again = open_store(tmp_path)
    info = again.get(live.id)
    assert info.status == INTERRUPTED
    assert info.raw_bytes == 5
    again.close()


def test_open_removes_orphan_files(tmp_path, make_capture, fake_elf):
    store = open_store(tmp_path)
    kept = store.import_capture("kept", make_capture(1), fake_elf)
    store.close()
    (tmp_path / "raw" / "999.raw").write_bytes(b"left by a kill between delete steps")
    (tmp_path / "raw" / "998.zst").write_bytes(b"left by a kill between delete steps")
    (tmp_path / "elf" / ("0" * 64 + ".elf")).write_bytes(b"orphan")
    (tmp_path / "elf" / "abc.123.tmp").write_bytes(b"half a copy")
    again = open_store(tmp_path)
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == [f"{kept.id}.zst"]
    assert [p.name for p in (tmp_path / "elf").iterdir()] == [f"{kept.elf_sha256}.elf"]
    assert again.raw(kept.id) == make_capture(1)
    again.close()


def test_import_decodes_metadata_and_stats(tmp_path, make_capture, meta):
    store = open_store(tmp_path)
    data = make_capture(3, per_packet=10) + b"\x00garbage"
    info = store.import_capture("imported", data, notes="from CI")
    assert info.source == "import"
    assert info.status == COMPLETE
    assert info.metadata == meta
    assert info.link_stats is not None
    assert info.link_stats["records"] == 30
    assert info.link_stats["packets"]["profile_data"] == 3
    assert info.link_stats["skipped_bytes"] == 8
    assert info.notes == "from CI"
    # 30 records, entries 0, 10, ... 290, each 5 µs long: first entry 0, last exit 295.
    assert info.duration_us == 295.0
    assert store.raw(info.id) == data
    store.close()


def test_user_errors_are_one_line(tmp_path):
    store = open_store(tmp_path / "ok")
    for junk in (b"", b"# README\n" * 40, bytes(range(256)) * 8):
        with pytest.raises(UserError, match="no valid packet") as caught:
            store.import_capture("junk", junk)
        assert "\n" not in str(caught.value)
    assert store.list() == []  # refused imports leave nothing behind
    info = store.create("x", None, None).finish()
    for bad in ("", "   ", "n" * 201):
        with pytest.raises(UserError):
            store.rename(info.id, bad)
    assert store.rename(info.id, "  two   words ").name == "two words"
    assert store.set_notes(info.id, "a\x07b\nc").notes == "ab\nc"
    with pytest.raises(SessionNotFound):
        store.rename(12345, "y")
    with pytest.raises(SessionNotFound):
        store.raw(12345)
    with pytest.raises(UserError, match="no such ELF"):
        store.create("y", tmp_path / "missing.elf", None)
    store.close()

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(UserError) as exc:
        SessionStore(not_a_dir, autoflush=False)
    assert "\n" not in str(exc.value)

    bad_db = tmp_path / "bad"
    bad_db.mkdir()
    (bad_db / "sessions.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(UserError, match="not a usable mcuprof database"):
        SessionStore(bad_db, autoflush=False)


def test_append_after_finish_is_ignored(tmp_path):
    store = open_store(tmp_path)
    writer = store.create("w", None, None)
    writer.append(b"abc")
    writer.finish()
    writer.append(b"late chunk from the reader thread")
    assert store.raw(writer.id) == b"abc"
    assert writer.finish().raw_bytes == 3  # idempotent
    store.close()


def test_close_interrupts_open_writers(tmp_path):
    store = open_store(tmp_path)
    writer = store.create("w", None, None)
    writer.append(b"abc")
    store.close()
    again = open_store(tmp_path)
    info = again.get(writer.id)
    assert (info.status, info.raw_bytes) == (INTERRUPTED, 3)
    again.close()


@settings(max_examples=30)
@given(chunks=st.lists(st.binary(max_size=300), max_size=20))
def test_any_chunking_stores_the_exact_stream(tmp_path_factory, chunks):
    store = open_store(tmp_path_factory.mktemp("s"))
    writer = store.create("h", None, None)
    for c in chunks:
        writer.append(c)
    info = writer.finish()
    assert store.raw(writer.id) == b"".join(chunks)
    assert info.raw_bytes == sum(map(len, chunks))
    store.close()


def test_data_dir_resolution(tmp_path, monkeypatch):
    env = {"MCUPROF_DATA_DIR": str(tmp_path / "env"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert resolve_data_dir(str(tmp_path / "cli"), env) == tmp_path / "cli"
    assert resolve_data_dir(None, env) == tmp_path / "env"
    assert resolve_data_dir(None, {"XDG_DATA_HOME": str(tmp_path / "xdg")}) == (
        tmp_path / "xdg" / "mcuprof"
    )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_data_dir(None, {}) == tmp_path / "home" / ".local" / "share" / "mcuprof"


def test_raw_chunks_streams_the_stored_bytes(tmp_path, make_capture, fake_elf, meta):
    """The summary and the copy out read a session in pieces: the pieces are the stored
    stream exactly, for a finished session, one still recording and one with no file."""
    data = make_capture(4)
    store = open_store(tmp_path / "d")
    writer = store.create("pieces", fake_elf, None)
    writer.set_metadata(meta)
    writer.append(data[:1000])
    writer.flush()
    assert b"".join(store.raw_chunks(writer.id, 64)) == data[:1000]  # still recording
    writer.append(data[1000:])
    writer.finish(LinkStats(bytes=len(data)))
    pieces = list(store.raw_chunks(writer.id, 333))
    assert b"".join(pieces) == data == store.raw(writer.id)
    assert max(len(p) for p in pieces) == 333
    store.raw_path(writer.id).unlink()
    assert list(store.raw_chunks(writer.id)) == [] and store.raw(writer.id) == b""
    with pytest.raises(SessionNotFound):
        list(store.raw_chunks(writer.id + 1))
