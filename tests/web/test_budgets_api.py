"""/api/budgets: serve --budgets checked on the live profile, with mcuprof check's
verdicts; a budget whose function has no calls yet is not an error live."""

from __future__ import annotations

from mcuprof.profile.budget import MAX_BUDGET_BYTES, parse

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


LOADED = b"""
[[budget]]
function = "fir_filter"
max_us = 1
"""


def test_a_budgets_file_loaded_in_the_page_replaces_the_servers(make_client) -> None:
    client = make_client(budgets=tuple(parse(BUDGETS)), budgets_file="b.toml")
    capture(client, 300)
    client.post("/api/stop", headers={"Origin": ORIGIN})
    own = {"Origin": ORIGIN, "Content-Type": "application/toml"}
    r = client.post("/api/budgets?name=page.toml", content=LOADED, headers=own)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["file"] == "page.toml" and len(got["verdicts"]) == 1
    [v] = got["verdicts"]
    assert v["state"] == "broken" and v["first_over_took_us"] > 1
    t0 = client.get("/api/state").json()["range"][0]
    start, end = v["first_over_span_us"]
    assert start == v["first_over_us"] + t0 and end == start + v["first_over_took_us"]
    assert client.get("/api/budgets").json()["file"] == "page.toml"


def test_a_bad_or_foreign_budgets_file_replaces_nothing(make_client) -> None:
    client = make_client(budgets=tuple(parse(BUDGETS)), budgets_file="b.toml")
    own = {"Origin": ORIGIN}
    bad = client.post("/api/budgets?name=x.toml", content=b"[[budget]]\np98_us = 1\n", headers=own)
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert error.startswith("x.toml: budget 1: unknown key 'p98_us'") and "\n" not in error
    huge = b"#" * (MAX_BUDGET_BYTES + 1)
    big = client.post("/api/budgets?name=x.toml", content=huge, headers=own)
    assert big.status_code == 413 and "at most 1,048,576" in big.json()["error"]
    foreign = {"Origin": "http://evil.example"}
    assert client.post("/api/budgets", content=LOADED, headers=foreign).status_code == 403
    named = client.post("/api/budgets?name=a%0Ab", content=LOADED, headers=own)
    assert named.status_code == 422  # a control character in the name: not one line
    assert client.get("/api/budgets").json()["file"] == "b.toml"
