"""A plausible firmware workload for the simulated device: records in return order.

With an ELF whose static call graph is known (ARM BL instructions), the simulated
firmware runs that graph: ``main``'s callees form the superloop, ISRs nobody calls fire
at random depth and run their own callees, one-shot init functions run once at boot.
Without edges (``elf=none``, non-ARM or stripped files) a call graph is drawn at random.
By default ``main`` is not instrumented, like the real demo firmware, so loop tasks are
depth-0 roots; ``main=True`` instruments a ``main`` that never returns (orphan stacks).
A few dozen loop iterations are rendered as record templates up front and then
replayed end to end with numpy, so a 100,000 records/s stream costs little CPU.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..protocol import RECORD_DTYPE

_ISR_NAME = re.compile(r"(IRQHandler|_Handler|_isr|_ISR|Handler_)$")
# The hooks, the profiler's own runtime, startup code and prebuilt libc are not instrumented.
_NOT_INSTRUMENTED = re.compile(
    r"^(__cyg_profile|mcuprof_|__libc|Reset_Handler$|Default_Handler$|_start$|_init$|_fini$"
    r"|mem(cpy|set|move|cmp)$|str(len|cmp|cpy)$)"
)
# Called once before the superloop; in a profile they would be noise on every iteration.
_ONE_SHOT = re.compile(r"init|setup|config", re.IGNORECASE)
_ENTER_HOOK = "__cyg_profile_func_enter"
# Recursion is followed at most this deep, each level less likely than the last.
_MAX_RECURSION = 3
TICK_MASK = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """A function the simulated firmware may call (``start`` with the Thumb bit clear)."""

    start: int
    size: int
    name: str


def synthetic_functions() -> list[FunctionSpec]:
    """A small made-up firmware, used when no ELF is at hand."""
    names = [
        "main",
        "SysTick_Handler",
        "USART2_IRQHandler",
        "TIM2_IRQHandler",
        "sensor_task",
        "control_task",
        "comms_task",
        "log_task",
        "adc_read",
        "filter_update",
        "pid_step",
        "clamp",
        "pwm_write",
        "crc16_update",
        "uart_send",
        "ring_push",
        "ring_pop",
        "memcpy_small",
        "fixed_mul",
        "led_toggle",
        "delay_short",
        "parse_frame",
    ]
    addr = 0x0800_0200
    out: list[FunctionSpec] = []
    for i, name in enumerate(names):
        size = 32 + (i * 37) % 200
        out.append(FunctionSpec(addr, size, name))
        addr += (size + 7) & ~7
    return out


def synthetic_build_id(functions: Sequence[FunctionSpec]) -> int:
    text = ",".join(f"{f.start:x}:{f.size}:{f.name}" for f in functions).encode()
    return zlib.crc32(text)


def load_elf_functions(
    path: str | Path,
) -> tuple[list[FunctionSpec], int | None, bool, list[tuple[int, int]]]:
    """Functions, build ID, ARM-ness and static call edges (indices into the functions)
    of an ELF, through the symbols layer."""
    from ..symbols import SymbolTable  # deferred: only the simulator needs ELF parsing

    table = SymbolTable.from_elf(path)
    funcs = [FunctionSpec(f.start, max(2, f.end - f.start), f.name) for f in table.functions]
    if not funcs:
        raise UserError(f"{path}: no functions with a size in the ELF; cannot simulate it")
    return funcs, table.build_id, table.is_arm, list(table.calls)


class _Graph:
    """Who calls whom, drawn at random: fixed for a run, so the profile looks like one
    program. Used when the ELF gives no call edges."""

    static = False
    boot: list[int] = []  # noqa: RUF012 - never mutated; the static graph sets its own

    def __init__(self, functions: Sequence[FunctionSpec], rng: np.random.Generator) -> None:
        usable = [f for f in functions if not _NOT_INSTRUMENTED.search(f.name)] or list(functions)
        main = next((i for i, f in enumerate(usable) if f.name == "main"), None)
        isrs = [i for i, f in enumerate(usable) if _ISR_NAME.search(f.name) and i != main]
        regular = [i for i in range(len(usable)) if i != main and i not in isrs]
        if not isrs and len(regular) >= 6:
            isrs = [int(i) for i in rng.choice(regular, size=2, replace=False)]
            regular = [i for i in regular if i not in isrs]
        if not regular:
            regular = isrs[:] or [0]
        order = [int(i) for i in rng.permutation(regular)]
        n_tasks = max(1, min(6, len(order) // 4))
        self.functions = usable
        self.tasks = order[:n_tasks]
        self.isrs = isrs[:4]
        self.children: dict[int, list[int]] = {}
        for pos, fn in enumerate(order):
            later = order[pos + 1 :]
            k = 0 if not later else int(rng.integers(0, min(3, len(later)) + 1))
            self.children[fn] = (
                [int(c) for c in rng.choice(later, size=k, replace=False)] if k else []
            )
        self.isr_helpers: dict[int, list[int]] = {
            isr: [int(rng.choice(order))] if rng.random() < 0.5 else [] for isr in self.isrs
        }


class _StaticGraph:
    """The firmware's real call graph, from the ELF's BL instructions."""

    static = True

    def __init__(self, functions: Sequence[FunctionSpec], calls: Sequence[tuple[int, int]]):
        n = len(functions)
        callees: dict[int, list[int]] = {}
        called: set[int] = set()
        for caller, callee in sorted(set(calls)):
            if 0 <= caller < n and 0 <= callee < n:
                callees.setdefault(caller, []).append(callee)
                if caller != callee:
                    called.add(callee)
        names = [f.name for f in functions]
        hook = next((i for i, name in enumerate(names) if name == _ENTER_HOOK), None)
        hooked = {c for c, out in callees.items() if hook in out} if hook is not None else set()

        def instrumented(i: int) -> bool:
            # A function that calls the entry hook is instrumented; when no function
            # does (hooks inlined, other scheme), go by name alone.
            if _NOT_INSTRUMENTED.search(names[i]):
                return False
            return i in hooked if hooked else True

        keep = [i for i in range(n) if instrumented(i)]
        index = {old: new for new, old in enumerate(keep)}
        self.functions = [functions[i] for i in keep]
        self.children: dict[int, list[int]] = {
            index[c]: [index[x] for x in callees.get(c, []) if x in index] for c in keep
        }
        main = next((i for i, name in enumerate(names) if name == "main"), None)
        self.isrs = [
            index[i] for i in keep if _ISR_NAME.search(names[i]) and i not in called and i != main
        ]
        if main is not None:
            firsts = [index[i] for i in callees.get(main, []) if i in index and i != main]
        else:
            firsts = [index[i] for i in keep if i not in called and index[i] not in self.isrs]
        self.boot = [i for i in firsts if _ONE_SHOT.search(self.functions[i].name)]
        self.tasks = [i for i in firsts if i not in self.boot]
        self.isr_helpers = {isr: self.children.get(isr, []) for isr in self.isrs}


@dataclass(frozen=True, slots=True)
class _Template:
    """One main-loop iteration: parallel arrays in return order, times in ticks."""

    addr: np.ndarray
    depth: np.ndarray
    entry: np.ndarray
    exit: np.ndarray
    length: int


class Workload:
    """Endless stream of return records at about ``rate`` records per second of device time.

    Ticks are unwrapped int64 internally; ``take_until`` hands out wire records
    (entry time modulo 2**32) whose exit tick is at most ``limit``.
    """

    def __init__(
        self,
        functions: Sequence[FunctionSpec],
        rate: float,
        timer_freq: int = 1_000_000,
        *,
        seed: int = 1,
        start_tick: int = 0,
        thumb: bool = True,
        n_templates: int = 32,
        max_depth: int = 8,
        calls: Sequence[tuple[int, int]] = (),
        main: bool = False,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        rng = np.random.default_rng(seed)
        self._rng = rng
        graph: _Graph | _StaticGraph | None = _StaticGraph(functions, calls) if calls else None
        if graph is None or not graph.tasks:
            graph = _Graph(functions, rng)
        self.graph = graph
        self._addrs = self._call_sites(graph.functions, rng, thumb)
        # An instrumented main that never returns puts the loop one level down and leaves
        # every stack without its root record.
        base_depth = 1 if main else 0
        raw = [self._render(graph, rng, max_depth, base_depth) for _ in range(n_templates)]
        n_total = sum(len(r[0]) for r in raw)
        units = sum(r[3] for r in raw)
        # Scale abstract time so the whole set averages `rate` records per second.
        ticks_per_unit = (n_total / units) * timer_freq / rate
        self.templates = [self._scale(r, ticks_per_unit) for r in raw]
        # The boot sequence plays once, first; iterations after it are drawn from the loop.
        self._first_loop = 0
        if graph.boot:
            boot = self._render(graph, rng, max_depth, base_depth, boot=True)
            self.templates.insert(0, self._scale(boot, ticks_per_unit))
            self._first_loop = 1
        self._lengths = np.array([t.length for t in self.templates], dtype=np.int64)
        self.base = int(start_tick)
        self._cur = 0
        self._cursor = 0

    @staticmethod
    def _call_sites(
        functions: Sequence[FunctionSpec], rng: np.random.Generator, thumb: bool
    ) -> np.ndarray:
        # What __builtin_return_address(0) gives: an (even) address inside the
        # body, or sometimes the entry itself; bit 0 set as a Thumb LR would have it.
        out = np.empty(len(functions), dtype=np.uint32)
        for i, f in enumerate(functions):
            addr = f.start
            if f.size > 8 and rng.random() < 0.7:
                addr += 2 * int(rng.integers(1, f.size // 2))
            out[i] = (addr | 1) if thumb else addr
        return out

    @staticmethod
    def _render(
        graph: _Graph | _StaticGraph,
        rng: np.random.Generator,
        max_depth: int,
        base: int,
        boot: bool = False,
    ) -> tuple[list[int], list[int], list[tuple[float, float]], float]:
        funcs: list[int] = []
        depths: list[int] = []
        times: list[tuple[float, float]] = []
        clock = [0.0]
        stack: list[int] = []
        # Real code calls what it calls nearly every time; the random graph is sparser.
        p_child = 0.9 if graph.static else 0.6

        def work() -> None:
            clock[0] += float(rng.exponential(1.0)) + 0.05

        def isr(depth: int) -> None:
            fn = int(rng.choice(graph.isrs))
            start = clock[0]
            work()
            for helper in graph.isr_helpers[fn]:
                if depth + 1 <= max_depth:
                    call(helper, depth + 1, allow_isr=False)
            work()
            funcs.append(fn)
            depths.append(depth)
            times.append((start, clock[0]))

        def maybe_isr(depth: int, allow: bool) -> None:
            if allow and graph.isrs and rng.random() < 0.04:
                isr(depth + 1)

        def recurse(child: int) -> bool:
            # Self or cyclic calls: each extra level half as likely, and bounded, so a
            # recursive function cannot blow up the record count.
            level = stack.count(child)
            return level == 0 or (level < _MAX_RECURSION and rng.random() < 0.5**level)

        def call(fn: int, depth: int, allow_isr: bool = True) -> None:
            start = clock[0]
            stack.append(fn)
            work()
            maybe_isr(depth, allow_isr)
            if depth < max_depth:
                for child in graph.children.get(fn, []):
                    if rng.random() < p_child and recurse(child):
                        for _ in range(1 + int(rng.random() < 0.3)):
                            call(child, depth + 1, allow_isr)
                            work()
                            maybe_isr(depth, allow_isr)
            stack.pop()
            work()
            funcs.append(fn)
            depths.append(depth)
            times.append((start, clock[0]))

        if boot:
            for fn in graph.boot:
                call(fn, base)
                work()
        for task in graph.tasks:
            if rng.random() < 0.85:
                call(task, base)
            work()  # the superloop's own code between tasks
            maybe_isr(base - 1, True)
        if not funcs:
            call(graph.tasks[0], base)
        work()
        return funcs, depths, times, clock[0]

    def _scale(
        self, raw: tuple[list[int], list[int], list[tuple[float, float]], float], k: float
    ) -> _Template:
        funcs, depths, times, length = raw
        t = np.asarray(times, dtype=np.float64) * k
        # Rounding absolute times (not durations) keeps exits ordered and children
        # inside their parents.
        entry = np.floor(t[:, 0]).astype(np.int64)
        exit_ = np.floor(t[:, 1]).astype(np.int64)
        total = max(int(np.floor(length * k)), int(exit_.max()) + 1, 1)
        return _Template(
            self._addrs[np.asarray(funcs, dtype=np.int64)],
            np.asarray(depths, dtype=np.uint16),
            entry,
            exit_,
            total,
        )

    def _next_template(self) -> None:
        self.base += self.templates[self._cur].length
        self._cur = int(self._rng.integers(self._first_loop, len(self.templates)))
        self._cursor = 0

    def take_until(self, limit: int) -> np.ndarray:
        """Every record whose (unwrapped) exit tick is ``<= limit``, in return order."""
        parts: list[np.ndarray] = []
        while True:
            tmpl = self.templates[self._cur]
            end = int(np.searchsorted(tmpl.exit, limit - self.base, side="right"))
            if end > self._cursor:
                sl = slice(self._cursor, end)
                out = np.empty(end - self._cursor, dtype=RECORD_DTYPE)
                out["func_addr"] = tmpl.addr[sl]
                out["entry_time"] = (tmpl.entry[sl] + self.base) & TICK_MASK
                out["duration"] = tmpl.exit[sl] - tmpl.entry[sl]
                out["depth"] = tmpl.depth[sl]
                parts.append(out)
                self._cursor = end
            if self._cursor >= len(tmpl.exit) and self.base + tmpl.length <= limit:
                self._next_template()
                continue
            break
        if not parts:
            return np.empty(0, dtype=RECORD_DTYPE)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def skip_until(self, limit: int) -> None:
        """Let the firmware run without recording (profiling off)."""
        mean = float(self._lengths[self._first_loop :].mean())
        gap = limit - self.base
        if gap > 64 * mean:
            # Whole iterations, drawn in bulk, so idle hours cost no Python loop.
            n = int(0.9 * gap / mean) - 32
            picks = self._rng.integers(self._first_loop, len(self.templates), size=n)
            self.base += int(self._lengths[picks].sum()) - self.templates[self._cur].length
            self._next_template()
        self.take_until(limit)
