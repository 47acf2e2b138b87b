"""Issue 32 item 3: loss stays with the session. A capture with the device's STATUS
packets keeps its counters and the stretches with loss (store, ``sessions list/show``,
``info --json``); a session stored before reads "not recorded", never 0."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.compare.captures import lossy_stream
from tests.store.conftest import META, capture, records

from mcuprof.cli import main
from mcuprof.loss import loss_of_chunks
from mcuprof.store import SessionStore

N = 4000


def _lossy(drops: list[tuple[int, int]]) -> tuple[bytes, np.ndarray]:
    rec = records(N)
    mask = np.zeros(N, bool)
    for a, b in drops:
        mask[a:b] = True
    return lossy_stream(rec, mask, META), mask


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_the_stretches_hold_every_dropped_record() -> None:
    data, mask = _lossy([(1000, 1100), (3000, 3050)])
    loss = loss_of_chunks([data])
    assert loss is not None
    assert (loss["captured"], loss["lost"], loss["overflows"]) == (N, 150, 150)
    assert loss["received"] == N - 150 and loss["unplaced"] == 0
    exits = records(N)["entry_time"].astype(float) + 5  # 1 MHz: ticks are µs
    for t in exits[mask]:
        assert any(a <= t <= b for a, b, _ in loss["stretches"]), t
    assert sum(n for _, _, n in loss["stretches"]) == 150
    # and they stay near the truth: no stretch covers more than a few packets of records
    assert all(b - a < 10 * 400 for a, b, _ in loss["stretches"])


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, N - 1), st.integers(1, 300)), max_size=5),
    st.integers(1, 7),
    st.integers(0, 200),
)
def test_any_split_and_lag_places_each_drop_in_a_stretch(drops, status_every, lag) -> None:
    rec = records(N)
    mask = np.zeros(N, bool)
    for a, n in drops:
        mask[a : a + n] = True
    data = lossy_stream(rec, mask, META, status_every=status_every, lag=lag)
    cut = len(data) // 3
    loss = loss_of_chunks([data[:cut], data[cut:]])
    assert loss is not None and loss["lost"] == int(mask.sum())
    exits = rec["entry_time"].astype(float) + 5
    # Before the first record that arrived (after the last) nothing is known: a stretch
    # there starts (ends) with the capture's own time range.
    kept = rec[~mask]
    first, last = float(kept["entry_time"][0]), float(kept["entry_time"][-1]) + 5
    for t in np.clip(exits[mask], first, last):
        assert any(a <= t <= b for a, b, _ in loss["stretches"]), t


def test_info_json_adds_loss_only_with_status_packets(capsys, tmp_path) -> None:
    plain, lossy = tmp_path / "plain.bin", tmp_path / "lossy.bin"
    plain.write_bytes(capture(4))
    lossy.write_bytes(_lossy([(100, 200)])[0])
    _, out = _run(capsys, "info", str(plain), "--json")
    assert "loss" not in json.loads(out)
    _, out = _run(capsys, "info", str(lossy), "--json")
    loss = json.loads(out)["loss"]
    assert loss["lost"] == 100 and len(loss["stretches"]) == 1
    _, out = _run(capsys, "info", str(lossy))
    assert "lost          100 (2.5%) of 4,000 captured" in out


def test_sessions_keep_loss_and_old_ones_read_not_recorded(capsys, tmp_path) -> None:
    data = tmp_path / "data"
    with SessionStore(data) as store:
        old = store.import_capture("old", capture(2)).id
    # A store from before the loss column: the migration adds it, the row reads NULL.
    db = sqlite3.connect(data / "sessions.db")
    db.execute("ALTER TABLE sessions DROP COLUMN loss")
    db.commit()
    db.close()
    with SessionStore(data) as store:
        assert store.get(old).loss is None
        lossy = store.import_capture("lossy", _lossy([(500, 600)])[0]).id
        plain = store.import_capture("plain", capture(2)).id
        assert store.get(lossy).loss["lost"] == 100
        assert store.get(plain).loss is None  # no STATUS in the stream: nothing to tell
    d = str(data)
    _, out = _run(capsys, "sessions", "list", "--data-dir", d)
    rows = {line.split()[-1]: line for line in out.splitlines()[1:]}
    assert "not recorded" in rows["old"] and " 0 " not in rows["old"]
    assert "100 (2.5%)" in rows["lossy"]
    _, out = _run(capsys, "sessions", "show", str(lossy), "--json", "--data-dir", d)
    shown = json.loads(out)
    assert shown["loss"]["lost"] == 100 and shown["capture"]["loss"]["lost"] == 100
    _, out = _run(capsys, "sessions", "show", str(old), "--json", "--data-dir", d)
    assert json.loads(out)["loss"] is None
    _, out = _run(capsys, "sessions", "show", str(old), "--data-dir", d)
    assert "lost        not recorded" in out
    _, out = _run(capsys, "sessions", "show", str(lossy), "--data-dir", d)
    assert "lost        100 (2.5%) of 4,000 captured; overflows 100" in out
