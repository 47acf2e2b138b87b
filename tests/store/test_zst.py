"""Raw captures stored zstd-compressed (store/zst.py): read back as a stream, byte for
byte; a crash keeps every appended byte; sessions stored uncompressed by an older mcuprof
still open."""

from __future__ import annotations

import itertools
import os
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.store import INTERRUPTED, RECORDING, SessionStore
from mcuprof.store.zst import MAGIC, BlockCompressor, inflate

from .conftest import capture, simulated_capture

# At most this many stored bytes a record on a realistic capture (issue 33, item 6).
MAX_BYTES_PER_RECORD = 5


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with SessionStore(tmp_path_factory.mktemp("zst"), autoflush=False) as s:
        yield s


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


appends = st.tuples(
    st.binary(max_size=3000) | st.builds(lambda n: capture(n), st.integers(0, 4)),
    st.lists(st.integers(0, 3000), max_size=8),  # where the appends are cut
    st.lists(st.booleans(), max_size=8),  # a flush after append i?
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(appends, st.booleans(), st.integers(1, 5000))
def test_any_bytes_in_any_appends_read_back_as_a_stream(store, case, crash, chunk) -> None:
    data, cuts, flushes = case
    writer = store.create("round trip")
    for i, piece in enumerate(_cut(data, cuts)):
        writer.append(piece)
        if i < len(flushes) and flushes[i]:
            writer.flush()
    if not crash:  # else read as a kill leaves it: no frame end, no Stop
        writer.finish()
    pieces = list(store.raw_chunks(writer.id, chunk))
    assert b"".join(pieces) == data == store.raw(writer.id)
    assert all(0 < len(p) <= chunk for p in pieces)
    assert store.raw_size(writer.id) == len(data)
    if crash:
        writer.abort()
    assert store.raw_path(writer.id).suffix == ".zst"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=500), max_size=6), st.data())
def test_a_stream_cut_anywhere_yields_every_whole_block_before_the_cut(blocks, draw) -> None:
    """A file cut short (a crash inside a write, a full disk) gives a prefix of what was
    appended, at least every block that was whole, without an error."""
    zst = BlockCompressor()
    written = [zst.block(b) for b in blocks]
    stream = b"".join(written)
    cut = draw.draw(st.integers(0, len(stream)))
    reads = draw.draw(st.integers(1, 64))
    pieces = [stream[:cut][i : i + reads] for i in range(0, cut, reads)]
    got = b"".join(inflate(pieces, 1000, "cut"))
    whole = 0
    ends = 0
    for raw, packed in zip(blocks, written, strict=True):
        ends += len(packed)
        if ends > cut:
            break
        whole += len(raw)
    everything = b"".join(blocks)
    assert everything.startswith(got) and len(got) >= whole


def test_a_crashed_recording_opens_with_every_flushed_byte(tmp_path) -> None:
    """Killed mid-append: the file ends inside its last block. The next open marks the
    session interrupted with every byte of the whole blocks, and reads them back."""
    data = capture(40)
    store = SessionStore(tmp_path, autoflush=False)
    writer = store.create("crashed")
    for i in range(0, len(data), 1000):
        writer.append(data[i : i + 1000])
        writer.flush()
    path = store.raw_path(writer.id)
    before_last = path.stat().st_size
    writer.append(bytes(range(256)) * 8)  # the append the crash cut
    store._active.clear()  # as if the process died: no frame end, no Stop, no lock
    os.close(writer._fd)
    store._db.close()
    os.truncate(path, before_last + 100)
    with sqlite3.connect(tmp_path / "sessions.db") as db:
        (status,) = db.execute("SELECT status FROM sessions").fetchone()
    assert status == RECORDING

    again = SessionStore(tmp_path, autoflush=False)
    info = again.get(writer.id)
    got = again.raw(writer.id)
    assert info.status == INTERRUPTED
    assert got[: len(data)] == data and len(got) == info.raw_bytes
    assert b"".join(again.raw_chunks(writer.id, 777)) == got
    again.close()


def test_a_session_stored_uncompressed_by_an_older_version_still_opens(tmp_path) -> None:
    """An older mcuprof wrote raw/<id>.raw as received: every reader takes it as it is."""
    data = capture(20)
    with SessionStore(tmp_path, autoflush=False) as store:
        info = store.import_capture("old", data)
        zst = store.raw_path(info.id)
    zst.unlink()
    (tmp_path / "raw" / f"{info.id}.raw").write_bytes(data)
    with SessionStore(tmp_path, autoflush=False) as store:
        assert store.raw_path(info.id).suffix == ".raw"
        assert store.raw(info.id) == data == b"".join(store.raw_chunks(info.id, 100))
        assert store.raw_size(info.id) == len(data)
        profile = store.get(info.id)
        assert profile.raw_bytes == len(data)
        store.delete(info.id)
        assert list((tmp_path / "raw").iterdir()) == []


def test_an_older_versions_crashed_recording_is_recovered_with_its_length(tmp_path) -> None:
    with SessionStore(tmp_path, autoflush=False) as store:
        writer = store.create("old, crashed")
        sid = writer.id
        store._active.clear()
        os.close(writer._fd)
    store.raw_path(sid).unlink()
    (tmp_path / "raw" / f"{sid}.raw").write_bytes(capture(3))
    with SessionStore(tmp_path, autoflush=False) as store:
        info = store.get(sid)
        assert info.status == INTERRUPTED and info.raw_bytes == len(capture(3))
        assert store.raw(sid) == capture(3)


def test_bytes_that_are_not_zstd_are_one_line(tmp_path) -> None:
    with SessionStore(tmp_path, autoflush=False) as store:
        info = store.import_capture("damaged", capture(2))
        store.raw_path(info.id).write_bytes(b"not zstd at all")
        with pytest.raises(Exception, match=f"session {info.id} stream is damaged") as err:
            store.raw(info.id)
        assert "\n" not in str(err.value)


def test_a_realistic_capture_takes_at_most_5_bytes_a_record(tmp_path) -> None:
    """The simulated board's stream, appended as the link's reader delivers it (a piece
    per poll), stored, and read back identical."""
    data, records = simulated_capture(1.0)
    assert records > 5000
    with SessionStore(tmp_path, autoflush=False) as store:
        writer = store.create("realistic")
        for i in range(0, len(data), 2000):
            writer.append(data[i : i + 2000])
        writer.finish()
        stored = store.raw_path(writer.id).read_bytes()
        assert stored.startswith(MAGIC)
        assert len(stored) / records <= MAX_BYTES_PER_RECORD
        assert store.raw(writer.id) == data


def test_a_reader_that_stops_early_lets_go_of_the_file(tmp_path) -> None:
    """raw_chunks reads one piece ahead on a thread: a reader that stops (a download the
    client dropped) ends that thread and closes the file."""
    import threading

    with SessionStore(tmp_path, autoflush=False) as store:
        sid = store.import_capture("early", capture(50)).id
        fds = len(os.listdir("/proc/self/fd"))
        chunks = store.raw_chunks(sid, 100)
        assert len(next(chunks)) == 100
        chunks.close()
        for t in threading.enumerate():
            if t.name == "mcuprof-raw-read-ahead":
                t.join(10)
                assert not t.is_alive()
        assert len(os.listdir("/proc/self/fd")) == fds
