"""The simulated demo firmware runs the ELF's real call graph, not a random one."""

from __future__ import annotations

import numpy as np
import pytest

from mcuprof.link.simulator import SimOptions, load_firmware
from mcuprof.link.workload import FunctionSpec, Workload, synthetic_functions
from mcuprof.paths import default_elf
from mcuprof.profile import UNKNOWN, Profile
from mcuprof.symbols import SymbolTable


@pytest.fixture(scope="module")
def demo() -> SymbolTable:
    return SymbolTable.from_elf(default_elf())


def _profile(table: SymbolTable, main: bool, seed: int = 4) -> tuple[Profile, np.ndarray]:
    fw = load_firmware("default")
    wl = Workload(fw.functions, 20_000, calls=fw.calls, main=main, seed=seed)
    recs = wl.take_until(3_000_000)
    # A capture cut at some instant ends inside an iteration: children whose callers have
    # not returned yet. Let the device run on, so only that instant is cut.
    tail = wl.take_until(3_200_000)
    prof = Profile(symbols=table)
    prof.add(recs)
    prof.add(tail)
    return prof, recs


def _names(table: SymbolTable, addrs: np.ndarray) -> list[str]:
    idx = table.lookup(addrs)
    assert (idx >= 0).all()
    return [table.functions[i].name for i in idx]


def test_every_parent_edge_is_a_static_call_or_an_interrupt(demo: SymbolTable) -> None:
    prof, recs = _profile(demo, main=False)
    assert len(recs) > 30_000
    rows = prof.table()
    cut = rows["entry"] + rows["duration"] > 3_000_000
    assert not rows["orphan"][~cut].any()
    func = demo.lookup(rows["func_addr"])
    assert (func >= 0).all()
    edges = set(demo.calls)
    names = [f.name for f in demo.functions]
    isr = np.array([names[i] == "TIMER1_IRQHandler" for i in func])
    child = np.flatnonzero(rows["parent"] >= 0)
    assert len(child) > len(recs) // 2
    parent_func = func[rows["parent"][child]]
    seen = set()
    for c, p in zip(child.tolist(), parent_func.tolist(), strict=True):
        if isr[c]:
            continue  # an interrupt preempts whatever runs
        assert (p, int(func[c])) in edges, f"{names[p]} -> {names[func[c]]} is no call in the ELF"
        seen.add((names[p], names[func[c]]))
    # The demo's structure, as main.c and the TIMER1 handler have it.
    for edge in [
        ("control_iteration", "fir_filter"),
        ("control_iteration", "filter_window"),
        ("control_iteration", "window_energy"),
        ("control_iteration", "control_step"),
        ("control_iteration", "actuator_write"),
        ("control_step", "app::Pid::step(long)"),
        ("app::Pid::step(long)", "int app::clamp<int>(int, int, int)"),
        ("TIMER1_IRQHandler", "sensor_sample"),
        ("sensor_sample", "adc_read"),
        ("window_energy", "window_energy"),
    ]:
        assert edge in seen
    roots = set(_names(demo, rows["func_addr"][rows["depth"] == 0]))
    # main is not instrumented; init code ran once at boot, before this window or in it.
    assert {"control_iteration", "sensor_take", "TIMER1_IRQHandler"} <= roots
    assert roots <= {"control_iteration", "sensor_take", "TIMER1_IRQHandler", "sensor_init"}
    # Recursion stays bounded: window_energy nests at most three deep.
    chains = _recursion_depths(rows, func, names.index("window_energy"))
    assert max(chains) == 3


def _recursion_depths(rows: dict[str, np.ndarray], func: np.ndarray, fn: int) -> list[int]:
    out = []
    for i in np.flatnonzero(func == fn).tolist():
        n, p = 1, int(rows["parent"][i])
        while p >= 0 and func[p] == fn:
            n, p = n + 1, int(rows["parent"][p])
        out.append(n)
    return out


def test_isrs_fire_at_several_depths_and_run_their_callees(demo: SymbolTable) -> None:
    _, recs = _profile(demo, main=False, seed=9)
    names = np.array(_names(demo, recs["func_addr"]))
    depths = recs["depth"][names == "TIMER1_IRQHandler"]
    assert len(set(depths.tolist())) >= 3 and depths.min() == 0
    # sensor_sample only ever runs inside the handler, one level below it.
    assert recs["depth"][names == "sensor_sample"].min() == 1


def test_init_functions_run_once_at_boot(demo: SymbolTable) -> None:
    fw = load_firmware("default")
    wl = Workload(fw.functions, 20_000, calls=fw.calls, seed=2)
    first = _names(demo, wl.take_until(200_000)["func_addr"])
    assert first.count("sensor_init") == 1
    later = _names(demo, wl.take_until(5_000_000)["func_addr"])
    assert "sensor_init" not in later and "control_iteration" in later
    wl.skip_until(60_000_000)  # profiling off for a while: still no second boot
    assert "sensor_init" not in _names(demo, wl.take_until(61_000_000)["func_addr"])


def test_main_option_puts_the_loop_under_a_main_that_never_returns(demo: SymbolTable) -> None:
    assert SimOptions.from_query("main=1").main and not SimOptions().main
    assert SimOptions(main=True).to_query() == "main=1"
    prof, recs = _profile(demo, main=True)
    assert recs["depth"].min() == 1
    assert "main" not in _names(demo, recs["func_addr"])  # it never returns
    assert prof.n_orphans > 0
    folded = prof.folded()
    assert all(k.startswith(UNKNOWN + ";") for k in folded)
    assert any(k.startswith(f"{UNKNOWN};control_iteration;fir_filter") for k in folded)


def test_without_edges_the_graph_is_drawn_at_random() -> None:
    funcs = synthetic_functions()
    wl = Workload(funcs, rate=10_000, seed=2)
    assert not wl.graph.static and wl.graph.tasks
    recs = wl.take_until(2_000_000)
    assert len(recs) > 0 and recs["depth"].min() == 0
    deep = Workload(funcs, rate=10_000, seed=2, main=True).take_until(2_000_000)
    assert deep["depth"].min() == 1


def test_roots_without_main_are_the_uncalled_functions() -> None:
    funcs = [
        FunctionSpec(0x100, 40, "loop_a"),
        FunctionSpec(0x200, 40, "leaf"),
        FunctionSpec(0x300, 40, "loop_b"),
        FunctionSpec(0x400, 40, "board_setup"),
        FunctionSpec(0x500, 40, "SysTick_Handler"),
        FunctionSpec(0x600, 40, "tick"),
    ]
    calls = [(0, 1), (2, 1), (4, 5), (2, 2)]
    wl = Workload(funcs, rate=10_000, seed=1, calls=calls, thumb=False)
    g = wl.graph
    name = [f.name for f in g.functions]
    assert g.static
    assert {name[i] for i in g.tasks} == {"loop_a", "loop_b"}
    assert [name[i] for i in g.boot] == ["board_setup"]
    assert [name[i] for i in g.isrs] == ["SysTick_Handler"]
    recs = wl.take_until(2_000_000)
    starts = np.array([f.start for f in funcs])
    got = {
        (funcs[i].name, int(d))
        for i, d in zip(
            np.searchsorted(starts, recs["func_addr"], side="right") - 1, recs["depth"], strict=True
        )
    }
    assert ("leaf", 1) in got and ("leaf", 0) not in got
    assert ("tick", 0) not in got  # only ever inside its handler
