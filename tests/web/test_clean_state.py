"""No state left behind: a Start the device refuses leaves no session, and a Stop the
device ACKs succeeds whatever its status poll says."""

from __future__ import annotations

import pytest

from .conftest import ORIGIN, wait_for

pytestmark = pytest.mark.timeout(120)


def _sessions(client) -> list[dict]:
    r = client.get("/api/sessions")
    assert r.status_code == 200, r.text
    return r.json()["sessions"]


@pytest.mark.parametrize(
    "port", ["sim://?nack=START_PROFILING", "sim://?mute=RESET_BUFFERS"], ids=["nack", "mute"]
)
def test_a_refused_start_leaves_no_session(make_client, port) -> None:
    client = make_client(port=port)
    wait_for(lambda: client.get("/api/state").json()["connected"], "connect")
    for _ in range(2):
        r = client.post("/api/start", headers={"Origin": ORIGIN})
        assert r.status_code == 400
        assert r.json()["error"].count("\n") == 0 and "failed" in r.json()["error"]
    assert _sessions(client) == []
    state = client.get("/api/state").json()
    assert state["connected"] and state["health"]["state"] != "profiling"


def test_stop_succeeds_when_the_status_poll_is_nacked(make_client) -> None:
    client = make_client(port="sim://?nack=GET_STATUS&rate=2000")
    wait_for(lambda: client.get("/api/state").json()["connected"], "connect")
    assert client.post("/api/start", headers={"Origin": ORIGIN}).status_code == 200
    wait_for(lambda: client.get("/api/state").json()["health"]["profile_records"] > 200, "records")
    r = client.post("/api/stop", headers={"Origin": ORIGIN})
    assert r.status_code == 200, r.text
    assert r.json()["health"]["state"] == "ready"
    (session,) = _sessions(client)
    assert session["status"] == "complete"
    assert client.get("/api/sessions").json()["recording"] is None
