"""Records on disk (profile/columns.py): every answer equals the in-memory profile's,
windows read only their range, and what stays resident is bounded."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.export import FORMATS
from mcuprof.export import render as render_format
from mcuprof.paths import default_elf
from mcuprof.profile import Profile, load_capture
from mcuprof.profile import columns as columns_mod
from mcuprof.profile.columns import Column, Spill
from mcuprof.profile.synth import addresses, generate
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import SymbolTable
from mcuprof.web import views
from tests.export.golden import captures
from tests.profile.helpers import scenario


@pytest.fixture
def all_on_disk(monkeypatch):
    """Every column goes to the file at once (small captures would stay in RAM)."""
    monkeypatch.setattr(columns_mod, "RAM_COLUMN", 0)


def _start(mm) -> int:
    return np.frombuffer(mm, np.uint8, count=1).__array_interface__["data"][0]


def mapping_rss(spill: Spill) -> int:
    """Resident bytes of the spill's mappings (its file, and big columns' own files) in
    this process, from /proc/self/smaps."""
    starts = {_start(spill._mm)} | {_start(own.mm) for own in spill.own}
    total, found, inside = 0, 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            inside = int(head.split("-")[0], 16) in starts
            found += inside
        elif inside and head == "Rss:":
            total += int(line.split()[1]) * 1024
    assert found == len(starts)
    return total


def answers(p: Profile, window=None) -> tuple:
    stats = [s.to_dict() for s in p.function_stats(window)]
    td = [(n.label, n.calls, n.total_us, n.self_us) for n in p.top_down(window).walk()]
    bu = [(n.label, n.calls, n.total_us, n.self_us) for n in p.bottom_up(window).walk()]
    return p.folded(window), stats, td, bu


def page_views(p: Profile, window=None) -> tuple:
    """What the dashboard's routes answer: flame (both ways), sandwich, Functions,
    call tree, timeline and the details of one call."""
    out = [
        views.flame_graph(p, window, 3000),
        views.flame_graph(p, window, 3000, "bottom-up"),
        views.functions(p, window),
        views.call_tree(p, "top-down", window, 5000),
        views.timeline(p, None, None, 800),
    ]
    fids = [f["fid"] for f in views.functions(p, window)["functions"][:2]]
    out += [views.sandwich(p, window, fid, 3000) for fid in fids]
    lv = p.levels[min(p.levels)]
    t = float(p.us(lv.entry[lv.n // 2] + 1))
    out.append(views.call_details(p, min(p.levels), t))
    return tuple(out)


def test_columns_keep_their_data_across_growth_drops_and_copies(all_on_disk, monkeypatch) -> None:
    monkeypatch.setattr(columns_mod, "OWN_AT", 1 << 18)  # past 256 KB: a file of its own
    spill = Spill()
    col = Column(np.int64, spill)
    want = np.arange(300_000, dtype=np.int64) * 7
    n = 0
    for k in (1, 10, 5000, 100_000, 194_989):
        col.reserve(n + k, n)[n : n + k] = want[n : n + k]
        n += k
        spill.drop()
    assert col.ram_bytes == 0 and spill.disk_bytes >= want.nbytes
    assert col._own is not None and len(spill.own) == 1
    assert np.array_equal(col.a[:n], want[:n])
    assert mapping_rss(spill) >= want.nbytes  # read back: resident until dropped
    spill.drop()
    assert mapping_rss(spill) == 0 and np.array_equal(col.a[:n], want[:n])
    other = Spill()
    for dest in (other, None):
        copy = col.copy(n, dest)
        assert np.array_equal(copy.a[:n], want)
        copy.a[0] = -1  # independent of the source
    assert col.a[0] == 0


def test_small_columns_stay_in_ram_within_the_budget(monkeypatch) -> None:
    spill = Spill()
    monkeypatch.setattr(columns_mod, "RAM_BUDGET", 1 << 16)
    cols = [Column(np.int64, spill) for _ in range(40)]
    for c in cols:
        c.reserve(1000, 0)[:1000] = 5
    in_ram = [c for c in cols if c.ram_bytes]
    assert 0 < len(in_ram) < len(cols)  # the budget sent the rest to the file
    assert spill.ram_used <= columns_mod.RAM_BUDGET
    big = Column(np.int64, spill)
    big.reserve(columns_mod.RAM_COLUMN, 0)  # past the size for RAM: in the file
    assert big.ram_bytes == 0
    assert all((c.a[:1000] == 5).all() for c in cols)


@pytest.mark.parametrize("name", ["regular", "timer3mhz", "reset", "corrupt"])
def test_golden_captures_agree_in_every_view_and_export(name, all_on_disk) -> None:
    elf = default_elf()
    data = captures(elf)[name]
    table = SymbolTable.from_elf(elf)
    ram = load_capture(data, table, chunk=977).profile
    disk = load_capture(data, table, chunk=977, spill=Spill()).profile
    assert disk.spill is not None and disk.spill.disk_bytes > 0
    assert disk.n_records == ram.n_records > 0
    lo, hi = ram.t0_us, ram.t1_us
    windows = [None, (lo, hi), (lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.35)]
    for w in windows:
        assert answers(disk, w) == answers(ram, w)
        assert page_views(disk, w) == page_views(ram, w)
    for a, b in ((lo, hi), (lo + (hi - lo) * 0.5, lo + (hi - lo) * 0.51)):
        assert disk.timeline(a, b, 1000) == ram.timeline(a, b, 1000)
    assert {k: v.tolist() for k, v in disk.table().items()} == {
        k: v.tolist() for k, v in ram.table().items()
    }
    snap = disk.snapshot()
    assert snap.spill is not None and snap.spill is not disk.spill
    for fmt in FORMATS:
        assert render_format(fmt, snap, None) == render_format(fmt, ram, None), fmt
        assert render_format(fmt, snap, windows[2]) == render_format(fmt, ram, windows[2]), fmt


record_st = st.tuples(
    st.sampled_from([0x100, 0x200, 0x300, 0x400]),
    st.integers(0, 80),
    st.integers(0, 30),
    st.integers(0, 3),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_st, min_size=1, max_size=60), data=st.data())
def test_arbitrary_streams_in_any_split_agree(rows, data) -> None:
    """Streams out of order (merges into the middle of a level, re-parenting) on disk."""
    columns_mod.RAM_COLUMN, saved = 0, columns_mod.RAM_COLUMN
    try:
        recs = np.array(rows, RECORD_DTYPE)
        cuts = sorted(set(data.draw(st.lists(st.integers(1, len(recs)), max_size=6))))
        disk, ram = Profile(spill=Spill()), Profile()
        for a, b in zip([0, *cuts], [*cuts, len(recs)], strict=True):
            disk.add(recs[a:b])
            ram.add(recs[a:b])
            assert answers(disk) == answers(ram)
            assert disk.timeline(disk.t0_us, disk.t1_us + 1, 50) == ram.timeline(
                ram.t0_us, ram.t1_us + 1, 50
            )
    finally:
        columns_mod.RAM_COLUMN = saved


def test_live_adds_with_queries_between_agree(all_on_disk) -> None:
    _, recs, table, _ = scenario(7, n=20_000, isr=True, recursive_rate=0.2)
    disk, ram = Profile(table, spill=Spill()), Profile(table)
    rng = random.Random(3)
    at = 0
    while at < len(recs):
        k = rng.randint(1, 3000)
        disk.add(recs[at : at + k])
        ram.add(recs[at : at + k])
        at += k
        if rng.random() < 0.3:
            assert answers(disk) == answers(ram)
    assert answers(disk) == answers(ram)
    assert page_views(disk) == page_views(ram)


def _long_capture(n: int) -> np.ndarray:
    rng = random.Random(5)
    ranges = [(0x0800_0000 + 0x40 * i, 0x0800_0040 + 0x40 * i) for i in range(30)]
    trace = generate(rng, len(ranges), n, max_depth=4)
    return trace.records(addresses(rng, trace, ranges))


def test_resident_pages_are_dropped_and_a_window_touches_only_its_range(monkeypatch) -> None:
    monkeypatch.setattr(columns_mod, "OWN_AT", 1 << 18)  # the big levels in files of their own
    recs = _long_capture(300_000)
    spill = Spill()
    p = Profile(spill=spill)
    for i in range(0, len(recs), 50_000):
        p.add(recs[i : i + 50_000])
        p.folded()  # read between adds, as the dashboard does (adds merge at reads)
    stored = spill.disk_bytes
    assert stored > 4 << 20 and len(spill.own) > 0
    # After each call what it touched leaves the process (the data stays in the file).
    assert mapping_rss(spill) == 0
    assert p.nbytes < 0.25 * stored  # in RAM: timeline levels, small columns, aggregates
    touched: list[int] = []
    drop = spill.drop

    def measured_drop() -> None:
        touched.append(mapping_rss(spill))
        drop()

    spill.drop = measured_drop  # type: ignore[method-assign]
    lo, hi = p.t0_us, p.t1_us
    small = (lo + (hi - lo) * 0.5, lo + (hi - lo) * 0.501)
    p.function_stats(small)
    p.folded(small)
    p.timeline(*small, 1000)
    # A binary search faults in 64 KB around each probe (the kernel's fault-around), so
    # a small window maps a few such runs per column; nothing near the whole.
    assert touched and max(touched) < 0.25 * stored, (touched, stored)
    whole = p.function_stats((lo, hi))  # a window over everything reads everything
    assert touched[-1] > 0.2 * stored
    assert mapping_rss(spill) == 0
    assert [s.to_dict() for s in whole] == [
        s.to_dict() for s in _ram_copy(recs).function_stats((lo, hi))
    ]


def _ram_copy(recs: np.ndarray) -> Profile:
    p = Profile()
    for i in range(0, len(recs), 50_000):
        p.add(recs[i : i + 50_000])
    return p


def test_a_spilled_profile_keeps_its_aggregates_folded_without_queries() -> None:
    """Nobody asks (no page open): the tail of unfolded records still stays short, so
    the first query never folds the whole capture at once."""
    recs = _long_capture(700_000)
    p = Profile(spill=Spill())
    for i in range(0, len(recs), 20_000):
        p.add(recs[i : i + 20_000])
        assert p.n_records - p.aggregator.aggregated < (1 << 18) + 20_000
    assert Profile().aggregator.resets == 0


def test_a_whole_capture_timeline_maps_only_pages_near_its_pixel_edges() -> None:
    """The timeline over a whole long capture walks its levels of detail in RAM and
    reads the column files only near pixel-column edges. (It read the entry of every
    group of the top tier, and the kernel's 64 KB fault-around then mapped all of a
    depth's entries: ≈ 10 bytes a record of RSS for each whole-timeline request, 1.7 GB
    at an hour's capture.)"""
    n = 2_000_000
    recs = np.zeros(n, RECORD_DTYPE)
    recs["func_addr"] = 0x0800_0100 + 4 * (np.arange(n) % 7)
    recs["entry_time"] = np.arange(n) * 10
    recs["duration"] = 5
    spill = Spill()
    p, ram = Profile(spill=spill), Profile()
    for chunk in np.array_split(recs, 20):
        p.add(chunk)
        ram.add(chunk)
    entry_bytes = p.levels[0].n * 8
    touched: list[int] = []
    drop = spill.drop

    def measured_drop() -> None:
        touched.append(mapping_rss(spill))
        drop()

    spill.drop = measured_drop  # type: ignore[method-assign]
    for width in (8, 16):
        got = views.timeline(p, None, None, width)
        assert got == views.timeline(ram, None, None, width)
        assert got["records"] == n
    assert touched and max(touched) < 0.25 * entry_bytes, (touched, entry_bytes)
    assert mapping_rss(spill) == 0
