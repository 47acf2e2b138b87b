"""Stored QS sessions with hostile names (issue 26, F5): a line's text, a name on its
tags and a text download are capped in bytes, cut with a marker, and the cuts counted.
The capture is F5's at a smaller scale: dictionary names of 500 control characters
(each escaped to 4), named by every dispatch record."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mcuprof.protocol.qs import encode_frame
from mcuprof.qs import monitor as qs_monitor
from mcuprof.qs.monitor import MAX_LINE_BYTES, MAX_TAG_CHARS
from mcuprof.store import SessionStore
from mcuprof.web.app import create_app
from mcuprof.web.routes.qs import decode_session
from mcuprof.web.settings import Settings as AppSettings

NAME = (bytes(range(1, 32)) * 17)[:500]  # control characters: each prints as \xNN


def hostile_capture(dispatches: int, name: bytes = NAME) -> bytes:
    """Target info (QP 7.4.0, 4-byte pointers and times, 2-byte signals), object,
    function and signal dictionaries naming one object, state and signal ``name``, then
    dispatches of that signal to that object in that state."""
    sizes = bytes([0x22, 0x41, 0x22, 0x44, 4, 8, 0x13])
    frames = [
        (64, bytes([0xFF]) + struct.pack("<H", 740) + sizes + bytes(6)),
        (61, struct.pack("<I", 0x100) + name + b"\0"),
        (62, struct.pack("<I", 0x1000) + name + b"\0"),
        (60, struct.pack("<HI", 5, 0) + name + b"\0"),
    ]
    frames += [(8, struct.pack("<IHII", 10 * t, 5, 0x100, 0x1000)) for t in range(dispatches)]
    return b"".join(encode_frame(seq, rec, p) for seq, (rec, p) in enumerate(frames))


def chunks(data: bytes, size: int = 4096) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(AppSettings(data_dir=tmp_path / "data", http_port=8000, autoconnect=False))
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        yield c


def store_session(client: TestClient, data: bytes) -> int:
    store: SessionStore = client.app.state.store
    writer = store.create("hostile names", source="import", kind="qs")
    writer.append(data)
    return writer.finish().id


def test_lines_and_tags_of_a_stored_session_are_capped(client) -> None:
    sid = store_session(client, hostile_capture(300))
    log = client.get("/api/qs/log", params={"session": sid, "limit": 2000}).json()
    lines = log["lines"]
    assert log["matched"] == len(lines) == 304  # nothing dropped: lines are cut, not lost
    dispatches = [line for line in lines if line["rec"] == "QS_QEP_DISPATCH"]
    assert len(dispatches) == 300
    for line in lines:
        assert len(line["text"].encode()) <= MAX_LINE_BYTES
        assert all(len(name) <= MAX_TAG_CHARS for name in line["objs"])
        assert line["sig"] is None or len(line["sig"]) <= MAX_TAG_CHARS
    # The whole line would name the object, its signal and state: 3 x 2,000 characters.
    text = dispatches[0]["text"]
    assert "\\x01\\x02" in text
    assert text.endswith(" bytes]") and "...[cut: " in text
    # A cut name is still a name to filter by (it fits a filter value) and finds them all.
    (obj,) = dispatches[0]["objs"]
    assert obj.endswith("...[2000 chars]")
    by_obj = client.get("/api/qs/log", params={"session": sid, "obj": obj, "limit": 2000}).json()
    assert by_obj["matched"] == 300
    summary = client.get("/api/qs/summary", params={"session": sid}).json()
    assert summary["lines_cut"] >= 300 and summary["names_cut"] == 1
    assert summary["bounds"]["line_bytes"] == MAX_LINE_BYTES


def test_a_text_download_is_capped_in_bytes_and_says_so(client, monkeypatch) -> None:
    monkeypatch.setattr(qs_monitor, "MAX_TEXT_BYTES", 100_000)
    sid = store_session(client, hostile_capture(300))
    r = client.get("/api/qs/log.txt", params={"session": sid})
    assert r.status_code == 200
    assert len(r.content) <= 100_000
    lines = r.content.decode().splitlines()
    assert all(len(line.encode()) <= MAX_LINE_BYTES for line in lines)
    kept = len(lines) - 1
    assert lines[-1] == f"mcuprof: cut at 100,000 bytes: {304 - kept:,} more lines left out"
    summary = client.get("/api/qs/summary", params={"session": sid}).json()
    assert summary["text_cut"] == 1
    # Under the cap, the whole log comes, with no note.
    small = store_session(client, hostile_capture(20, b"Philo"))
    text = client.get("/api/qs/log.txt", params={"session": small}).text
    assert len(text.splitlines()) == 24 and "mcuprof: cut" not in text


def test_a_text_download_is_made_a_piece_at_a_time() -> None:
    monitor = decode_session(chunks(hostile_capture(600)))
    pieces = list(monitor.text_body())
    assert len(pieces) > 1
    assert all(len(p) <= qs_monitor._PIECE + MAX_LINE_BYTES for p in pieces)
    assert b"".join(pieces).count(b"\n") == 604


def test_short_lines_are_left_whole() -> None:
    data = hostile_capture(5, b"A" * (MAX_TAG_CHARS))
    monitor = decode_session(chunks(data))
    s = monitor.summary()
    assert s["names_cut"] == 0
    texts = b"".join(monitor.text_body()).decode().splitlines()
    assert any("A" * MAX_TAG_CHARS in t for t in texts)


def test_cut_lines_keep_their_records_not_their_texts() -> None:
    monitor = decode_session(chunks(hostile_capture(600)))
    first = b"".join(monitor.text_body())  # every line rendered
    cut = monitor.summary()["lines_cut"]
    assert cut >= 600
    # A cut text (1 KiB) is not kept: the line renders its record again when asked.
    kept = sum(len(line._text or "") for line in monitor.lines)
    assert kept < 100 * len(monitor.lines)
    assert b"".join(monitor.text_body()) == first
    assert monitor.summary()["lines_cut"] == cut  # lines counted once, not renders
