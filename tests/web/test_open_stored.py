"""The Sessions tab's Open: the stored session loaded by the CLI's loader (the kind's
load_stored, as `mcuprof info` and `compare` read it) straight into the live views, not
replayed through the live path (issue 35, finding 6; issue 33, item 2). The tables are
the CLI's, the progress shows where a replay's did, /api/state answers meanwhile, and
Stop replay ends it."""

from __future__ import annotations

import random
import threading

import numpy as np

from mcuprof import kinds
from mcuprof.kinds.miniprofiler import MiniProfiler
from mcuprof.profile import load_capture
from mcuprof.profile.synth import restarting_records
from mcuprof.protocol import Metadata, encode_metadata, encode_profile_data
from mcuprof.sources import load
from tests.sources.conftest import sim_stream

from .conftest import ORIGIN, wait_for

META = Metadata(
    mcu_clock_hz=168_000_000, timer_freq=1_000_000, elf_build_id=0x1234ABCD, fw_version="loop"
)
HEADERS = {"Origin": ORIGIN}
UPLOAD = {**HEADERS, "Content-Type": "application/octet-stream"}


def restarting_capture(restarts: int = 12, calls: int = 800) -> bytes:
    """A board in a reset loop: METADATA then its packets, ``restarts + 1`` times."""
    out = []
    for run in restarting_records(random.Random(35), restarts, calls):
        out.append(encode_metadata(META))
        out += [encode_profile_data(run[i : i + 100]) for i in range(0, len(run), 100)]
    return b"".join(out)


def imported(client, data: bytes, kind: str) -> int:
    r = client.post(f"/api/sessions/import?name=cap&kind={kind}", content=data, headers=UPLOAD)
    assert r.status_code == 200, r.text
    return int(r.json()["session"]["id"])


def opened(client, sid: int) -> dict:
    r = client.post(
        f"/api/sessions/{sid}/replay", json={"speed": "max", "open": True}, headers=HEADERS
    )
    assert r.status_code == 200, r.text
    return r.json()["replay"]


def shown(client) -> dict:
    """/api/state once the open has ended."""
    return wait_for(
        lambda: (s := client.get("/api/state").json())["health"]["replay"] is None and s,
        "the open's end",
    )


def functions(profile) -> list[str]:
    return sorted(repr(f) for f in profile.function_stats())


def test_open_loads_a_restarting_capture_with_the_cli_loader(make_client, monkeypatch) -> None:
    loads = []
    real = MiniProfiler.load_stored

    def counted(self, *args, **kw):  # type: ignore[no-untyped-def]
        loads.append(kw.get("progress") is not None)
        return real(self, *args, **kw)

    monkeypatch.setattr(MiniProfiler, "load_stored", counted)
    client = make_client(autoconnect=False)
    data = restarting_capture()
    sid = imported(client, data, "miniprofiler")
    state = opened(client, sid)
    assert state["label"].startswith(f"Opening session {sid} ")
    health = shown(client)["health"]
    # The import's summary (history/summary.py), then the open's loader with progress;
    # no replay link.
    assert loads == [False, True]
    live = client.app.state.live
    cli = load_capture(data).profile
    assert live.feed.profile.n_records == cli.n_records == health["profile_records"]
    assert live.feed.profile.folded() == cli.folded()
    assert functions(live.feed.profile) == functions(cli)
    assert health["opened"]["id"] == sid and health["opened"]["kind"] == "miniprofiler"
    assert health["opened"]["records"] == cli.n_records and health["received"] == cli.n_records
    assert client.get("/api/state").json()["device"]["replay"] is False
    folded = client.get("/api/export/folded").text
    assert folded.count("\n") == len(cli.folded())


def test_open_of_a_qs_session_feeds_the_qs_tab_and_health(make_client) -> None:
    client = make_client(autoconnect=False)
    data = sim_stream(2.0)
    sid = imported(client, data, "qs")
    opened(client, sid)
    health = shown(client)["health"]
    cli = kinds.get("qs")
    live = client.app.state.live
    store = client.app.state.store
    assert live.feed.profile.folded() == cli.load_stored(store, sid, None).folded()
    assert live.feed.profile.folded() == load("qs", data).profile.folded()
    # The QS tab's live monitor holds what the stored-session view decodes.
    # (The live monitor keeps fewer lines, and counts its resets as versions.)
    own = ("bounds", "version")
    mine = {k: v for k, v in client.get("/api/qs/summary").json().items() if k not in own}
    stored = client.get(f"/api/qs/summary?session={sid}").json()
    assert mine == {k: v for k, v in stored.items() if k not in own} and mine
    assert health["qs"]["rtc_steps"] == load("qs", data).stats["rtc_steps"] > 0
    assert health["opened"]["kind"] == "qs"


