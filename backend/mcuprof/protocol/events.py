"""Typed, frozen events produced by the decoders."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .constants import RECORD_DTYPE, Command


@dataclass(frozen=True, slots=True)
class Ack:
    pass


@dataclass(frozen=True, slots=True)
class Nack:
    pass


@dataclass(frozen=True, slots=True)
class Metadata:
    mcu_clock_hz: int
    timer_freq: int
    elf_build_id: int
    fw_version: str


@dataclass(frozen=True, slots=True)
class Status:
    is_profiling: bool
    buffer_overflows: int
    records_captured: int
    buffer_usage_percent: int


@dataclass(frozen=True, slots=True, eq=False)
class ProfileData:
    """One version-1 PROFILE_DATA packet (other versions are skipped, never decoded);
    ``records`` is a read-only array of RECORD_DTYPE."""

    records: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return len(self.records)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProfileData):
            return NotImplemented
        return np.array_equal(self.records, other.records)

    def __hash__(self) -> int:
        return hash(self.records.tobytes())

    def __repr__(self) -> str:
        return f"ProfileData(records=<{len(self.records)} records>)"


ResponseEvent = Ack | Nack | Metadata | Status | ProfileData


@dataclass(frozen=True, slots=True)
class CommandPacket:
    """A well-formed host command as the device sees it."""

    command: Command
    payload: bytes = b""


@dataclass(frozen=True, slots=True)
class BadCommand:
    """A 12-byte command the device must NACK: bad checksum, unknown code or bad length."""

    reason: str
    raw: bytes


CommandEvent = CommandPacket | BadCommand


def empty_records() -> np.ndarray:
    return np.empty(0, dtype=RECORD_DTYPE)
