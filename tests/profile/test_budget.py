"""profile/budget.py on small profiles: path globs (QS steps' object;state;signal),
the live side's "no calls yet", and the bucket counts' verdicts agreeing with the
sorted ones."""

from __future__ import annotations

import numpy as np
import pytest

from mcuprof.errors import UserError
from mcuprof.profile import Profile
from mcuprof.profile import distribution as dist
from mcuprof.profile.budget import Budget, check, parse
from mcuprof.profile.synth import flat
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable


def _steps() -> Profile:
    """Three-level stacks as QS steps are: AO;state;SIG, two signals of one state."""
    names = ["AO_Table", "serving", "EAT_SIG", "DONE_SIG"]
    funcs = [Function(n, n, 0x100 * (i + 1), 0x100 * (i + 2)) for i, n in enumerate(names)]
    rows = []
    t = 0
    for i in range(200):
        sig, dur = (2, 10) if i % 2 else (3, 40)
        rows += [(0x100 * (sig + 1), t, dur, 2), (0x200, t, dur, 1), (0x100, t, dur, 0)]
        t += dur + 5
    recs = np.zeros(len(rows), RECORD_DTYPE)
    for k, name in enumerate(("func_addr", "entry_time", "duration", "depth")):
        recs[name] = [r[k] for r in rows]
    p = Profile(SymbolTable.from_functions(funcs))
    p.add(recs)
    return p


def test_a_path_glob_matches_steps_of_as_many_frames():
    p = _steps()
    budgets = [Budget("AO_Table;serving;*", {"max_us": 20}, index=1)]
    verdicts = check(p, budgets, 0.95)
    got = {v.function: v.state for v in verdicts}
    # "AO_Table;serving" (two frames) is not a step of three
    assert got == {"AO_Table;serving;DONE_SIG": "broken", "AO_Table;serving;EAT_SIG": "holds"}
    with pytest.raises(UserError, match="matches no function"):
        check(p, [Budget("AO_Table;*;*;*", {"max_us": 1}, index=1)], 0.95)


def test_live_a_budget_without_calls_waits():
    p = _steps()
    v = check(p, [Budget("AO_Tabel", {"p99_us": 1}, index=1)], 0.95, live=True)
    assert [x.state for x in v] == ["no calls yet"]


def test_the_counts_give_the_sorted_verdicts(monkeypatch):
    """Past EXACT_CALLS the live check reads the bucket counts: on durations far from
    the limits, the same verdicts as the sorted calls'."""
    rng = np.random.default_rng(3)
    n = 4000
    dur = np.round(rng.lognormal(np.log(100), 0.3, n)).astype(np.int64)
    trace = flat(np.zeros(n, np.int64), dur, np.full(n, 10))
    f = Function("control_step", "control_step", 0x100, 0x200)
    p = Profile(SymbolTable.from_functions([f]))
    p.add(trace.records(np.full(n, 0x100, np.uint32)))
    budgets = parse(
        b'[[budget]]\nfunction = "control_step"\np50_us = 150\np99_us = 150\nmax_us = 400\n'
        b"p90_us = 50\n"
    )
    exact = check(p, budgets, 0.95, live=True)
    monkeypatch.setattr(dist, "EXACT_CALLS", 100)
    counted = check(p, budgets, 0.95, live=True)
    assert [v.state for v in counted] == [v.state for v in exact]
    # in the file's order of limits: p50, p90, p99, max
    assert [v.state for v in exact] == ["holds", "broken", "broken", "holds"]
    for a, b in zip(exact, counted, strict=True):
        assert b.figure_us == pytest.approx(a.figure_us, rel=0.01)
        assert any("histogram" in note for note in b.notes)
