"""A stored session whose timer restarts often, loaded into a profile on disk (the
dashboard's Open, compare and sessions read stored sessions so): the records that land
behind are joined in few merges, so the work grows linearly with the restarts, and the
tables are those of the loader without a disk (`mcuprof info`). Added piece by piece as
they came, each restart's merge passed over every record held (issue 35, finding 6).
Counted, not timed: the records the merges pass over."""

from __future__ import annotations

import random

import numpy as np
import pytest

import mcuprof.profile.model as model
from mcuprof.profile import load_capture
from mcuprof.profile.columns import Spill
from mcuprof.profile.synth import restarting_records
from tests.web.test_live_restarts import capture_bytes, merged_over


@pytest.mark.parametrize("restarts", [20, 80])
def test_a_loaded_restarting_capture_costs_linear_work(monkeypatch, tmp_path, restarts) -> None:
    monkeypatch.setattr(model, "_STAGE", 4096)  # staged records merged as a large load's are
    data = capture_bytes(restarting_records(random.Random(restarts), restarts, 1500))
    passed = merged_over(monkeypatch)
    # Pieces of ~4,000 records, as a large session's are of ~300,000.
    got = load_capture(data, chunk=1 << 16, spill=Spill(tmp_path)).profile
    total = got.n_records
    assert sum(passed) <= 2 * total, (len(passed), sum(passed) / total)
    monkeypatch.undo()
    want = load_capture(data).profile
    assert want.n_records == total
    assert want.folded() == got.folded()
    a, b = want.table(), got.table()
    for key in ("entry", "duration", "depth"):
        if key in a:
            assert np.array_equal(np.sort(a[key]), np.sort(b[key])), key
