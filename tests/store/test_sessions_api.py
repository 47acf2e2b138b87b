"""/api/sessions through the real dashboard app (TestClient, real store on disk)."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from mcuprof.paths import default_elf
from mcuprof.store import SessionStore
from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings

BASE_URL = "http://127.0.0.1:8000"


@pytest.fixture
def store(tmp_path):
    s = SessionStore(tmp_path / "data", autoflush=False)
    yield s
    s.close()


@pytest.fixture
def client(store, tmp_path):
    settings = Settings(autoconnect=False, data_dir=tmp_path / "data")
    app = create_app(settings, store=store)
    with TestClient(app, base_url=BASE_URL) as c:
        yield c


def test_list_get_edit_download_delete(client, store, make_capture, fake_elf):
    data = make_capture(3, per_packet=10)
    info = store.import_capture("first", data, fake_elf)
    r = client.get("/api/sessions")
    assert r.status_code == 200
    [row] = r.json()["sessions"]
    assert (row["id"], row["name"], row["status"], row["records"]) == (
        info.id,
        "first",
        "complete",
        30,
    )

    r = client.get(f"/api/sessions/{info.id}")
    assert r.status_code == 200
    s = r.json()["session"]
    assert s["capture"]["records"] == 30 and s["metadata"]["fw_version"] == "store-test"

    r = client.patch(f"/api/sessions/{info.id}", json={"name": "renamed", "notes": "n1"})
    assert r.status_code == 200 and r.json()["session"]["name"] == "renamed"
    assert store.get(info.id).notes == "n1"

    r = client.get(f"/api/sessions/{info.id}/raw")
    assert r.status_code == 200 and r.content == data
    assert "attachment" in r.headers["content-disposition"]

    r = client.delete(f"/api/sessions/{info.id}")
    assert r.status_code == 200 and r.json() == {"deleted": info.id}
    assert not store.raw_path(info.id).exists()
    assert client.get(f"/api/sessions/{info.id}").status_code == 404


def test_errors_are_json_one_liners(client, store):
    writer = store.create("live", None, None)
    cases = [
        (client.get("/api/sessions/999"), 404, "no session 999"),
        (client.patch("/api/sessions/999", json={"name": "x"}), 404, "no session"),
        (client.patch(f"/api/sessions/{writer.id}", json={}), 400, "nothing to change"),
        (client.patch(f"/api/sessions/{writer.id}", json={"name": "  "}), 400, "empty"),
        (client.delete(f"/api/sessions/{writer.id}"), 409, "still recording"),
        (client.get("/api/sessions/abc"), 422, ""),
        (client.get("/api/sessions/0"), 422, ""),
    ]
    for response, status, text in cases:
        assert response.status_code == status, response.text
        message = response.json()["error"]
        assert "\n" not in message and text in message
    writer.finish()


def test_import_by_upload(client, store, make_capture):
    data = make_capture(2, per_packet=7)
    r = client.post(
        "/api/sessions/import",
        params={"name": "from the browser", "elf": f"sample:{default_elf().name}"},
        content=data,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200, r.text
    s = r.json()["session"]
    assert s["name"] == "from the browser" and s["source"] == "import" and s["records"] == 14
    assert s["elf_name"] == default_elf().name
    assert store.raw(s["id"]) == data
    assert store.elf_bytes(s["id"]) == default_elf().read_bytes()
    # The temporary upload file is gone; only the session's own files remain.
    uploads = client.app.state.settings.upload_dir
    assert not uploads.exists() or list(uploads.iterdir()) == []


def test_import_is_capped_and_validated(client, store, monkeypatch):
    import mcuprof.web.uploads as uploads

    monkeypatch.setattr(uploads, "MAX_CAPTURE_BYTES", 1000)

    def chunks():  # no Content-Length: the cap is enforced on the bytes actually read
        for _ in range(5):
            yield b"\x00" * 400

    r = client.post("/api/sessions/import", content=chunks())
    assert r.status_code == 413 and "too large" in r.json()["error"]
    r = client.post("/api/sessions/import", content=b"")
    assert r.status_code == 400
    r = client.post("/api/sessions/import", params={"elf": "nope"}, content=b"x")
    assert r.status_code == 400 and "unknown ELF" in r.json()["error"]
    assert store.list() == []


def test_browsing_while_a_capture_is_written(client, store, make_capture):
    old = store.import_capture("old", make_capture(2))
    writer = store.create("recording now", None, None)
    data = make_capture(30, per_packet=5)
    done = threading.Event()

    def reader_thread() -> None:
        for i in range(0, len(data), 64):
            writer.append(data[i : i + 64])
        done.set()

    t = threading.Thread(target=reader_thread)
    t.start()
    while not done.is_set():
        rows = client.get("/api/sessions").json()["sessions"]
        assert [r["status"] for r in rows] == ["recording", "complete"]
        assert client.get(f"/api/sessions/{old.id}").json()["session"]["capture"]["records"] == 100
        partial = client.get(f"/api/sessions/{writer.id}/raw").content
        assert data.startswith(partial)
    t.join()
    writer.finish()
    assert client.get(f"/api/sessions/{writer.id}/raw").content == data


def wait_for(predicate, timeout_s: float = 60.0) -> bool:
    """Wait for a background thread's effect (not for time): re-check on a short tick."""
    tick = threading.Event()
    for _ in range(int(timeout_s / 0.01)):
        if predicate():
            return True
        tick.wait(0.01)
    return predicate()


def test_replay_feeds_the_live_views(client, store, make_capture, monkeypatch):
    from mcuprof.profile import load_capture

    data = make_capture(40, per_packet=25)
    info = store.import_capture("to replay", data)
    live = client.app.state.live
    # A finished replay ends by itself at the next tick (tested elsewhere); hold it open so
    # this test can look at a running one without racing a max-speed replay.
    live._replay_done = lambda: False
    r = client.post(f"/api/sessions/{info.id}/replay", json={"speed": "max"})
    assert r.status_code == 200, r.text
    assert r.json()["replay"]["session"] == info.id

    def all_in() -> bool:
        live.ingest()
        return live.profile_records() == 1000

    assert wait_for(all_in)
    listed = client.get("/api/sessions").json()
    assert listed["replay"]["session"] == info.id
    # A replay is shown, never recorded as a new session.
    assert [s["id"] for s in listed["sessions"]] == [info.id]
    state = client.get("/api/state").json()
    assert state["connected"] is True
    assert state["device"]["fw_version"] == "store-test"
    # The live profile equals the one decoded straight from the file.
    expected = load_capture(data, live.symbols).profile.function_stats()
    with live.feed.lock:
        got = live.feed.profile.function_stats()
    assert [(f.label, f.calls, f.self_us) for f in got] == [
        (f.label, f.calls, f.self_us) for f in expected
    ]

    r = client.post("/api/sessions/replay/stop")
    assert r.status_code == 200 and r.json() == {"replay": None}
    assert client.get("/api/state").json()["connected"] is False
    assert client.get("/api/sessions").json()["replay"] is None


def test_replay_rejects_bad_requests(client, store):
    empty = store.create("empty", None, None).finish()  # a recording that got no bytes
    assert client.post(f"/api/sessions/{empty.id}/replay", json={"speed": "1x"}).status_code == 400
    r = client.post(f"/api/sessions/{empty.id}/replay", json={"speed": "warp"})
    assert r.status_code == 400 and "bad replay speed" in r.json()["error"]
    assert client.post("/api/sessions/77/replay", json={"speed": "1x"}).status_code == 404
