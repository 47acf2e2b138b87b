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
    assert live.profile.folded() == load("qs", data).profile.folded()
