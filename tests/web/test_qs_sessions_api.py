"""QS sessions through the page's API: import (auto or kind=qs), diff, open (replay)."""

from __future__ import annotations

from mcuprof.sources import load
from tests.sources.conftest import sim_stream

from .conftest import ORIGIN, wait_for


def test_page_import_open_and_diff(make_client) -> None:
    client = make_client(autoconnect=False)
    data = sim_stream(2.0)
    ids = []
    for kind in ("auto", "qs"):
        r = client.post(
            f"/api/sessions/import?name=dpp&kind={kind}",
            content=data,
            headers={"Origin": ORIGIN, "Content-Type": "application/octet-stream"},
        )
        assert r.status_code == 200, r.text
        assert r.json()["session"]["kind"] == "qs"
        ids.append(r.json()["session"]["id"])
    bad = client.post(
        "/api/sessions/import?name=x&kind=s19", content=data, headers={"Origin": ORIGIN}
    )
    assert bad.status_code == 422
    diff = client.get(f"/api/sessions/diff?base={ids[0]}&new={ids[1]}", headers={"Origin": ORIGIN})
    assert diff.status_code == 200, diff.text
    assert "Philo_inst[" in diff.text
    r = client.post(
        f"/api/sessions/{ids[0]}/replay", json={"speed": "max"}, headers={"Origin": ORIGIN}
    )
    assert r.status_code == 200, r.text
    live = client.app.state.live
    total = load("qs", data).stats["records"]
    wait_for(lambda: live.ingest() or live.profile_records() >= total, "open (replay)", 20)
    assert live.feed.profile.folded() == load("qs", data).profile.folded()


def test_page_connects_qs_targets_and_refuses_remote_listening(make_client) -> None:
    client = make_client(autoconnect=False)
    post = {"Origin": ORIGIN}
    r = client.post("/api/connect", json={"port": "listen://0.0.0.0:0"}, headers=post)
    assert r.status_code == 400 and "--allow-remote" in r.text
    r = client.post(
        "/api/connect", json={"port": "spy://x?file=/tmp/y", "proto": "qs"}, headers=post
    )
    assert r.status_code == 400 and "not allowed" in r.text
    r = client.post("/api/connect", json={"port": "listen://127.0.0.1:0"}, headers=post)
    assert r.status_code == 200, r.text
    device = r.json()["device"]
    assert device["kind"] == "qs" and device["listening_on"].startswith("127.0.0.1:")
    assert client.post("/api/qs/tick", headers=post).status_code == 200  # no target yet: fine
    assert client.post("/api/disconnect", headers=post).status_code == 200
    r = client.post("/api/connect", json={"port": "sim://", "proto": "qs"}, headers=post)
    assert r.status_code == 200, r.text
    assert r.json()["device"]["label"] == "Simulated QS target"
    assert client.post("/api/qs/info", headers=post).status_code == 200
    assert client.post("/api/qs/format", headers=post).status_code == 422
    client.post("/api/disconnect", headers=post)
    client.post("/api/connect", json={"port": "sim://"}, headers=post)
    r = client.post("/api/qs/reset", headers=post)
    assert r.status_code == 400 and "QS target" in r.text


def test_a_qs_replay_from_its_file_is_counted_aside_and_ends_by_itself(make_client) -> None:
    client = make_client(autoconnect=False)
    data = sim_stream(2.0)
    r = client.post(
        "/api/sessions/import?name=dpp&kind=qs",
        content=data,
        headers={"Origin": ORIGIN, "Content-Type": "application/octet-stream"},
    )
    sid = r.json()["session"]["id"]
    r = client.post(
        f"/api/sessions/{sid}/replay", json={"speed": "10x"}, headers={"Origin": ORIGIN}
    )
    assert r.status_code == 200, r.text
    live = client.app.state.live
    total = load("qs", data).stats["records"]
    # It ends when the records counted aside have played: all of them, no more.
    ended = f"replay finished: {total:,} records played"

    def finished() -> bool:
        live.ingest()
        return any(ended in e["message"] for e in client.get("/api/log").json()["entries"])

    wait_for(finished, "the replay to end by itself", 30)
    assert live.conn.port_label is None