def test_open_shows_progress_answers_state_and_stops(make_client, monkeypatch) -> None:
    """A loader held mid-way: /api/state answers with its progress; Stop replay ends it
    and the views are left empty, nothing opened."""
    reached, release = threading.Event(), threading.Event()
    real = MiniProfiler.load_stored

    def held(self, store, sid, symbols, tick_hz=None, progress=None):  # type: ignore[no-untyped-def]
        if progress is None:  # the import's summary: not held
            return real(self, store, sid, symbols, tick_hz)

        def step(done: int, total: int, records: int) -> None:
            progress(done, total, records)
            reached.set()
            release.wait(10)

        return real(self, store, sid, symbols, tick_hz, progress=step)

    monkeypatch.setattr(MiniProfiler, "load_stored", held)
    client = make_client(autoconnect=False)
    sid = imported(client, restarting_capture(4), "miniprofiler")
    opened(client, sid)
    assert reached.wait(10)
    state = client.get("/api/state").json()
    progress = state["health"]["replay"]
    assert progress["label"].startswith(f"Opening session {sid} ")
    assert progress["received"] > 0 and progress["pct"] > 0 and state["device"]["replay"]
    assert client.get("/api/sessions").json()["replay"]["session"] == sid
    r = client.post("/api/sessions/replay/stop", headers=HEADERS)
    assert r.status_code == 200 and r.json() == {"replay": None}
    release.set()
    health = shown(client)["health"]
    assert health["opened"] is None and health["profile_records"] == 0
    assert np.all(client.app.state.live.feed.profile.n_records == 0)


def device_back(client) -> dict:
    """/api/state once the open has ended and the device connected before is back."""
    return wait_for(
        lambda: (
            (s := client.get("/api/state").json())["connected"]
            and s["health"]["replay"] is None
            and s
        ),
        "the device back after the open",
    )


def test_open_reconnects_the_device_connected_before(make_client) -> None:
    """The device connected before the open is connected again after it, as after a
    replay, and the views keep the opened session."""
    client = make_client()  # connected to the simulated device
    live = client.app.state.live
    wait_for(lambda: live.conn.connected, "the simulated device")
    data = restarting_capture(3, 400)
    sid = imported(client, data, "miniprofiler")
    opened(client, sid)
    state = device_back(client)
    assert state["health"]["opened"]["id"] == sid
    assert live.feed.profile.folded() == load_capture(data).profile.folded()
    assert live.conn.restore is None and not state["device"]["replay"]


def test_an_opened_qs_session_keeps_its_health_once_the_device_is_back(make_client) -> None:
    """A QS session opened while the simulated MiniProfiler device is connected: once the
    open has ended and the device is connected again, Health still gives the opened
    session's own QS counts (a CI run's page lost its "dictionary overflow" notice so:
    the health followed the reconnected device's kind)."""
    client = make_client()  # connected to the simulated device
    live = client.app.state.live
    wait_for(lambda: live.conn.connected, "the simulated device")
    sid = imported(client, sim_stream(1.0), "qs")
    opened(client, sid)
    state = device_back(client)
    assert state["device"]["kind"] == "miniprofiler"
    assert state["health"]["opened"]["id"] == sid
    qs = state["health"]["qs"]
    assert qs is not None and qs["frames"] > 0, state["health"]


def test_state_read_while_an_open_ends_is_never_torn(make_client, monkeypatch) -> None:
    """The open ends between two of /api/state's reads (the loader's last step lands
    while health reads its counts): the reply shows either the open still going or its
    counts, never the open ended with no records (a CI run saw received 0 so)."""
    client = make_client(autoconnect=False)
    live = client.app.state.live
    data = restarting_capture(2)
    sid = imported(client, data, "miniprofiler")
    opened(client, sid)
    shown(client)  # the first open has ended; open again with the loader held
    reached, release = threading.Event(), threading.Event()
    real = MiniProfiler.load_stored

    def held(self, *args, **kw):  # type: ignore[no-untyped-def]
        reached.set()
        release.wait(10)
        return real(self, *args, **kw)

    monkeypatch.setattr(MiniProfiler, "load_stored", held)
    opened(client, sid)
    assert reached.wait(10)
    figures = live.link_health.figures

    def slow_figures(*args, **kw):  # type: ignore[no-untyped-def]
        out = figures(*args, **kw)
        release.set()  # the loader finishes between this read and the next
        wait_for(lambda: live.conn.loading is None, "the open's end")
        return out

    monkeypatch.setattr(live.link_health, "figures", slow_figures)
    health = live.health()
    monkeypatch.setattr(live.link_health, "figures", figures)
    n = load_capture(data).profile.n_records
    assert health["replay"] is not None or health["received"] == n
    assert shown(client)["health"]["received"] == n
