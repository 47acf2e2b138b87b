"""/api/budgets: serve --budgets checked on the live profile, with mcuprof check's
verdicts; a budget whose function has no calls yet is not an error live."""

from __future__ import annotations

from mcuprof.profile.budget import parse

from .conftest import ORIGIN, capture

BUDGETS = b"""
[[budget]]
function = "fir_filter"
max_us = 1

[[budget]]
function = "fir_filter"
p50_us = 1000000

[[budget]]
function = "not_called_yet"
p99_us = 5
"""


def test_live_budgets_break_hold_and_wait(make_client) -> None:
    client = make_client(budgets=tuple(parse(BUDGETS)), budgets_file="b.toml")
    empty = client.get("/api/budgets").json()
    assert empty["file"] == "b.toml" and empty["broken"] == 0
    capture(client, 300)
    client.post("/api/stop", headers={"Origin": ORIGIN})
    got = client.get("/api/budgets").json()
    by = {(v["budget"], v["limit"]): v for v in got["verdicts"]}
    assert by[(1, "max_us")]["state"] == "broken" and by[(1, "max_us")]["function"] == "fir_filter"
    assert by[(1, "max_us")]["first_over_us"] >= 0
    assert by[(2, "p50_us")]["state"] == "holds"
    assert by[(3, "p99_us")]["state"] == "no calls yet"
    assert got["broken"] == 1


def test_without_a_file_there_is_nothing_to_check(client) -> None:
    assert client.get("/api/budgets").json() == {"file": None, "verdicts": [], "broken": 0}
