"""An export of a large capture does not hold the live lock: the state endpoint answers
while it renders (issue 14, item 1)."""

from __future__ import annotations

import threading
import time

from tests.profile.test_scale_shapes import chain
from tests.web.conftest import ORIGIN


def test_state_answers_during_an_export(idle_client) -> None:
    live = idle_client.app.state.live
    with live.feed.lock:
        live.feed.profile.add(chain(8_000, leaf_self_only=False))
        live.feed.profile.settle()  # merged now, as the live page's reads between adds do
    result: dict[str, object] = {}

    def download() -> None:
        t = time.perf_counter()
        r = idle_client.get("/api/export/speedscope", headers={"Origin": ORIGIN})
        result["status"], result["took"] = r.status_code, time.perf_counter() - t

    worker = threading.Thread(target=download)
    worker.start()
    answered: list[float] = []
    while worker.is_alive():
        t = time.perf_counter()
        assert idle_client.get("/api/state").status_code == 200
        answered.append(time.perf_counter() - t)
        time.sleep(0.02)
    worker.join()
    assert result["status"] == 200
    assert len(answered) >= 3, result  # the export took a while, and state kept answering
    # Relative, not absolute: on a loaded machine every request is slower, but one that waited
    # for the export's lock would take about as long as the export itself.
    assert max(answered) < float(result["took"]) / 2  # type: ignore[arg-type]


def test_state_never_waits_for_the_profile_lock(idle_client) -> None:
    """Issue 26 F13: during a speedscope export of a 10M-record replay, /api/state waited
    13-24 s: its time range ingested the queue under the live profile lock, which the
    export's snapshot (and the merge of the replay's backlog) held. Here the export is
    made to block while it holds that lock; /api/state must still answer, with the range
    of what the profile holds, and the export then completes."""
    live = idle_client.app.state.live
    with live.feed.lock:
        live.feed.profile.add(chain(2_000, leaf_self_only=False))
    live.on_records(chain(50, leaf_self_only=False))  # queued, not yet ingested
    inside, release = threading.Event(), threading.Event()
    real_snapshot = live.feed.profile.snapshot

    def blocking_snapshot():
        inside.set()
        assert release.wait(60), "the test never released the export"
        return real_snapshot()

    live.feed.profile.snapshot = blocking_snapshot
    result: dict[str, object] = {}

    def download() -> None:
        r = idle_client.get("/api/export/speedscope", headers={"Origin": ORIGIN})
        result["status"] = r.status_code

    def state() -> None:
        r = idle_client.get("/api/state")
        result["state"] = r.status_code, r.json()["range"]

    exporter = threading.Thread(target=download, daemon=True)
    exporter.start()
    try:
        assert inside.wait(30), "the export never reached its snapshot"
        asker = threading.Thread(target=state, daemon=True)
        asker.start()
        asker.join(20)  # a bound for a hung test, not a timing measure
        assert not asker.is_alive(), "/api/state waited for the export's lock"
        status, span = result["state"]
        assert status == 200
        with live.feed.profile.lock:
            assert span == [live.feed.profile.t0_us, live.feed.profile.t1_us]
    finally:
        release.set()
        exporter.join(60)
    assert result["status"] == 200
