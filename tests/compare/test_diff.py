"""Diff arithmetic against hand-computed cases."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.diff import build_tree, colour, diff_profiles, flame_data, pct_change
from mcuprof.diff.export import render_folded2, render_svg
from mcuprof.diff.flame import walk
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable

FUNCS = {"loop": 0x1000, "filter": 0x1100, "pid": 0x1200, "log": 0x1300}
SYMS = SymbolTable.from_functions(
    [Function(n, n, a, a + 0x100, "app.c", None, False) for n, a in FUNCS.items()]
)


def profile(tree, iterations: int) -> Profile:
    p = Profile(SYMS)
    p.add(_records(tree, iterations))
    return p


def _records(tree, iterations):
    rows = []

    def emit(node, depth, start):
        name, self_t, kids = node
        t = start + self_t
        for k in kids:
            t = emit(k, depth + 1, t)
        rows.append((FUNCS[name], start, t - start, depth))
        return t

    t = 0
    for _ in range(iterations):
        t = emit(tree, 0, t)
    rec = np.zeros(len(rows), RECORD_DTYPE)
    arr = np.array(rows)
    rec["func_addr"], rec["entry_time"], rec["duration"], rec["depth"] = arr.T
    return rec


# Base: 10 iterations of loop(self 10) -> filter(self 50), pid(self 20): 80 µs each.
BASE = ("loop", 10, [("filter", 50, []), ("pid", 20, [])])
# New: 20 iterations, filter 60 µs, and a new log() call of 10 µs: 100 µs each.
NEW = ("loop", 10, [("filter", 60, []), ("pid", 20, []), ("log", 10, [])])


@pytest.fixture(scope="module")
def diff():
    return diff_profiles(profile(BASE, 10), profile(NEW, 20))


def by_key(diff):
    return {f.key: f.as_dict() for f in diff.functions}


def test_summaries(diff):
    assert diff.base_summary == {"records": 30, "duration_us": 800.0, "profiled_us": 800.0}
    assert diff.new_summary == {"records": 80, "duration_us": 2000.0, "profiled_us": 2000.0}


def test_raw_deltas(diff):
    f = by_key(diff)["filter"]
    assert f["status"] == "both"
    assert f["calls"] == {"base": 10, "new": 20, "delta": 10, "pct": 100.0}
    assert f["self"] == {"base": 500.0, "new": 1200.0, "delta": 700.0, "pct": 140.0}
    assert f["total"] == {"base": 500.0, "new": 1200.0, "delta": 700.0, "pct": 140.0}
    loop = by_key(diff)["loop"]
    assert loop["self"] == {"base": 100.0, "new": 200.0, "delta": 100.0, "pct": 100.0}
    assert loop["total"] == {"base": 800.0, "new": 2000.0, "delta": 1200.0, "pct": 150.0}


def test_normalised_deltas(diff):
    f = by_key(diff)["filter"]
    assert f["self_mean"] == {"base": 50.0, "new": 60.0, "delta": 10.0, "pct": pytest.approx(20.0)}
    # 500/800 = 62.5 % of the base capture, 1200/2000 = 60 % of the new one.
    assert f["self_share"]["base"] == pytest.approx(62.5)
    assert f["self_share"]["new"] == pytest.approx(60.0)
    assert f["self_share"]["delta"] == pytest.approx(-2.5)
    assert f["self_share"]["pct"] == pytest.approx(-4.0)
    # 10 calls in 800 µs = 12 500/s; 20 in 2000 µs = 10 000/s.
    assert f["calls_per_s"]["base"] == pytest.approx(12_500.0)
    assert f["calls_per_s"]["new"] == pytest.approx(10_000.0)
    assert f["calls_per_s"]["pct"] == pytest.approx(-20.0)
    pid = by_key(diff)["pid"]
    assert pid["self_mean"]["pct"] == 0.0
    assert pid["self_share"]["delta"] == pytest.approx(-5.0)  # 25 % -> 20 %
    loop = by_key(diff)["loop"]
    assert loop["total_mean"] == {"base": 80.0, "new": 100.0, "delta": 20.0, "pct": 25.0}
    assert loop["total_share"]["pct"] == pytest.approx(0.0)  # the root: always 100 %


def test_added_function(diff):
    log = by_key(diff)["log"]
    assert log["status"] == "added"
    assert log["calls"] == {"base": 0, "new": 20, "delta": 20, "pct": None}
    assert log["self_mean"] == {"base": None, "new": 10.0, "delta": None, "pct": None}
    d = next(f for f in diff.functions if f.key == "log")
    assert d.change("self", "mean") is None  # never a % against nothing


def test_gate_values(diff):
    f = next(x for x in diff.functions if x.key == "filter")
    assert f.change("self", "mean") == pytest.approx(20.0)
    assert f.change("self", "share") == pytest.approx(-4.0)
    assert f.growth_us("self", "mean") == pytest.approx(10.0)
    # share growth in µs of the new capture: -2.5 % of 2000 µs
    assert f.growth_us("self", "share") == pytest.approx(-50.0)


def test_flame_deltas(diff):
    root = build_tree(diff.base_folded, diff.new_folded)
    assert (root.base, root.new) == (800, 2000)
    loop = root.children["loop"]
    assert (loop.base, loop.new, loop.base_self, loop.new_self) == (800, 2000, 100, 200)
    assert loop.delta == pytest.approx(0.1 - 0.125)
    assert loop.children["filter"].delta == pytest.approx(0.6 - 0.625)
    assert loop.children["pid"].delta == pytest.approx(0.2 - 0.25)
    assert loop.children["log"].delta == pytest.approx(0.1)
    data = flame_data(diff.base_folded, diff.new_folded)
    assert data["max_abs_delta"] == pytest.approx(0.1)
    assert data["tree"]["value"] == 2000
    names = [c["name"] for c in data["tree"]["children"][0]["children"]]
    assert names == ["filter", "log", "pid"]


def test_flame_widths_come_from_the_new_capture():
    data = flame_data({"a;gone": 50, "a": 50}, {"a": 10, "a;b": 30})
    a = data["tree"]["children"][0]
    assert a["value"] == 40 and a["base"] == 100
    # "gone" exists only in the base: it has no width, so it is not drawn.
    assert [c["name"] for c in a["children"]] == ["b"]


def test_flame_pruning_keeps_ancestors():
    new = {f"r;c{i}": i + 1 for i in range(50)}
    data = flame_data({}, new, max_nodes=10)
    assert data["truncated"] and data["nodes"] == 10
    kids = data["tree"]["children"][0]["children"]
    assert len(kids) == 8  # root + r + the 8 widest children
    assert sorted(k["value"] for k in kids) == list(range(43, 51))


def test_colour_scale():
    assert colour(0.1, 0.1) == "rgb(255,0,0)"
    assert colour(-0.1, 0.1) == "rgb(0,0,255)"
    assert colour(0.05, 0.1) == "rgb(255,112,112)"  # 225 * 0.5 rounds to 112 (banker's)
    assert colour(0.0, 0.1) == colour(0.3, 0.0) == "rgb(235,235,235)"


def test_folded2(diff):
    assert render_folded2(diff.base_folded, diff.new_folded, normalize=False) == (
        "loop 100 200\nloop;filter 500 1200\nloop;log 0 200\nloop;pid 200 400\n"
    )
    # Normalised: the base column scaled by 2000/800 = 2.5.
    assert render_folded2(diff.base_folded, diff.new_folded) == (
        "loop 250 200\nloop;filter 1250 1200\nloop;log 0 200\nloop;pid 500 400\n"
    )


def test_svg_is_standalone_and_has_tooltips(diff):
    svg = render_svg(diff.base_folded, diff.new_folded, title="t")
    root = ET.fromstring(svg.encode())
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text or "" for t in root.iter(f"{ns}title")]
    log = next(t for t in titles if t.startswith("log\n"))
    assert "new:  total 200 µs (10.00%)" in log
    assert "base: total 0 µs (0.00%)" in log
    assert "+10.00 points" in log
    filt = next(t for t in titles if t.startswith("filter\n"))
    assert "self 1,200 µs (60.00%)" in filt and "self 500 µs (62.50%)" in filt
    assert "-2.50 points" in filt
    fills = {
        (g.find(f"{ns}title").text or "").split("\n")[0]: g.find(f"{ns}rect").get("fill")
        for g in root.iter(f"{ns}g")
    }
    assert fills["log"] == "rgb(255,0,0)"
    # pid shrank by half the largest change: blue at half strength (225 * 0.5 faded).
    r, g, b = map(int, fills["pid"][4:-1].split(","))
    assert (r == g, 112 <= r <= 113, b) == (True, True, 255)
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script" not in svg


def test_svg_coloured_by_the_gates_verdicts(diff):
    """With the gate's report, the Compare tab's colours (diff.js verdictColour): red by
    the change of a regression (full at twice the threshold or the largest regression),
    blue for a shrink past the threshold, amber inconclusive, pale otherwise."""

    def v(name, verdict, reason, change):
        return {"key": name, "name": name, "verdict": verdict, "reason": reason,
                "change_pct": change}  # fmt: skip

    report = {
        "metric": "self",
        "basis": "p99",
        "threshold_pct": 10.0,
        "verdicts": [
            v("filter", "regressed", "grew past the threshold", 10.0),
            v("pid", "unchanged", "shrank past the threshold", -20.0),
            v("log", "inconclusive", "coverage 43% in NEW", None),
            v("loop", "unchanged", "within the threshold", 3.0),
        ],
    }
    svg = render_svg(diff.base_folded, diff.new_folded, title="t", report=report)
    root = ET.fromstring(svg.encode())
    ns = "{http://www.w3.org/2000/svg}"
    groups = {(g.find(f"{ns}title").text or "").split("\n")[0]: g for g in root.iter(f"{ns}g")}
    fills = {name: g.find(f"{ns}rect").get("fill") for name, g in groups.items()}
    # scale = max(2 x 10%, 10%) = 20%: +10% is half strength, -20% full blue
    assert fills == {
        "all": "rgb(220,220,220)",
        "loop": "rgb(235,235,235)",
        "filter": "rgb(255,112,112)",
        "pid": "rgb(0,0,255)",
        "log": "rgb(240,200,90)",
    }
    tip = groups["pid"].find(f"{ns}title").text
    assert tip.endswith(
        "unchanged: -20.0% (p99 of the self time per call); shrank past the threshold"
    )
    assert "verdict on the p99 of the self time per call" in svg


def test_svg_of_empty_new_capture():
    svg = render_svg({"a": 1}, {})
    ET.fromstring(svg.encode())
    assert "no samples" in svg


def test_pct_change_edges():
    assert pct_change(0, 0) == 0.0
    assert pct_change(0, 5) is None
    assert pct_change(None, 5) is None
    assert pct_change(4, 5) == 25.0


stacks = st.dictionaries(
    st.lists(st.sampled_from("abcd"), min_size=1, max_size=4).map(";".join),
    st.integers(0, 10_000),
    max_size=12,
)


@settings(max_examples=60)
@given(base=stacks, new=stacks)
def test_tree_totals_and_folded2_roundtrip(base, new):
    root = build_tree(base, new)
    assert root.new == sum(new.values())
    assert root.base == sum(base.values())
    lines = render_folded2(base, new, normalize=False).splitlines()
    parsed = {ln.rsplit(" ", 2)[0]: tuple(map(int, ln.rsplit(" ", 2)[1:])) for ln in lines}
    for stack in base.keys() | new.keys():
        b, n = base.get(stack, 0), new.get(stack, 0)
        assert parsed.get(stack, (0, 0)) == (b, n)
    # Self-share deltas sum to zero over the tree when both captures have time.
    if root.new and root.base:
        assert sum(n.delta for n in walk(root)) == pytest.approx(0.0, abs=1e-9)


def test_deep_recursion_is_cut_not_crashed():
    import json

    from mcuprof.diff.flame import MAX_DEPTH

    deep = {";".join(["rec"] * 1500): 10}
    data = flame_data({}, deep)
    assert data["truncated"]
    depth, node = 0, data["tree"]
    while node["children"]:
        [node] = node["children"]
        depth += 1
    assert depth == MAX_DEPTH
    json.dumps(data)  # no recursion error on the way out either
    svg = render_svg(deep, deep)  # the SVG export draws iteratively
    ET.fromstring(svg.encode())
