"""QS sessions: Stop stores the raw QS bytes (kind 'qs'); opening, replay, exports,
import (CLI and page, auto-detected or --kind qs) and compare go through the seam."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.qs.cli import mcuprof
from tests.sources.conftest import sim_stream
from tests.web.conftest import wait_for

from mcuprof.link.qs_replay import qs_replay_factory
from mcuprof.sources import load
from mcuprof.store import SessionStore
from mcuprof.web.elfs import ElfCatalog
from mcuprof.web.live.session import LiveSession
from mcuprof.web.settings import Settings


class Monitor:
    def __init__(self) -> None:
        self.events = 0
        self.resets = 0

    def qs_events(self, events) -> None:
        self.events += len(events)

    def qs_reset(self) -> None:
        self.resets += 1


@pytest.fixture
def live(tmp_path: Path):
    settings = Settings(data_dir=tmp_path / "data")
    store = SessionStore(settings.data_dir)
    session = LiveSession(settings, ElfCatalog(settings), store)
    yield session
    session.close()
    store.close()


def test_stop_stores_a_qs_session_that_reopens_the_same(live) -> None:
    monitor = Monitor()
    live.links.qs.listeners.append(monitor)
    live.connect("sim://", None, "qs")
    assert live.conn.kind == "qs" and monitor.resets == 1
    live.start()
    assert monitor.resets == 2  # the profile starts again: so do the monitors
    wait_for(lambda: live.ingest() or live.profile_records() >= 60, "RTC steps", 20)
    live.stop()
    time.sleep(0.3)
    live.ingest()
    info = live.store.get(live.recorder.capture_id)
    assert info.kind == "qs" and info.elf_sha256 is None
    assert info.metadata is not None and info.metadata.fw_version == "QP 7.4.0"
    reopened = load("qs", live.store.raw(info.id))
    # Every good frame kept: the stored bytes give the live profile's numbers.
    assert reopened.profile.folded() == live.feed.profile.folded()
    assert info.link_stats["records"] == live.profile_records()
    assert info.link_stats["discontinuities"] == 0 and info.link_stats["bad_frames"] == 0
    assert monitor.events > 0


def test_replay_plays_a_qs_session_into_the_live_views(live) -> None:
    data = sim_stream(3.0)
    expected = load("qs", data)
    total = int(expected.stats["records"])
    live.replay(qs_replay_factory(data, None), "Replay of a QS capture", total)
    assert live.conn.kind == "qs"
    wait_for(lambda: live.ingest() or live.profile_records() >= total, "the replay", 20)
    assert live.feed.profile.folded() == expected.profile.folded()
    assert live.recorder.writer is None  # a replay is not recorded again


def test_replay_at_1x_is_paced_by_the_timestamps(live) -> None:
    data = sim_stream(1.0)
    live.replay(qs_replay_factory(data, 1.0), "Replay at 1x", None)
    time.sleep(0.3)
    live.ingest()
    part = live.profile_records()
    total = load("qs", data).stats["records"]
    assert part < total  # a 1 s capture is not over after 0.3 s
    wait_for(lambda: live.ingest() or live.profile_records() >= total, "the rest", 10)


def test_cli_import_detects_qs_and_export_renders_rtc_steps(tmp_path: Path) -> None:
    cap = tmp_path / "dpp.qs"
    cap.write_bytes(sim_stream(3.0))
    data = tmp_path / "data"
    out = mcuprof("sessions", "import", str(cap), "--data-dir", str(data), "--json")
    info = json.loads(out.stdout)
    assert info["kind"] == "qs"
    shown = json.loads(
        mcuprof("sessions", "show", str(info["id"]), "--json", "--data-dir", str(data)).stdout
    )
    loaded = load("qs", cap.read_bytes())
    assert shown["capture"]["records"] == loaded.profile.n_records
    assert shown["capture"]["duration_us"] == pytest.approx(loaded.profile.duration_us)
    forced = json.loads(
        mcuprof(
            "sessions", "import", str(cap), "--kind", "qs", "--data-dir", str(data), "--json"
        ).stdout
    )
    assert forced["kind"] == "qs"
    wrong = mcuprof(
        "sessions", "import", str(cap), "--kind", "miniprofiler", "--data-dir", str(data),
        check=False,
    )  # fmt: skip
    assert wrong.returncode != 0 and "not a MiniProfiler capture" in wrong.stderr
    folded = mcuprof("export", str(cap), "--format", "folded").stdout
    expected = load("qs", cap.read_bytes()).profile.folded()
    got = {}
    for line in folded.splitlines():
        stack, value = line.rsplit(" ", 1)
        got[stack] = int(value)
    assert got == expected
    assert all(len(k.split(";")) == 3 for k in got)
    for fmt in ("speedscope", "chrome", "csv", "callgrind"):
        text = mcuprof("export", str(cap), "--format", fmt).stdout
        assert "Philo_inst[" in text and "TIMEOUT_SIG" in text, fmt


def test_cli_compare_two_qs_captures(tmp_path: Path) -> None:
    a, b = tmp_path / "a.qs", tmp_path / "b.qs"
    a.write_bytes(sim_stream(3.0, seed=1))
    b.write_bytes(sim_stream(3.0, seed=2))
    out = mcuprof("compare", str(a), str(b), "--json", "--threshold", "0%")
    report = json.loads(out.stdout)
    assert report["base"]["records"] == load("qs", a.read_bytes()).profile.n_records
    assert report["new"]["metadata"]["fw_version"] == "QP 7.4.0"
    text = mcuprof("compare", str(a), str(b), "--threshold", "0%").stdout
    assert "TIMEOUT_SIG" in text and "EAT_SIG" in text
