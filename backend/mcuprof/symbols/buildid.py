"""Does the ELF belong to the firmware that ran? Compare METADATA's elf_build_id with the
CRC-32 of the ELF's .text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class BuildIdCheck:
    state: Literal["match", "mismatch", "unknown"]
    device: int | None
    elf: int | None
    message: str

    @property
    def match(self) -> bool | None:
        """True/False, or None when unknown (the shape of ``mcuprof info --json``)."""
        return None if self.state == "unknown" else self.state == "match"


def check_build_id(
    device: int | None, elf: int | None, elf_note: str | None = None
) -> BuildIdCheck:
    """``elf_note`` says why ``elf`` is None (e.g. "ELF has no .text section")."""
    if device is not None and elf is not None:
        if device == elf:
            return BuildIdCheck("match", device, elf, "ELF matches firmware")
        return BuildIdCheck(
            "mismatch",
            device,
            elf,
            f"ELF does not match the firmware (device 0x{device:08x}, ELF 0x{elf:08x})",
        )
    reasons = []
    if device is None:
        reasons.append("no METADATA from the device")
    if elf is None:
        reasons.append(elf_note or "no ELF given")
    return BuildIdCheck("unknown", device, elf, f"build ID unknown ({'; '.join(reasons)})")
