"""The live session: ingestion never waits for the profile, unplugs keep the data."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from fastapi.testclient import TestClient

from mcuprof.protocol import RECORD_DTYPE, Metadata
from mcuprof.summary import summarize
from mcuprof.web.elfs import ElfCatalog
from mcuprof.web.live.session import LiveSession
from mcuprof.web.settings import Settings

from .conftest import ORIGIN, capture, wait_for

POST = {"Origin": ORIGIN}


@pytest.fixture
def live(tmp_path) -> LiveSession:
    """A live session on its own: no server, no ticker, no store."""
    settings = Settings(data_dir=tmp_path, autoconnect=False)
    return LiveSession(settings, ElfCatalog(settings), None)


def test_records_are_queued_without_waiting_for_the_profile(live: LiveSession) -> None:
    recs = np.zeros(100, dtype=RECORD_DTYPE)
    recs["func_addr"] = 0x0800_0101
    recs["entry_time"] = np.arange(100) * 10
    recs["duration"] = 5
    done = threading.Event()
    with live.feed.lock:  # a long query or icicle build holds the profile
        worker = threading.Thread(target=lambda: (live.on_records(recs), done.set()))
        worker.start()
        worker.join(timeout=10)
        assert done.is_set()  # the reader thread got through while the lock was held
        assert live.profile_records() == 0
    assert live.ingest() == 100
    assert live.profile_records() == 100


def test_metadata_sets_the_timer_frequency_in_stream_order(live: LiveSession) -> None:
    recs = np.zeros(1, dtype=RECORD_DTYPE)
    recs["duration"] = 1000
    live.on_metadata(Metadata(168_000_000, 2_000_000, 1, "v9"))
    live.on_records(recs)
    live.ingest()
    assert live.feed.profile.timer_freq == 2_000_000
    assert live.feed.profile.duration_us == 500.0


def test_file_stem_is_safe_and_dated(live: LiveSession) -> None:
    live.conn.metadata = Metadata(1, 1, 1, "v1.2/../x y")
    stem = live.file_stem()
    assert stem.startswith("mcuprof-v1.2_.._x_y-")
    assert "/" not in stem and " " not in stem


def test_tick_builds_one_json_update_and_skips_when_idle(live: LiveSession) -> None:
    first = live.tick(True)
    assert first is not None
    msg = json.loads(first)
    assert msg["type"] == "update" and "health" in msg and msg["connected"] is False
    assert live.tick(True) is None  # nothing new: nothing sent
    recs = np.zeros(10, dtype=RECORD_DTYPE)
    recs["entry_time"] = np.arange(10) * 100
    recs["duration"] = 50
    live.on_records(recs)
    live.publisher.next_icicle_at = 0.0  # the icicle's CPU budget is timed; here it is due now
    msg = json.loads(live.tick(True))
    assert msg["icicle"]["nodes"] >= 2 and msg["recv_ts"] > 0
    live.on_client_message(json.dumps({"type": "drawn", "recv_ts": msg["recv_ts"], "frame_ms": 7}))
    live.on_client_message('{"type": "drawn", "recv_ts": "soon"}')  # ignored
    live.on_client_message("[]")  # ignored
    metrics = live.metrics()
    assert metrics["latency_samples"] == 1 and metrics["frame_p50_ms"] == 7


def test_unplugged_device_keeps_the_data_and_marks_the_session(idle_client: TestClient) -> None:
    r = idle_client.post("/api/connect", json={"port": "sim://?unplug=1.5&rate=2000"}, headers=POST)
    assert r.status_code == 200, r.text
    capture(idle_client, 50)
    state = wait_for(
        lambda: (
            (s := idle_client.get("/api/state").json())["health"]["state"] == "disconnected" and s
        ),
        "the simulated unplug",
    )
    assert state["connected"] is False
    assert state["health"]["profile_records"] >= 50  # what arrived is kept
    # The link announces the state before it logs the reason and the store marks the
    # session, so a reader can see "disconnected" a moment before either: wait for them.
    wait_for(
        lambda: any(
            e["level"] == "error" and "disconnected" in e["message"]
            for e in idle_client.get("/api/log").json()["entries"]
        ),
        "the disconnect in the log",
    )
    sessions = wait_for(
        lambda: (
            (got := idle_client.get("/api/sessions").json()["sessions"])[0]["status"]
            == "interrupted"
            and got
        ),
        "the session marked interrupted",
    )
    # Its length is the capture's own time span, as the stored bytes give it.
    raw = idle_client.get(f"/api/sessions/{sessions[0]['id']}/raw").content
    assert sessions[0]["duration_us"] == pytest.approx(summarize(raw)["duration_us"], abs=1)
    r = idle_client.get("/api/export/folded")
    assert r.status_code == 200 and r.text
    # Reconnecting after an unplug works without a manual Disconnect.
    r = idle_client.post("/api/connect", json={"port": "sim://"}, headers=POST)
    assert r.status_code == 200 and r.json()["connected"] is True


class FakeSession:
    """Only what the health figures read; the clock is the test's."""

    def __init__(self) -> None:
        from mcuprof.protocol import LinkStats

        self.stats = LinkStats()
        self.records_received_since_start = 0
        self.estimated_loss = 0
        self.state = "profiling"


