from __future__ import annotations

import random

import numpy as np
import pytest

from mcuprof.profile import Profile
from mcuprof.profile.synth import addresses, generate
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable

# Names that need escaping everywhere: <, >, &, quotes, and a static pair sharing a name.
NAMES = [
    "main",
    "int app::clamp<int>(int, int, int)",
    "std::map<int, char const*, std::less<int> >::operator[](int&&)",
    "app::Quote::say(char const*) \"quoted\" & 'single'",
    "bool operator< <app::Key>(app::Key const&, app::Key const&)",
    "TIM2_IRQHandler",
    "helper",
    "helper",
    "uart_send",
]


def _table() -> SymbolTable:
    funcs = []
    for i, name in enumerate(NAMES):
        static = name == "helper"
        funcs.append(
            Function(
                name=name,
                raw_name=f"sym{i}",
                start=0x0800_0000 + i * 0x100,
                end=0x0800_0100 + i * 0x100,
                file=f"src/file{i}.cpp" if i != 8 else None,
                line=20 + i if i != 8 else None,
                is_static=static,
            )
        )
    return SymbolTable.from_functions(funcs)


@pytest.fixture
def table() -> SymbolTable:
    return _table()


@pytest.fixture
def profile(table: SymbolTable) -> Profile:
    """A simulated capture with ISRs, recursion, an orphan and an unresolved address."""
    rng = random.Random(5)
    ranges = [(f.start, f.end) for f in table.functions]
    trace = generate(
        rng, len(ranges), 500, isr_funcs=(5,), isr_rate=0.3, recursive_rate=0.2, max_gap=30
    )
    recs = trace.records(addresses(rng, trace, ranges, style="mixed", thumb=True))
    p = Profile(table)
    p.add(recs)
    end = int(trace.entry.max() + trace.duration.max()) + 100
    extra = np.array(
        [(0x0900_0001, end, 40, 2), (0x0800_1001, end + 50, 30, 0)], RECORD_DTYPE
    )  # an orphan, then an address in no function
    p.add(extra)
    return p


@pytest.fixture
def frame_names(profile: Profile) -> set[str]:
    names = set()
    for stack in profile.folded():
        names.update(stack.split(";"))
    return names
