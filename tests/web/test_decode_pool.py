"""Stored-session decodes: concurrent first requests for one session wait for one decode,
on a pool of their own, while /api/state (the default executor, as the live ticker and
Stop) keeps answering. Six cold requests once silenced the server for as long as six
decodes took (issue 35, finding 4). Over real HTTP to a started server, capturing."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mcuprof import kinds
from mcuprof.web.live.decode_pool import DECODE_THREADS, SingleFlight
from mcuprof.web.routes import qs as qs_api
from tests.sources.conftest import sim_stream

from .conftest import wait_for

# About 1 MB of the simulated DPP target: a cold decode of a second or two.
SIM_SECONDS = 200.0
STATE_WITHIN_S = 1.0


def counted(monkeypatch: Any, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def get(port: int, path: str, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_six_cold_requests_decode_once_and_state_keeps_answering(
    live_server, monkeypatch, tmp_path: Path
) -> None:
    monitors = counted(monkeypatch, qs_api, "decode_session")
    profiles = counted(monkeypatch, kinds.get("qs"), "load_stored")
    port, app = live_server()
    capture = tmp_path / "dpp.qs"
    capture.write_bytes(sim_stream(SIM_SECONDS))
    sid = app.state.store.import_capture("dpp", capture, None, kind="qs").id
    wait_for(lambda: app.state.live.state_dict()["connected"], "auto-connect to sim://")
    post = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/start",
        method="POST",
        headers={"Origin": f"http://127.0.0.1:{port}"},
    )
    urllib.request.urlopen(post, timeout=30).read()

    views = [f"/api/qs/flow?session={sid}", f"/api/qs/summary?session={sid}"] * 3
    views += [f"/api/sessions/{sid}/flame"] * 3
    # Another site's <img> tags: refused before any decode.
    for path in views:
        assert get(port, path, {"Sec-Fetch-Site": "cross-site"}) == 403
    assert monitors == [] and profiles == []

    codes: list[int] = []
    threads = [threading.Thread(target=lambda p=p: codes.append(get(port, p))) for p in views]
    for t in threads:
        t.start()
    waits = []
    while any(t.is_alive() for t in threads):
        began = time.monotonic()
        assert get(port, "/api/state") == 200
        waits.append(time.monotonic() - began)
    for t in threads:
        t.join()
    assert codes == [200] * len(views)
    assert monitors == [1] and profiles == [1]  # one decode each, however many asked
    assert len(waits) >= 3 and max(waits) < STATE_WITHIN_S, waits


def test_single_flight_runs_once_and_hands_errors_to_every_waiter() -> None:
    flights = SingleFlight()
    started, release = threading.Event(), threading.Event()
    runs: list[int] = []

    def slow() -> int:
        runs.append(1)
        started.set()
        release.wait(10)
        if len(runs) == 1:
            raise ValueError("bad session")
        return 7

    results: list[object] = []

    def call() -> None:
        try:
            results.append(flights.run("k", slow))
        except ValueError as exc:
            results.append(str(exc))

    first = threading.Thread(target=call)
    first.start()
    started.wait(10)
    waiters = [threading.Thread(target=call) for _ in range(DECODE_THREADS + 3)]
    for t in waiters:
        t.start()
    release.set()
    for t in [first, *waiters]:
        t.join(10)
    assert runs == [1] and results == ["bad session"] * (DECODE_THREADS + 4)
    assert flights.run("k", slow) == 7  # a flight that ended is not kept
