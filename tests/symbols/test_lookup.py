"""Function ranges and address lookup on real ELFs: containment, Thumb, aliases, hex."""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.symbols import Function, SymbolTable, elfparse


def by_raw(table: SymbolTable, raw: str) -> list[Function]:
    return [f for f in table.functions if f.raw_name == raw]


def test_arm_ranges_agree_with_binutils(elfs: Any, tools: Any, arm_table: SymbolTable) -> None:
    assert arm_table.is_arm
    nm = tools.nm_functions("arm-none-eabi-nm", elfs.arm)
    # aliases share one entry; check every sized symbol's range is covered by its entry
    for name, value, size in nm:
        i = int(arm_table.lookup(np.array([value], dtype=np.uint32))[0])
        assert i >= 0, name
        f = arm_table.functions[i]
        assert (f.start, f.end) == (value, value + size), name
    starts = [f.start for f in arm_table.functions]
    assert starts == sorted(starts)
    for a, b in itertools.pairwise(arm_table.functions):
        assert a.end <= b.start


def test_thumb_bit_cleared_on_symbols_and_addresses(arm_table: SymbolTable) -> None:
    assert all(f.start % 2 == 0 for f in arm_table.functions)
    starts = np.array([f.start for f in arm_table.functions], dtype=np.uint32)
    expected = np.arange(len(starts))
    assert arm_table.lookup(starts).tolist() == expected.tolist()
    assert arm_table.lookup(starts | 1).tolist() == expected.tolist()
    leaf = by_raw(arm_table, "leaf")[0]
    assert arm_table.name_of(leaf.start | 1) == "leaf"


def test_every_address_inside_a_body_resolves_to_it(arm_table: SymbolTable) -> None:
    for i, f in enumerate(arm_table.functions):
        inside = np.arange(f.start, f.end, dtype=np.uint32)
        assert (arm_table.lookup(inside) == i).all(), f.name
        assert (arm_table.lookup(inside | 1) == i).all(), f.name
        assert int(arm_table.lookup(np.array([f.end], dtype=np.uint32))[0]) != i


def test_real_return_address_resolves_to_caller(
    elfs: Any, tools: Any, arm_table: SymbolTable
) -> None:
    # __builtin_return_address(0) in leaf() is the instruction after main's "bl leaf",
    # with the Thumb bit set as LR carries it.
    disasm = tools.run(["arm-none-eabi-objdump", "-d", "--disassemble=main", str(elfs.arm)])
    m = re.search(r"^\s*([0-9a-f]+):\s+([0-9a-f]{4}) ([0-9a-f]{4})\s+bl\s+\S+ <leaf>", disasm, re.M)
    assert m, disasm
    return_address = (int(m.group(1), 16) + 4) | 1
    assert arm_table.name_of(return_address) == "main"
    i = int(arm_table.lookup(np.array([return_address], dtype=np.uint32))[0])
    main = arm_table.functions[i]
    assert main.raw_name == "main" and main.start < return_address & ~1 < main.end


def test_zero_size_function_runs_to_next_symbol(
    elfs: Any, tools: Any, arm_table: SymbolTable
) -> None:
    symtab = tools.run(["arm-none-eabi-readelf", "-sW", str(elfs.arm)])
    assert re.search(r"\s0\s+FUNC\s+GLOBAL\s+DEFAULT\s+\d+\s+zero_size_fn$", symtab, re.M)
    (zero,) = by_raw(arm_table, "zero_size_fn")
    (after,) = by_raw(arm_table, "after_zero")
    assert zero.end == after.start > zero.start
    assert arm_table.name_of(after.start - 2) == "zero_size_fn"


def test_zero_size_function_on_x86(host_table: SymbolTable) -> None:
    (zero,) = by_raw(host_table, "zero_size_fn")
    (after,) = by_raw(host_table, "after_zero")
    assert zero.end == after.start > zero.start


def test_aliases_prefer_the_global_name(arm_table: SymbolTable) -> None:
    names = {f.raw_name for f in arm_table.functions}
    # global_alias and static local_impl share an address; after_zero has a weak alias
    assert "global_alias" in names and "local_impl" not in names
    assert "after_zero" in names and "weak_alias" not in names
    (alias,) = by_raw(arm_table, "global_alias")
    assert not alias.is_static and alias.label == "global_alias"


def test_address_in_no_function_prints_raw_hex(arm_table: SymbolTable) -> None:
    first, last = arm_table.functions[0], arm_table.functions[-1]
    outside = [first.start - 1, last.end + 1, 0x20000001, 0x00000000, 0xFFFFFFFF]
    for addr in outside:
        assert arm_table.name_of(addr) == f"0x{addr:08x}"
    assert (arm_table.lookup(np.array(outside, dtype=np.uint32)) == -1).all()
    assert arm_table.name_of(0x20000001) == "0x20000001"  # raw: Thumb bit kept


