"""Program flows and the trace the S12Z DBG module would write for them.

A flow is what the CPU did, in order: where it started, each direct branch (taken or
not), each indirect jump or return (its destination), each interrupt (its vector and
the bus cycles since the previous trace entry), PTW errors, and how profiling ended.
``encode_flow`` writes the line stream; ``flow_of`` reads a decoded stream back into
the same steps, which is what the round-trip tests compare.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from ..protocol.s12z import (
    ADDRESS_MASK,
    COF_BITS,
    TBOVF,
    TERM,
    TSOVF,
    TSOVF_CYCLES,
    BadLine,
    LineEvent,
    LineFormat,
    Lines,
)


@dataclass(frozen=True, slots=True)
class Start:
    pc: int


@dataclass(frozen=True, slots=True)
class Branch:
    taken: bool


@dataclass(frozen=True, slots=True)
class Jump:
    """An indexed jump, indirect call or return: the CPU continued at ``dest``."""

    dest: int


@dataclass(frozen=True, slots=True)
class Interrupt:
    vector: int  # vector address bits 8:1
    cycles: int  # bus cycles since the previous trace entry, < 131,072


@dataclass(frozen=True, slots=True)
class Error:
    code: int  # PTW INFO[7:4]


@dataclass(frozen=True, slots=True)
class End:
    kind: str  # "term" (disarmed) or "tbovf" (trace buffer overflow: data lost)


Step = Start | Branch | Jump | Interrupt | Error | End

MAX_CYCLES = 2 * TSOVF_CYCLES - 1


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()
        self.last_info_at = -1
        self.cofs: list[bool] = []

    def line(self, info: int, body: bytes = b"") -> None:
        self.last_info_at = len(self.out)
        self.out.append(info)
        self.out += body

    def cof_word(self) -> bytes:
        word = 1 << len(self.cofs)  # the stop bit
        for i, taken in enumerate(self.cofs):
            if taken:
                word |= 1 << (len(self.cofs) - 1 - i)  # oldest just below the stop bit
        self.cofs = []
        return struct.pack("<I", word)


def encode_flow(steps: Iterable[Step]) -> bytes:
    """The PDO byte stream for ``steps``. A trace line is written at each indirect COF
    and whenever a 32nd direct COF arrives with 31 pending (a PTHF line), so direct
    COFs still pending at an ``End`` or an ``Error`` cannot be written: ValueError."""
    w = _Writer()
    ended = False
    for step in steps:
        if ended:
            raise ValueError("steps after End: profiling has stopped")
        if isinstance(step, Branch):
            if len(w.cofs) == COF_BITS:
                w.line(LineFormat.PTHF, w.cof_word())
            w.cofs.append(bool(step.taken))
        elif isinstance(step, Jump):
            _check_address(step.dest)
            w.line(LineFormat.PTIB, w.cof_word() + step.dest.to_bytes(3, "little"))
        elif isinstance(step, Interrupt):
            if not 0 <= step.vector <= 0xFF:
                raise ValueError(f"vector {step.vector} does not fit a byte")
            if not 0 <= step.cycles <= MAX_CYCLES:
                raise ValueError(f"{step.cycles} cycles do not fit one PTVB line")
            info = LineFormat.PTVB | (TSOVF if step.cycles >= TSOVF_CYCLES else 0)
            stamp = step.cycles % TSOVF_CYCLES
            w.line(info, w.cof_word() + bytes([step.vector]) + struct.pack("<H", stamp))
        elif isinstance(step, Start | Error | End):
            if w.cofs:
                raise ValueError(
                    f"{len(w.cofs)} direct COFs pending before {type(step).__name__}: "
                    "a line is only written at an indirect COF or after 31 COFs"
                )
            if isinstance(step, Start):
                _check_address(step.pc)
                w.line(LineFormat.PTS, step.pc.to_bytes(3, "little"))
            elif isinstance(step, Error):
                if not 0 <= step.code <= 15:
                    raise ValueError(f"PTW error code {step.code} does not fit 4 bits")
                w.line(LineFormat.PTW | step.code << 4)
            else:
                if step.kind not in ("term", "tbovf"):
                    raise ValueError(f"unknown end {step.kind!r}: 'term' or 'tbovf'")
                if w.last_info_at < 0 or w.out[w.last_info_at] & 0x0F == LineFormat.PTW:
                    raise ValueError("End needs a preceding non-PTW line to carry its flag")
                w.out[w.last_info_at] |= TERM if step.kind == "term" else TBOVF
                ended = True
        else:
            raise TypeError(f"not a flow step: {step!r}")
    if w.cofs:
        if len(w.cofs) == COF_BITS:
            w.line(LineFormat.PTHF, w.cof_word())
        else:
            raise ValueError(f"{len(w.cofs)} direct COFs pending at the end of the flow")
    return bytes(w.out)


def _check_address(addr: int) -> None:
    if not 0 <= addr <= ADDRESS_MASK:
        raise ValueError(f"address 0x{addr:x} does not fit 24 bits")


def flow_of(events: Iterable[LineEvent]) -> list[Step]:
    """The steps a decoded stream describes (bad lines are skipped: they hold none)."""
    steps: list[Step] = []
    for event in events:
        if isinstance(event, BadLine):
            continue
        assert isinstance(event, Lines)
        for line in event:
            if line.format == LineFormat.PTS:
                steps.append(Start(line.address or 0))
            elif line.format == LineFormat.PTW:
                steps.append(Error(line.error or 0))
                continue
            steps.extend(Branch(t) for t in line.cofs)
            if line.format == LineFormat.PTIB:
                steps.append(Jump(line.address or 0))
            elif line.format == LineFormat.PTVB:
                steps.append(Interrupt(line.vector or 0, line.cycles))
            if line.tbovf or line.term:
                steps.append(End("tbovf" if line.tbovf else "term"))
    return steps
