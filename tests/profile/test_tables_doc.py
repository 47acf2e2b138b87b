"""The worked example of profile/tables.py's docstring is what the code builds: its call
table, stack table, per-frame sums and folded lines."""

from __future__ import annotations

import numpy as np

from mcuprof.export import render
from mcuprof.profile import Profile
from mcuprof.profile.aggregate import stacks, sums
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable

NAMES = [("main", 0x100), ("a", 0x200), ("b", 0x300), ("c", 0x400)]
SYMS = SymbolTable.from_functions(
    [Function(n, n, a, a + 0xFF, "m.c", None, False) for n, a in NAMES]
)
# (address, entry, duration, depth) in exit order, as the docstring lists them
SENT = [(0x300, 15, 10, 2), (0x200, 10, 30, 1), (0x300, 50, 10, 1), (0x400, 70, 20, 1)]
SENT.append((0x100, 0, 100, 0))


def _profile() -> Profile:
    rec = np.zeros(len(SENT), RECORD_DTYPE)
    for i, (a, e, d, depth) in enumerate(SENT):
        rec[i]["func_addr"], rec[i]["entry_time"] = a, e
        rec[i]["duration"], rec[i]["depth"] = d, depth
    p = Profile(SYMS, 1_000_000)
    p.add(rec)
    return p


def test_the_worked_example_holds() -> None:
    p = _profile()
    st, s = stacks(p), sums(p)
    assert [f.name for f in p.frames] == ["main", "a", "b", "c"]
    calls = {
        d: list(
            zip(
                p.frame_ids(lv).tolist(),
                lv.entry.tolist(),
                lv.dur.tolist(),
                lv.parent.tolist(),
                st.per_level[d].tolist(),
                strict=True,
            )
        )
        for d, lv in p.levels.items()
    }
    assert calls == {
        0: [(0, 0, 100, -1, 1)],
        1: [(1, 10, 30, 0, 2), (2, 50, 10, 0, 3), (3, 70, 20, 0, 4)],
        2: [(2, 15, 10, 0, 5)],
    }
    assert st.parent.tolist() == [-1, -1, 1, 1, 1, 2]
    assert st.frame.tolist() == [-1, 0, 1, 2, 3, 2]
    assert np.asarray(st.depth).tolist() == [-1, 0, 1, 1, 1, 2]
    assert s.calls.tolist() == [0, 1, 1, 1, 1, 1]
    assert s.total.tolist() == [0, 100, 30, 10, 20, 10]
    assert s.self_.tolist() == [0, 40, 20, 10, 20, 10]
    assert (s.f_calls.tolist(), s.f_total.tolist()) == ([1, 1, 2, 1], [100, 30, 20, 20])
    assert s.f_self.tolist() == [40, 20, 20, 20]
    folded = "main 40\nmain;a 20\nmain;a;b 10\nmain;b 10\nmain;c 20\n"
    assert render("folded", p) == folded
