"""QS times you can trust (issue 34, point 4) against the real QP/C 7.4 DPP target
(dpp-posix64) on the dashboard's listen:// port: the tick rate estimated from when its
frames arrive is within 5% of what its clock really runs at (measured here from its
own timestamps against the host clock, over the run; the POSIX port's QS_onGetTime
counts CLOCK_MONOTONIC in 0.1 µs), applying it re-reads the capture and is stored with
the session, a target restart is a segment boundary without a gap, and an assertion is
reported with its module and location while the capture is kept. About 15 s."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings
from tests.qs.qsfe import REAL, start_target

from .conftest import BASE, ORIGIN, wait_for

POST = {"Origin": ORIGIN}
TARGET = "dpp-posix64"
POSIX_TICK_HZ = 10_000_000  # the port's QS_onGetTime: CLOCK_MONOTONIC in 0.1 µs units


class Arrivals:
    """A QS listener beside the dashboard's: (host time, newest timestamp) per batch."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, int]] = []

    def qs_reset(self) -> None:
        pass

    def qs_events(self, events: list[Any]) -> None:
        stamps = [e.timestamp for e in events if getattr(e, "timestamp", None) is not None]
        if stamps:
            self.samples.append((time.monotonic(), max(stamps)))

    def true_rate(self) -> float:
        """Ticks over host seconds between the first and the last arrival: their delays
        (milliseconds) are a small part of the run (seconds)."""
        (h0, s0), (h1, s1) = self.samples[0], self.samples[-1]
        return ((s1 - s0) % (1 << 32)) / (h1 - h0)


def qs_health(c: TestClient) -> dict[str, Any]:
    return c.get("/api/state").json()["health"]["qs"]


def test_tick_rate_restart_and_assertion(tmp_path: Path) -> None:
    if not (REAL / TARGET).exists():
        pytest.skip(f"the real target {REAL / TARGET} is missing")
    app = create_app(Settings(data_dir=tmp_path / "data", http_port=8000, autoconnect=False))
    arrivals = Arrivals()
    with TestClient(app, base_url=BASE) as c:
        app.state.live.links.qs.listeners.append(arrivals)
        r = c.post("/api/connect", json={"port": "listen://127.0.0.1:0"}, headers=POST)
        port = int(r.json()["device"]["listening_on"].rsplit(":", 1)[1])
        assert c.post("/api/start", headers=POST).status_code == 200
        started = time.monotonic()
        target = start_target(TARGET, port)
        try:
            h = wait_for(lambda: (q := qs_health(c))["tick_estimate_hz"] and q, "an estimate", 30)
            truth = arrivals.true_rate()
            assert abs(truth / POSIX_TICK_HZ - 1) < 0.05, truth
            assert abs(h["tick_estimate_hz"] / truth - 1) < 0.05, (h, truth)
            assert h["tick_span_s"] >= 10 and h["tick_source"] == "assumed" and h["tick_differs"]

            r = c.post("/api/qs/time/tick-hz", json={"estimate": True}, headers=POST)
            assert r.status_code == 200, r.text
            hz = r.json()["tick_hz"]
            h = qs_health(c)
            assert (h["tick_hz"], h["tick_source"], h["tick_differs"]) == (hz, "estimate", False)
            assert c.get("/api/state").json()["device"]["timer_freq"] == hz

            # A restart: QS-RX RESET ends the program, as a board reboots; it comes back.
            assert c.post("/api/qs/reset", headers=POST).status_code == 200
            assert target.proc.wait(timeout=10) == 0
            target = start_target(TARGET, port)
            timeline = wait_for(
                lambda: (t := c.get("/api/timeline").json()).get("segments") and t,
                "a segment boundary on the timeline",
                30,
            )
            lo, hi = timeline["range"]
            assert lo < timeline["segments"][-1] < hi
            # No gap: the capture spans no more than the time since Start.
            assert hi - lo <= (time.monotonic() - started) * 1e6
            flame = c.get("/api/flame").json()
            assert flame["wall_us"] <= (time.monotonic() - started) * 1e6

            # An assertion (Table gets a HUNGRY event from philosopher 9 of 5).
            event = {"action": "post", "ao": "Table_inst", "signal": "HUNGRY_SIG", "params": "09"}
            wait_for(lambda: qs_health(c)["frames"] > 0, "the restarted target's frames")
            wait_for(
                lambda: (
                    c.post("/api/qs/control/event", json=event, headers=POST).status_code == 200
                ),
                "the event sent",
            )
            asserted = wait_for(lambda: qs_health(c)["asserted"], "the assertion", 30)
            assert (asserted["module"], asserted["location"]) == ("table.c", 192)
            log = [e["message"] for e in c.get("/api/log").json()["entries"]]
            assert "target asserted: module table.c, location 192; the capture so far is kept" in (
                log
            )
            state = c.get("/api/state").json()
            assert state["health"]["state"] == "profiling"  # the capture goes on, kept
        finally:
            target.stop(signal.SIGKILL)
        assert c.post("/api/stop", headers=POST).status_code == 200
        sid = state["health"]["capture_id"]
        info = c.get(f"/api/sessions/{sid}").json()["session"]
        assert info["metadata"]["timer_freq"] == hz and info["records"] > 0
        # Re-read with another rate: the same ticks, ten times longer.
        r = c.post(f"/api/qs/time/sessions/{sid}/tick-hz", json={"hz": hz / 10}, headers=POST)
        assert r.status_code == 200, r.text
        again = c.get(f"/api/sessions/{sid}").json()["session"]
        assert again["metadata"]["timer_freq"] == round(hz / 10)
        assert again["length_s"] == pytest.approx(10 * info["length_s"], rel=1e-3)
