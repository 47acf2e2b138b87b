"""The store's public interface (store/api.py), one suite run on both backends: SQLite plus
files, and a real PostgreSQL server started for the test session (tests/pgserver.py)."""

from __future__ import annotations

import hashlib
import os

import pytest

from mcuprof.errors import UserError
from mcuprof.protocol import LinkStats
from mcuprof.store import COMPLETE, INTERRUPTED, SessionNotFound, open_store
from mcuprof.store.pgwriter import PG_CHUNK_BYTES


@pytest.fixture(params=["sqlite", "postgresql"])
def opener(request, tmp_path):
    """Opens (and reopens) one store of the backend under test; closes what it opened."""
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    opened = []

    def make():
        store = open_store(tmp_path / "d", url, autoflush=False)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_a_session_survives_reopening(opener, make_capture, fake_elf, meta):
    data = make_capture(4)
    store = opener()
    writer = store.create("before fix", fake_elf, None, tags={"board": "f4"})
    writer.set_metadata(meta)
    for i in range(0, len(data), 333):
        writer.append(data[i : i + 333])
    info = writer.finish(LinkStats(bytes=len(data), records=200), duration_us=12.5)
    store.set_notes(info.id, "baseline\nfor the CI gate")
    store.close()

    again = opener()
    [got] = again.list()
    assert (got.id, got.name, got.status, got.source) == (info.id, "before fix", COMPLETE, "live")
    assert got.notes == "baseline\nfor the CI gate"
    assert got.raw_bytes == len(data) and got.duration_us == 12.5
    assert got.metadata == meta and got.tags == {"board": "f4"}
    assert got.link_stats is not None and got.link_stats["records"] == 200
    assert again.raw(info.id) == data
    assert again.elf_bytes(info.id) == fake_elf.read_bytes()
    assert got.elf_sha256 == hashlib.sha256(fake_elf.read_bytes()).hexdigest()
    assert got.elf_name == "fw.elf"


def test_import_decodes_and_lists_by_tag(opener, make_capture, meta):
    store = opener()
    a = store.import_capture("a", make_capture(3), tags={"branch": "main", "commit": "c1"})
    b = store.import_capture("b", make_capture(2), tags={"branch": "wip"})
    assert a.metadata == meta and a.source == "import" and a.kind == "miniprofiler"
    assert a.link_stats is not None and a.link_stats["records"] == 150
    assert [s.id for s in store.list()] == [b.id, a.id]  # newest first
    assert [s.id for s in store.list({"branch": "main"})] == [a.id]
    assert store.list({"branch": "main", "commit": "nope"}) == []
    assert store.tags(a.id) == {"branch": "main", "commit": "c1"}


def test_a_failed_import_stores_nothing(opener):
    store = opener()
    with pytest.raises(UserError, match="nothing was stored"):
        store.import_capture("junk", os.urandom(3000), kind="miniprofiler")
    assert store.list() == []
    assert opener().list() == []


def test_edits_tags_and_missing_sessions(opener, make_capture):
    store = opener()
    sid = store.import_capture("x", make_capture(1)).id
    assert store.rename(sid, "  new   name ").name == "new name"
    assert store.set_notes(sid, "n\x07otes").notes == "notes"
    assert store.set_tags(sid, {"board": "h7"}).tags == {"board": "h7"}
    assert opener().get(sid).tags == {"board": "h7"}
    with pytest.raises(UserError, match="tag key"):
        store.set_tags(sid, {"bad key": "v"})
    calls = (
        store.get,
        store.delete,
        lambda i: store.rename(i, "y"),
        lambda i: store.set_tags(i, {}),
        lambda i: list(store.raw_chunks(i)),
    )
    for call in calls:
        with pytest.raises(SessionNotFound):
            call(sid + 100)


def test_summaries_are_kept_by_version(opener, make_capture):
    store = opener()
    sid = store.import_capture("x", make_capture(1)).id
    assert store.summary(sid, 2) is None
    store.save_summary(sid, 2, {"records": 50, "functions": {"f": {"calls": 3}}})
    assert opener().summary(sid, 2) == {"records": 50, "functions": {"f": {"calls": 3}}}
    assert store.summary(sid, 3) is None
    store.save_summary(sid, 3, {"records": 51})
    assert store.summary(sid, 3) == {"records": 51}
    store.save_summary(sid + 100, 3, {"records": 1})  # no such session: nothing kept
    assert store.summary(sid + 100, 3) is None


def test_raw_streams_round_trip_byte_identical(opener, make_capture):
    """Larger than one PostgreSQL chunk row, read back whole and in pieces."""
    data = make_capture(PG_CHUNK_BYTES * 3 // 2 // 706 + 1)  # 706 bytes a packet
    assert len(data) > PG_CHUNK_BYTES
    store = opener()
    info = store.import_capture("big", data)
    assert info.raw_bytes == len(data)
    again = opener()
    assert again.raw(info.id) == data
    pieces = list(again.raw_chunks(info.id, 333_333))
    assert b"".join(pieces) == data and max(map(len, pieces)) <= 333_333


def test_delete_keeps_a_shared_elf_and_never_reuses_ids(opener, make_capture, fake_elf):
    store = opener()
    a = store.import_capture("a", make_capture(1), fake_elf)
    b = store.import_capture("b", make_capture(2), fake_elf)
    store.delete(a.id)
    with pytest.raises(SessionNotFound):
        store.get(a.id)
    assert store.elf_bytes(b.id) == fake_elf.read_bytes()
    store.delete(b.id)
    assert store.list() == []
    with pytest.raises(SessionNotFound):
        store.delete(b.id)
    assert store.import_capture("c", make_capture(1)).id > b.id


def test_late_appends_are_ignored_and_close_interrupts(opener):
    store = opener()
    done = store.create("w", None, None)
    done.append(b"abc")
    done.finish()
    done.append(b"late chunk from the reader thread")
    assert store.raw(done.id) == b"abc" and done.finish().raw_bytes == 3
    open_one = store.create("open", None, None)
    open_one.append(b"x" * 10)
    store.close()
    info = opener().get(open_one.id)
    assert (info.status, info.raw_bytes) == (INTERRUPTED, 10)


@pytest.mark.parametrize("sizes", [[0], [1, 0, 2], [PG_CHUNK_BYTES - 1, 2, 5], [PG_CHUNK_BYTES]])
def test_any_chunking_stores_the_exact_stream(opener, sizes):
    store = opener()
    writer = store.create("h", None, None)
    parts = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    for part in parts:
        writer.append(part)
    assert writer.finish().raw_bytes == sum(sizes)
    assert opener().raw(writer.id) == b"".join(parts)
