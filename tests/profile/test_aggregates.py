"""Statistics, trees, time windows, timeline level of detail and pruning."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile import Profile, prune
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable
from tests.profile.helpers import scenario


def _recs(rows):
    return np.array(rows, RECORD_DTYPE)


def _stats(p: Profile, window=None):
    return {s.label: s for s in p.function_stats(window)}


def test_recursion_total_counted_once() -> None:
    # f [0,100] -> f [10,60] -> f [20,30]; g [70,80] under the outer f.
    p = Profile()
    p.add(_recs([(0xF, 20, 10, 2), (0xF, 10, 50, 1), (0x6, 70, 10, 1), (0xF, 0, 100, 0)]))
    s = _stats(p)
    f = s["0x0000000f"]
    assert f.calls == 3
    assert f.total_us == 100  # not 100 + 50 + 10
    assert f.self_us == (100 - 50 - 10) + (50 - 10) + 10
    assert f.min_us == 10 and f.max_us == 100
    assert f.mean_us == pytest.approx(160 / 3)
    assert f.pct == 100.0
    assert s["0x00000006"].pct == 10.0


def test_static_functions_with_one_name_stay_apart() -> None:
    funcs = [
        Function("helper", "helper", 0x100, 0x140, "a.c", 3, True),
        Function("helper", "helper", 0x200, 0x240, "b.c", 7, True),
        Function("main", "main", 0x300, 0x340, "main.c", 1, False),
    ]
    p = Profile(SymbolTable.from_functions(funcs))
    p.add(_recs([(0x101, 1, 2, 1), (0x211, 5, 4, 1), (0x301, 0, 20, 0)]))
    s = _stats(p)
    assert s["helper [a.c]"].self_us == 2 and s["helper [a.c]"].line == 3
    assert s["helper [b.c]"].self_us == 4 and s["helper [b.c]"].file == "b.c"
    # The folded format names frames only, so the two merge there.
    assert p.folded() == {"main": 14, "main;helper": 6}
    labels = {c.label for c in p.top_down().children[0].children}
    assert labels == {"helper [a.c]", "helper [b.c]"}


def test_window_clips_times() -> None:
    p = Profile()
    # main [0,100], a [10,40], b [60,90]
    p.add(_recs([(0xA, 10, 30, 1), (0xB, 60, 30, 1), (0x1, 0, 100, 0)]))
    w = (30.0, 70.0)
    assert p.folded(w) == {
        "0x00000001": 20,
        "0x00000001;0x0000000a": 10,
        "0x00000001;0x0000000b": 10,
    }
    s = _stats(p, w)
    assert s["0x00000001"].total_us == 40 and s["0x00000001"].pct == 100
    assert s["0x0000000a"].calls == 1 and s["0x0000000a"].total_us == 10
    assert p.folded((41.0, 59.0)) == {"0x00000001": 18}
    assert "0x0000000a" not in _stats(p, (41.0, 59.0))


def _brute_window_folded(trace, names, freq, a, b):
    n = len(trace)
    e = trace.entry.astype(float)
    x = e + trace.duration
    eff = np.clip(np.minimum(x, b) - np.maximum(e, a), 0, None)
    child = [0.0] * n
    for i, par in enumerate(trace.parent.tolist()):
        if par >= 0 and e[i] <= b and x[i] >= a:
            child[par] += eff[i]
    out: dict[str, float] = {}
    for i in range(n):
        if e[i] > b or x[i] < a:
            continue
        path = [names[i]]
        par = trace.parent[i]
        while par >= 0:
            path.append(names[par])
            par = trace.parent[par]
        key = ";".join(reversed(path))
        out[key] = out.get(key, 0.0) + max(eff[i] - child[i], 0.0)
    res = {k: math.floor(v * 1e6 / freq + 0.5) for k, v in out.items()}
    return {k: res[k] for k in sorted(res, key=str.encode) if res[k]}


@settings(max_examples=40)
@given(seed=st.integers(0, 1000), f0=st.floats(0, 1), f1=st.floats(0, 1))
def test_window_matches_brute_force(seed: int, f0: float, f1: float) -> None:
    trace, records, table, names = scenario(seed, n=150, isr=True)
    p = Profile(table)
    p.add(records)
    a = p.t0_us + min(f0, f1) * p.duration_us
    b = p.t0_us + max(f0, f1) * p.duration_us
    base = int(trace.entry.min())
    got = p.folded((a, b))
    want = _brute_window_folded(trace, names, 1_000_000, a - p.t0_us + base, b - p.t0_us + base)
    assert got == want


def test_trees_agree_with_stats() -> None:
    _, records, table, _ = scenario(11, n=500, isr=True, recursive_rate=0.3)
    p = Profile(table)
    p.add(records[:250])
    p.add(records[250:])
    stats = _stats(p)
    td = p.top_down()
    assert td.total_us == pytest.approx(sum(c.total_us for c in td.children))
    self_by_label: dict[str, float] = {}
    calls_by_label: dict[str, int] = {}
    for node in td.walk():
        if node.frame >= 0:
            self_by_label[node.label] = self_by_label.get(node.label, 0) + node.self_us
            calls_by_label[node.label] = calls_by_label.get(node.label, 0) + node.calls
    for label, s in stats.items():
        assert self_by_label[label] == pytest.approx(s.self_us)
        assert calls_by_label[label] == s.calls
    bu = p.bottom_up()
    for node in bu.children:
        assert node.self_us == pytest.approx(stats[node.label].self_us)
        assert node.total_us == pytest.approx(stats[node.label].total_us)
        assert node.calls == stats[node.label].calls
        # Callers below share out the self time of the function above them, except the
        # part spent in calls that had no caller (roots).
        as_root = sum(c.self_us for c in td.children if c.label == node.label)
        assert sum(c.self_us for c in node.children) + as_root == pytest.approx(node.self_us)


def test_orphans_hang_under_unknown_in_trees() -> None:
    p = Profile()
    p.add(_recs([(0x5, 10, 4, 2), (0x6, 20, 6, 0)]))
    td = p.top_down()
    names = [c.name for c in td.children]
    assert names == ["0x00000006", "[unknown]"]
    unknown = td.children[1]
    assert unknown.total_us == 4 and unknown.children[0].name == "0x00000005"


def test_timeline_level_of_detail() -> None:
    n = 200_000
    recs = np.empty(n, RECORD_DTYPE)
    recs["func_addr"] = 0x100 + (np.arange(n) % 7) * 4
    recs["entry_time"] = np.arange(n) * 10
    recs["duration"] = 4
    recs["depth"] = 1
    long = np.array([(0x900, 0, n * 10, 0)], RECORD_DTYPE)
    p = Profile()
    p.add(recs)
    p.add(long)
    tl = p.timeline(p.t0_us, p.t1_us, 800)
    assert len(tl["depth"]) <= 801
    assert tl["records"] == n + 1
    assert sum(tl["count"]) == n + 1
    assert tl["names"][tl["frame"][tl["depth"].index(0)]] == "0x00000900"
    # Zoomed in far enough, every call is its own rectangle with its exact times.
    z = p.timeline(1000.0, 1100.0, 1000)
    ones = [i for i, d in enumerate(z["depth"]) if d == 1]
    assert [z["count"][i] for i in ones] == [1] * len(ones)
    assert [z["start_us"][i] for i in ones] == [float(t) for t in range(1000, 1101, 10)]
    assert all(z["dur_us"][i] == 4 for i in ones)


def test_prune_bounds_nodes_and_keeps_big_ones() -> None:
    rng = random.Random(3)
    p = Profile()
    rows = []
    t = 0
    for i in range(3000):
        d = rng.randint(1, 50)
        rows.append((0x1000 + 4 * i, t + 1, d, 1))
        t += d + 2
    rows.append((0x10, 0, t, 0))
    p.add(_recs(rows))
    tree = p.top_down()
    small = prune(tree, max_nodes=300)
    assert small.count() <= 300
    main = small.children[0]
    assert main.total_us == tree.children[0].total_us
    other = [c for c in main.children if c.name == "other"]
    assert len(other) == 1
    assert sum(c.total_us for c in main.children) == pytest.approx(
        sum(c.total_us for c in tree.children[0].children)
    )
    biggest = max(tree.children[0].children, key=lambda c: c.total_us)
    assert biggest.label in {c.label for c in main.children}


def test_timer_freq_and_symbols_can_change_later() -> None:
    p = Profile()
    p.add(_recs([(0x101, 0, 8, 0)]))
    assert p.folded() == {"0x00000101": 8}
    p.set_timer_freq(2_000_000)
    assert p.folded() == {"0x00000101": 4}
    p.set_symbols(SymbolTable.from_functions([Function("f", "f", 0x100, 0x110)]))
    assert p.folded() == {"f": 4}
    assert p.duration_us == 4.0
