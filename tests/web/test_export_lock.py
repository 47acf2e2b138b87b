"""An export of a large capture does not hold the live lock: the state endpoint answers
while it renders (issue 14, item 1)."""

from __future__ import annotations

import threading
import time

from tests.profile.test_scale_shapes import chain
from tests.web.conftest import ORIGIN


def test_state_answers_during_an_export(idle_client) -> None:
    live = idle_client.app.state.live
    with live._profile_lock:
        live.profile.add(chain(30_000, leaf_self_only=False))
        live.profile.settle()  # merged now, as the live page's reads between adds do
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
