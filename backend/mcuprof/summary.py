"""What a capture holds: the numbers behind ``mcuprof info``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .capture import CHUNK  # bytes of a capture decoded at a time
from .loss import LossTracker, lost_text
from .profile.span import CaptureSpan
from .protocol import ResponseDecoder
from .symbols.buildid import check_build_id

if TYPE_CHECKING:
    from .profile.load import Progress


def summarize(
    data: bytes, elf_build_id: int | None = None, progress: Progress | None = None
) -> dict[str, Any]:
    view = memoryview(data)
    chunks = (view[start : start + CHUNK] for start in range(0, len(data), CHUNK))
    return summarize_chunks(chunks, len(data), elf_build_id, progress)


def summarize_chunks(
    chunks: Iterable[bytes | memoryview],
    total: int,
    elf_build_id: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """``summarize`` over a capture read piece by piece (``total`` bytes in all): memory
    stays that of one chunk, whatever the capture's length."""
    decoder = ResponseDecoder(batch=True, merge=False)  # arrays, as cut: no joining copy
    span = CaptureSpan()
    loss = LossTracker()
    done = 0
    for chunk in chunks:
        events = decoder.feed(chunk)
        span.feed(events)
        loss.feed(events)
        done += len(chunk)
        if progress is not None:
            progress(min(done, total), total, decoder.stats.records)
    events = decoder.close()
    span.feed(events)
    loss.feed(events)
    stats = decoder.stats
    metadata = span.metadata  # the last one: a device that reboots re-announces itself
    duration_us = span.duration_us or 0.0
    device_id = metadata.elf_build_id if metadata else None
    match = check_build_id(device_id, elf_build_id).match
    out = {
        "metadata": None
        if metadata is None
        else {
            "mcu_clock_hz": metadata.mcu_clock_hz,
            "timer_freq": metadata.timer_freq,
            "elf_build_id": metadata.elf_build_id,
            "fw_version": metadata.fw_version,
        },
        "records": stats.records,
        "packets": dict(stats.packets),
        "crc_errors": stats.crc_errors,
        "malformed": stats.malformed,
        "unsupported_version": stats.unsupported_version,
        "skipped_bytes": stats.skipped_bytes,
        "duration_us": round(duration_us, 3),
        "build_id": {"device": device_id, "elf": elf_build_id, "match": match},
    }
    lost = loss.result(stats)
    if lost is not None:  # only a capture with the device's STATUS packets: added key
        out["loss"] = lost
    return out


def _hex(value: int | None) -> str:
    return "unknown" if value is None else f"0x{value:08x}"


def format_summary(name: str, size: int, s: dict[str, Any], elf_note: str | None = None) -> str:
    """``elf_note`` says why the ELF build ID is missing (no --elf, no .text)."""
    meta = s["metadata"]
    if meta is None:
        device = "no METADATA packet seen (timer assumed 1 MHz)"
    else:
        device = (
            f"firmware {meta['fw_version']!r}, MCU {meta['mcu_clock_hz'] / 1e6:g} MHz, "
            f"timer {meta['timer_freq'] / 1e6:g} MHz, build id {_hex(meta['elf_build_id'])}"
        )
    packets = ", ".join(f"{k} {v:,}" for k, v in s["packets"].items())
    bid = s["build_id"]
    check = check_build_id(bid["device"], bid["elf"], elf_note)
    verdict = check.message  # the mismatch message already shows both IDs
    if check.state == "match":
        verdict += f" (0x{bid['elf']:08x})"
    elif check.state == "unknown":
        verdict += f"; device {_hex(bid['device'])}, elf {_hex(bid['elf'])}"
    lines = [
        f"capture       {name} ({size:,} bytes)",
        f"device        {device}",
        f"records       {s['records']:,}",
        f"duration      {s['duration_us'] / 1e6:.6f} s",
        f"packets       {packets}",
        f"errors        crc {s['crc_errors']:,}, malformed {s['malformed']:,}, "
        f"unsupported version {s['unsupported_version']:,}, "
        f"skipped {s['skipped_bytes']:,} bytes",
        f"build id      {verdict}",
    ]
    if "loss" in s:
        loss = s["loss"]
        lines.append(
            f"lost          {lost_text(loss)} of {loss['captured']:,} captured "
            f"(device overflows {loss['overflows']:,}; "
            f"{len(loss['stretches']):,} stretch(es) with loss)"
        )
    return "\n".join(lines)
