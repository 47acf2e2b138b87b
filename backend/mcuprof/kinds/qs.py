"""QS (QP/Spy): run-to-completion steps of a QP target are the profile's records; names
come from the target's dictionaries, not from an ELF. Its protocol: protocol/qs/,
sources/qs.py, link/qs_link.py (QSLink), link/qs_replay.py; on the host, qs/."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .base import PROFILE, QS_MONITOR, QS_RX, Kind


class QS(Kind):
    name = "qs"
    label = "QS"
    simulator_label = "Simulated QS target"
    frames_are = "RTC steps"
    views = (PROFILE, QS_MONITOR)
    controls = (QS_RX,)
    live = True
    names_from_elf = False
    ticks_assumed = True
    detectable = True
    nothing_found = "QS capture: no valid frame"

    def new_source(self, tick_hz: int | None = None) -> Any:
        from ..sources import new_source

        return new_source(self.name, tick_hz)

    def link_factory(self) -> Callable[..., Any]:
        from ..link.qs_link import QSLink

        return QSLink

    def load_stored(
        self,
        store: Any,
        sid: int,
        symbols: Any,
        tick_hz: int | None = None,
        progress: Callable[[int, int, int], None] | None = None,
    ) -> Any:
        from ..sources import load_stream

        # Read a piece at a time (the pieces ``load`` cuts the whole bytes into).
        size = store.raw_size(sid)
        chunks = store.raw_chunks(sid)
        return load_stream(
            self.name, chunks, size, symbols, progress=progress, tick_hz=tick_hz
        ).profile

    def simulated(self, firmware: Any, device: Any, rate: float) -> str:
        return "a QP target speaking QS (dining philosophers)"

    def replay(
        self,
        recording: Any,
        speed: float | None,
        *,
        metadata: Any = None,
        tick_hz: int | None = None,
        throttle: Callable[[], bool] | None = None,
    ) -> tuple[Any, Callable[..., Any]]:
        from ..link.qs_replay import QSReplayDevice, qs_replay_factory
        from ..sources.qs import DEFAULT_TICK_HZ

        hz = tick_hz or DEFAULT_TICK_HZ
        device = QSReplayDevice(recording, speed, hz, clock=time.monotonic)
        return device, qs_replay_factory(device, speed, hz)


KIND = QS()
