"""What every kind of capture says about itself (``Kind``): the one place the rest of
the code asks instead of comparing a kind's name. A kind's protocol code lives below
(``protocol/``, ``sources/``, ``link/``); the kind object only points at it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import UserError

# What a stored session of a kind can be opened as (``Kind.views``).
PROFILE = "profile"  # a Profile: flame graph, timeline, tables, exports, compare, replay
QS_MONITOR = "qs-monitor"  # the QS tab's monitor (trace log, margins, sequence)
S12Z_REPORT = "s12z-report"  # the S12Z tab's trace analysis

# Controls a live link of a kind offers (``Kind.controls``).
DEVICE_CONTROL = "device-control"  # buffers, status, config (link.base.DeviceControl)
QS_RX = "qs-rx"  # QS-RX commands to the target


class Kind:
    """One kind of capture. Subclasses set the attributes and override what applies;
    the defaults are those of a kind that is stored but not decoded into a profile."""

    name = ""  # the one name: stored in sessions, given by --kind, shown in the API
    label = ""  # for people: "MiniProfiler", "QS", "S12Z"
    views: tuple[str, ...] = ()
    controls: tuple[str, ...] = ()
    live = False  # a live link reads it from a target (``link_factory``)
    names_from_elf = False  # its frames are addresses named with the firmware's ELF
    detectable = False  # told from the bytes by ``kinds.detect``
    # Its stream carries the device's counters (STATUS): a stored session keeps its loss.
    counts_loss = False
    # Its timestamps count ticks of a rate the stream does not say (QS: --qs-tick-hz).
    ticks_assumed = False
    # The one-line reason an import of it found nothing (after "not a ").
    nothing_found = "capture: nothing recognised"
    # What the page calls the built-in simulator of this kind, and what its flame
    # graph's frames are (the coverage line: "x% of the time inside ...").
    simulator_label = "Simulated device"
    frames_are = "instrumented functions"

    @property
    def profiles(self) -> bool:
        return PROFILE in self.views

    def offers(self, view: str) -> bool:
        return view in self.views

    def new_source(self, tick_hz: int | None = None) -> Any:
        """The decoder of a whole capture of this kind (sources/)."""
        raise UserError(f"{self.label} captures do not decode to a profile")

    def link_factory(self) -> Callable[..., Any]:
        """The live ``Link`` class (link/base.py): ``factory(url, baud, listener, ...)``."""
        raise NotImplementedError(f"{self.name} has no live link")

    def load_stored(
        self,
        store: Any,
        sid: int,
        symbols: Any,
        tick_hz: int | None = None,
        progress: Callable[[int, int, int], None] | None = None,
    ) -> Any:
        """A stored session's Profile (``store`` a store.Store); ``progress(bytes done,
        bytes in all, records so far)`` as it loads (it may raise to cancel)."""
        raise NotImplementedError(f"{self.name} sessions are not profiles")

    def count_stored(self, store: Any, sid: int) -> dict[str, Any] | None:
        """A stored session's counts, read from its bytes; None when they were taken as
        it was stored (SessionInfo.link_stats)."""
        return None

    def replay(
        self,
        recording: Any,
        speed: float | None,
        *,
        metadata: Any = None,
        tick_hz: int | None = None,
        throttle: Callable[[], bool] | None = None,
    ) -> tuple[Any, Callable[..., Any]]:
        """The replay device of a stored session (a path, or link.replay.Stream: bytes as
        the device sent them) and the ``session_factory`` for
        LiveSession.replay that reads it (link/replay.py)."""
        raise NotImplementedError(f"{self.name} sessions cannot be replayed")

    def simulated(self, firmware: Any, device: Any, rate: float) -> str:
        """What `mcuprof simulate` says it simulates (link/simulator.py)."""
        return f"a {self.label} target"

    def capture_lines(self, capture: dict[str, Any]) -> list[str]:
        """`mcuprof sessions show`'s lines for the capture's counts."""
        return [
            f"records     {capture['records']:,} over "
            + (
                "- s"
                if capture.get("duration_us") is None
                else f"{capture['duration_us'] / 1e6:.6f} s"
            ),
            f"link        crc errors {capture.get('crc_errors', 0):,}, malformed "
            f"{capture['malformed']:,}, skipped {capture.get('skipped_bytes', 0):,} bytes",
        ]

    def describe(self) -> dict[str, Any]:
        """What the page needs to know of this kind (/api/kinds), so that it asks the
        kind, as the backend does, instead of comparing its name."""
        return {
            "name": self.name,
            "label": self.label,
            "views": list(self.views),
            "controls": list(self.controls),
            "live": self.live,
            "names_from_elf": self.names_from_elf,
            "counts_loss": self.counts_loss,
            "ticks_assumed": self.ticks_assumed,
            "simulator_label": self.simulator_label,
            "frames_are": self.frames_are,
        }

    def __repr__(self) -> str:
        return f"<kind {self.name}>"