def _profiling(tmp_path, now: list[float]) -> tuple[LiveSession, FakeSession]:
    """A live session profiling on a FakeSession, its clock reading ``now[0]``."""
    settings = Settings(data_dir=tmp_path, autoconnect=False)
    live = LiveSession(settings, ElfCatalog(settings), None, clock=lambda: now[0])
    fake = FakeSession()
    live.conn.link = fake  # type: ignore[assignment]
    live.conn.state = "profiling"
    return live, fake


def test_rates_and_overflow_warning_follow_the_injected_clock(tmp_path) -> None:
    from mcuprof.protocol import Status

    now = [100.0]
    live, fake = _profiling(tmp_path, now)
    live.on_status(Status(True, 0, 1000, 10))
    live.tick(False)
    now[0] += 1.0
    fake.stats.bytes, fake.stats.records = 14_000, 1000
    live.on_status(Status(True, 3, 2000, 95))
    live.tick(False)
    h = live.health()
    assert h["bytes_per_s"] == 14_000 and h["records_per_s"] == 1000
    assert h["overflow_warning"] is True and h["overflows"] == 3 and h["buffer_usage"] == 95
    now[0] += 5.0
    live.tick(False)
    assert live.health()["overflow_warning"] is True  # still recent
    now[0] += 6.0
    live.tick(False)
    h = live.health()
    assert h["overflow_warning"] is False  # no growth for over 10 s
    assert h["bytes_per_s"] == 0  # the 2 s window has only the flat tail


def test_stop_counts_the_stored_capture_a_few_mb_at_a_time(
    idle_client: TestClient, monkeypatch
) -> None:
    """An hour at 50,000 records/s stores 2.4 GiB: Stop decodes it in chunks to count
    its records (reading it whole took 3.7 GB of RSS at Stop in bench/soak.py)."""
    from mcuprof.store.sessions import SessionStore
    from mcuprof.web.live import session as live_mod

    def whole(*_args: object) -> bytes:
        raise AssertionError("Stop read the stored capture whole")

    r = idle_client.post("/api/connect", json={"port": "sim://?rate=5000"}, headers=POST)
    assert r.status_code == 200, r.text
    with monkeypatch.context() as m:
        m.setattr(live_mod, "STORED_CHUNK", 1000)  # packets split across chunks
        m.setattr(SessionStore, "raw", whole)
        capture(idle_client, 2000)
        r = idle_client.post("/api/stop", headers=POST)
        assert r.status_code == 200, r.text
    session = idle_client.get("/api/sessions").json()["sessions"][0]
    raw = idle_client.get(f"/api/sessions/{session['id']}/raw").content
    assert session["records"] == summarize(raw)["records"] >= 2000


def test_running_device_count_is_never_below_received(tmp_path) -> None:
    """Issue 24 item 12: the device's count is as of its last status; what arrived since
    was captured too, so Captured (device) never reads below Received while running."""
    from mcuprof.protocol import Status

    now = [100.0]
    live, fake = _profiling(tmp_path, now)
    fake.records_received_since_start = 2001
    live.on_status(Status(True, 0, 2001, 10))
    fake.records_received_since_start = 2343  # 0.5 s later, no newer status yet
    now[0] += 0.5
    h = live.health()
    assert h["captured"] == 2343 and h["received"] == 2343 and h["in_flight"] == 0
    assert h["status_age_s"] == 0.5 and h["loss"] == 0


def test_normal_actions_log_at_info(idle_client: TestClient) -> None:
    """Issue 24 item 13: connecting a QS target and our own Disconnect are no warnings."""
    r = idle_client.post("/api/connect", json={"port": "sim://?proto=qs"}, headers=POST)
    assert r.status_code == 200, r.text
    r = idle_client.post("/api/disconnect", headers=POST)
    assert r.status_code == 200, r.text
    entries = idle_client.get("/api/log").json()["entries"]
    connected = [e for e in entries if e["message"].startswith(("connected", "disconnected"))]
    assert len(connected) >= 2, entries
    assert all(e["level"] == "info" for e in connected), connected