def test_x86_does_not_clear_bit_zero(host_table: SymbolTable) -> None:
    assert not host_table.is_arm
    odd = [f for f in host_table.functions if f.start % 2 == 1]
    assert odd, "the x86 build should have functions at odd addresses"
    for f in odd:
        assert host_table.name_of(f.start) == f.name
        if f.start - 1 >= 0 and host_table.function_at(f.start - 1) is not f:
            assert host_table.name_of(f.start - 1) != f.name


@settings(max_examples=60)
@given(st.lists(st.integers(min_value=0x07FFFF00, max_value=0x08000200), min_size=0, max_size=64))
def test_vector_lookup_equals_scalar_for_any_dtype(arm_table: SymbolTable, addrs: list) -> None:
    expected = []
    for a in addrs:
        f = arm_table.function_at(a)
        expected.append(-1 if f is None else arm_table.functions.index(f))
    for dtype in ["<u4", ">u4", "<u8", "<i8", "<i4"]:
        got = arm_table.lookup(np.array(addrs, dtype=dtype))
        assert got.dtype == np.int64
        assert got.tolist() == expected, dtype
    assert arm_table.names_of(np.array(addrs, dtype=np.uint32)) == [
        arm_table.name_of(a) for a in addrs
    ]


def test_lookup_keeps_shape_and_rejects_non_integers(arm_table: SymbolTable) -> None:
    grid = np.full((3, 4), arm_table.functions[0].start, dtype=np.uint32)
    assert arm_table.lookup(grid).shape == (3, 4)
    assert arm_table.lookup(np.array([], dtype=np.uint32)).shape == (0,)
    assert arm_table.lookup(np.array([-5], dtype=np.int64)).tolist() == [-1]
    try:
        arm_table.lookup(np.array([1.5]))
    except TypeError:
        pass
    else:
        raise AssertionError("float addresses must be refused")


def test_empty_table_resolves_everything_to_hex() -> None:
    table = SymbolTable.empty()
    assert table.lookup(np.array([0x08000001, 5], dtype=np.uint32)).tolist() == [-1, -1]
    assert table.name_of(0x08000001) == "0x08000001"
    assert table.build_id is None


def test_from_functions_sorts_and_refuses_overlaps() -> None:
    b = Function("b", "b", 0x200, 0x210)
    a = Function("a", "a", 0x100, 0x180)
    table = SymbolTable.from_functions([b, a], is_arm=False, build_id=7)
    assert [f.name for f in table.functions] == ["a", "b"]
    assert table.build_id == 7 and not table.is_arm
    assert table.name_of(0x17F) == "a" and table.name_of(0x180) == "0x00000180"
    try:
        SymbolTable.from_functions([a, Function("c", "c", 0x150, 0x190)])
    except ValueError:
        pass
    else:
        raise AssertionError("overlapping functions must be refused")


def test_addresses_above_32_bits() -> None:
    high = Function("high", "high", 0xFFFF_FFFF_0000, 0xFFFF_FFFF_0100)
    table = SymbolTable.from_functions([high], is_arm=False)
    addrs = np.array([0xFFFF_FFFF_0080, 0xFFFF_0080], dtype=np.uint64)
    assert table.lookup(addrs).tolist() == [0, -1]
    assert table.lookup(np.array([0x0080], dtype=np.uint32)).tolist() == [-1]


BINDS = ["STB_GLOBAL", "STB_WEAK", "STB_LOCAL"]
candidate = st.builds(
    elfparse.Candidate,
    name=st.sampled_from(["a", "b", "c", "_Z1fv"]),
    start=st.integers(0, 64).map(lambda x: x * 2),
    size=st.sampled_from([0, 0, 1, 2, 6, 40]),
    bind=st.sampled_from(BINDS),
    section=st.just((0, 100)),
    unit=st.none(),
)


@settings(max_examples=200)
@given(st.lists(candidate, max_size=20), st.randoms(use_true_random=False))
def test_ranges_are_deterministic_sorted_and_disjoint(cands: list, rnd: Any) -> None:
    bounds = [c.start for c in cands]
    out = elfparse.build_ranges(cands, bounds)
    shuffled = list(cands)
    rnd.shuffle(shuffled)
    assert elfparse.build_ranges(shuffled, bounds) == out
    assert sorted({c.start for c in cands}) == [r["start"] for r in out]
    for a, b in itertools.pairwise(out):
        assert a["start"] < a["end"] <= b["start"]
    for r in out:
        here = [c for c in cands if c.start == r["start"]]
        best_rank = min(BINDS.index(c.bind) for c in here)
        chosen = [c for c in here if c.name == r["raw_name"]]
        assert min(BINDS.index(c.bind) for c in chosen) == best_rank
        assert r["is_static"] == (best_rank == 2)
