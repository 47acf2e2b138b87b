"""The S12Z-like demo: a small firmware image (functions and a vector table at 24-bit
addresses) and a program flow through it. ``scripts/make-s12z-sample.py`` writes both to
``sample_elfs/``; the tests build the same bytes and compare."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .elfwrite import Section, Symbol, vector_table, write_elf
from .flow import Branch, End, Interrupt, Jump, Start, Step

TEXT_BASE = 0xFE0000
VECTOR_BASE = 0xFFFE00
RTS = 0x05  # S12Z RTS opcode; the image's code bytes are RTS filler, never executed
# name, size: laid out back to back from TEXT_BASE
FUNCTIONS = (
    ("_Startup", 0x40),
    ("main", 0x80),
    ("Gauge_Update", 0x60),
    ("Lookup_Interp", 0x40),
    ("Display_Refresh", 0x80),
    ("Can_Poll", 0x40),
    ("Timer0_ISR", 0x20),
    ("SCI0_ISR", 0x20),
    ("Unimplemented_ISR", 0x10),
)
# vector table offset (the trace's vector byte times 2) -> ISR
VECTORS = {0x1FC: "_Startup", 0x1CC: "Timer0_ISR", 0x0F0: "SCI0_ISR"}
BUS_HZ = 32_000_000


@dataclass(frozen=True)
class Demo:
    addr: dict[str, int]

    def __getitem__(self, name: str) -> int:
        return self.addr[name]


def layout() -> Demo:
    addr, at = {}, TEXT_BASE
    for name, size in FUNCTIONS:
        addr[name] = at
        at += size
    return Demo(addr)


def demo_elf() -> bytes:
    demo = layout()
    size = sum(s for _, s in FUNCTIONS)
    text = Section(".text", TEXT_BASE, bytes([RTS]) * size, executable=True)
    entries = {off: demo[name] for off, name in VECTORS.items()}
    vectors = Section(".vectors", VECTOR_BASE, vector_table(entries, demo["Unimplemented_ISR"]))
    symbols = [Symbol(name, demo[name], size) for name, size in FUNCTIONS]
    symbols.append(Symbol("_vectab", VECTOR_BASE, len(vectors.data), kind="object"))
    return write_elf([text, vectors], symbols)


def vector_of(offset: int) -> int:
    return offset // 2


def demo_flow(loops: int = 60, seed: int = 12, end: str = "tbovf") -> list[Step]:
    """``loops`` turns of the main loop: main calls its tasks through a function-pointer
    table (indexed calls), the tasks branch and return; Timer0 fires about every 2,000
    bus cycles and SCI0 now and then, each returning (RTI) into whatever it interrupted."""
    demo = layout()
    rng = random.Random(seed)
    steps: list[Step] = [Start(demo["_Startup"]), Jump(demo["main"])]
    since_entry = 0  # bus cycles since the previous trace entry
    to_timer = 2000

    def run(cycles: int, where: str) -> None:
        nonlocal since_entry, to_timer
        while cycles:
            spent = min(cycles, to_timer)
            since_entry += spent
            to_timer -= spent
            cycles -= spent
            if to_timer == 0:
                interrupt("Timer0_ISR", where)
                to_timer = 1900 + rng.randrange(200)
            elif rng.random() < 0.002:
                interrupt("SCI0_ISR", where)

    def interrupt(isr: str, where: str) -> None:
        nonlocal since_entry
        offset = next(off for off, name in VECTORS.items() if name == isr)
        steps.append(Interrupt(vector_of(offset), since_entry))
        since_entry = 0
        steps.extend(Branch(rng.random() < 0.5) for _ in range(rng.randrange(1, 4)))
        steps.append(Jump(demo[where] + 0x10 + rng.randrange(0x20)))  # RTI back
        since_entry = 60

    def call(task: str, caller: str, body: int) -> None:
        nonlocal since_entry
        steps.append(Jump(demo[task]))
        since_entry = 0
        for _ in range(body):
            steps.append(Branch(rng.random() < 0.7))
            run(rng.randrange(20, 90), task)
        if task == "Gauge_Update":
            call("Lookup_Interp", task, 4)
        steps.append(Jump(demo[caller] + 0x08 + rng.randrange(0x30)))  # RTS
        since_entry = 0

    for i in range(loops):
        if i:
            steps.append(Branch(True))  # the loop's branch back
        call("Gauge_Update", "main", 6)
        call("Display_Refresh", "main", 12)
        if rng.random() < 0.5:
            call("Can_Poll", "main", 3)
    steps.append(End(end))
    return steps
