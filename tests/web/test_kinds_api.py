"""/api/kinds: what the page asks of each kind of capture (frontend/js/kinds.js), the
kind objects' own answers."""

from __future__ import annotations

from fastapi.testclient import TestClient

from mcuprof import kinds


def test_the_kinds_list_says_what_each_kind_offers(client: TestClient) -> None:
    body = client.get("/api/kinds").json()
    assert [k["name"] for k in body["kinds"]] == list(kinds.NAMES)
    by = {k["name"]: k for k in body["kinds"]}
    assert by["qs"]["controls"] == ["qs-rx"] and by["qs"]["ticks_assumed"]
    assert (
        by["miniprofiler"]["controls"] == ["device-control"]
        and by["miniprofiler"]["names_from_elf"]
    )
    assert by["s12z"]["views"] == ["s12z-report"]
    assert by["qs"]["simulator_label"] == "Simulated QS target"
    assert by["qs"]["frames_are"] == "RTC steps"
