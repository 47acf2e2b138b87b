"""MiniProfiler: the device's PROFILE_DATA records are the profile's records; frames are
addresses, named with the firmware's ELF. Its protocol: protocol/ (top level),
sources/miniprofiler.py, link/session.py (DeviceSession), link/replay.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import DEVICE_CONTROL, PROFILE, Kind

# A stored session up to this size is loaded with its records in RAM (about 2.3M records,
# some 150 MB while loading): one merge at the end, three times faster than columns on
# disk, which is what keeps `sessions import` (and its summary) at 2M records/s. A larger
# one spills its columns to the store's columns/ so that a session larger than RAM loads.
IN_RAM_BYTES = 32 * 1024 * 1024


class MiniProfiler(Kind):
    name = "miniprofiler"
    label = "MiniProfiler"
    views = (PROFILE,)
    controls = (DEVICE_CONTROL,)
    live = True
    names_from_elf = True
    counts_loss = True
    detectable = True
    nothing_found = "MiniProfiler capture: no valid packet"

    def new_source(self, tick_hz: int | None = None) -> Any:
        from ..sources import new_source

        return new_source(self.name, tick_hz)

    def link_factory(self) -> Callable[..., Any]:
        from ..link import DeviceSession

        return DeviceSession

    def load_stored(
        self,
        store: Any,
        sid: int,
        symbols: Any,
        tick_hz: int | None = None,
        progress: Callable[[int, int, int], None] | None = None,
    ) -> Any:
        """The session decoded into a profile, read from the store a few MB at a time
        (``raw_chunks``); past IN_RAM_BYTES its records live on disk (profile/columns.py),
        so a session larger than RAM can be compared."""
        from ..capture import CHUNK
        from ..profile.columns import Spill
        from ..profile.load import load_chunks

        size = store.raw_size(sid)  # before reading: a recording only grows
        spill = Spill(store.data_dir / "columns") if size > IN_RAM_BYTES else None
        # CHUNK bytes (~300k records) per add, as the capture's pieces come.
        chunks = store.raw_chunks(sid, CHUNK)
        return load_chunks(chunks, size, symbols, progress, spill, CHUNK).profile

    def count_stored(self, store: Any, sid: int) -> dict[str, Any] | None:
        from ..summary import summarize_chunks

        return summarize_chunks(store.raw_chunks(sid), 0)

    def simulated(self, firmware: Any, device: Any, rate: float) -> str:
        return (
            f"{firmware.source} ({len(firmware.functions)} functions, "
            f"build id 0x{device.metadata.elf_build_id:08x}) at {rate:g} records/s"
        )

    def replay(
        self,
        recording: Any,
        speed: float | None,
        *,
        metadata: Any = None,
        tick_hz: int | None = None,
        throttle: Callable[[], bool] | None = None,
    ) -> tuple[Any, Callable[..., Any]]:
        from ..link.replay import ReplayDevice, replay_factory

        device = ReplayDevice(recording, speed, metadata=metadata)
        if throttle is not None:
            device.throttle = throttle
        return device, replay_factory(device, speed, metadata)


KIND = MiniProfiler()
