"""The one place that knows which protocols a live link speaks, and how each differs.

``resolve`` turns what the user typed (a port and an optional protocol) into a
validated ``Endpoint``; ``LinkOpener.open`` turns an endpoint into a ``Link``
(link/base.py). What differs between the protocols beyond the link itself is a
``LinkProtocol`` object each (``MINIPROFILER``, ``QS``): how a port is described, the
build-ID check, the health section and the counters whose growth is logged, and the
QS monitors (trace log, margins...) that get the decoded QS events.

The live session (web/live/session.py) asks these by the connected link's ``kind`` and never
branches on a protocol itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import UserError
from ..sources import new_source
from ..sources.qs import DEFAULT_TICK_HZ
from ..symbols import check_build_id
from ..symbols.buildid import BuildIdCheck
from .ports import validate_port
from .qs_link import LISTEN_SCHEME, QSLink, is_qs_port, validate_listen
from .session import DeviceSession
from .simulator import SimOptions

SIM_SCHEME = "sim://"
PROTOS = ("miniprofiler", "qs")  # the kinds' names (kinds/)
ALIASES = {"mp": "miniprofiler"}  # an older name, still taken as input
# LiveSession.control() without a link that has a ``control`` part (agreed with the QS
# control panel: the page shows this line).
NO_CONTROL = "QS commands need a QS target: connect one first"
REPLAYING_NO_CONTROL = "a replay is playing: QS commands need a live QS target"

Log = Callable[[str, str], None]  # (level, message)


@dataclass(frozen=True)
class Endpoint:
    """A validated port and the protocol spoken on it ("miniprofiler" or "qs")."""

    port: str
    proto: str


def resolve(text: str, proto: str | None, allow_remote: bool = False) -> Endpoint:
    """``proto`` 'qs' makes a serial or socket:// port a QS target; listen:// and
    sim://?proto=qs ports are QS targets anyway. One-line UserError on bad input."""
    proto = ALIASES.get(proto or "", proto)
    if proto not in (None, "", *PROTOS):
        raise UserError(f"unknown protocol {proto!r}: miniprofiler (or mp) or qs (QS target)")
    qs = proto == "qs" or is_qs_port(text)
    if text.lower().startswith(LISTEN_SCHEME):
        if proto == "miniprofiler":
            raise UserError("listen:// ports are for QS targets")
        validate_listen(text, allow_remote)
        port = text
    else:
        port = validate_port(text)
    if qs and port.startswith(SIM_SCHEME) and not is_qs_port(port):
        port = validate_port(port + ("&" if "?" in port else "?") + "proto=qs")
    return Endpoint(port, "qs" if qs else "miniprofiler")


def simulated_label(port: str | None, proto: str | None) -> str:
    """The simulator's name as the page's device card gives it (serve's start-up line):
    the QS one or the MiniProfiler one."""
    qs = ALIASES.get(proto or "", proto) == "qs" or (port is not None and is_qs_port(port))
    return QSProtocol.simulated if qs else LinkProtocol.simulated


@dataclass(frozen=True)
class SimDefaults:
    """What the server fills into a sim:// URL the page gave (settings and ELF)."""

    elf_path: str | None = None  # the ELF the page resolves names with, unless uploaded
    cli_port: str | None = None  # the port given on the command line (may name an ELF)
    rate: int | None = None
    baud: int | None = None


def sim_url(port: str, defaults: SimDefaults) -> str:
    """Fill in the simulator's defaults, and keep file paths from the browser out."""
    if not port.startswith(SIM_SCHEME):
        return port
    query = port.partition("?")[2]
    try:
        options = SimOptions.from_query(query)
    except ValueError as exc:
        raise UserError(f"{port}: {exc}") from None
    if options.proto == "qs":
        return port  # the simulated QP target runs no ELF
    if options.elf not in (None, "default", "none") and port != defaults.cli_port:
        raise UserError("sim:// elf= paths can only be given on the command line")
    if options.elf is None and defaults.elf_path is not None:
        # The simulated firmware runs the ELF the page resolves symbols with.
        options.elf = defaults.elf_path
    if defaults.rate and "rate=" not in query:
        options.rate = float(defaults.rate)
    if options.baud is None and defaults.baud:
        # A paced 115200-baud link would overflow at the default rate: the demo
        # link runs fast unless the URL says otherwise.
        options.baud = defaults.baud
    text = options.to_query()
    return SIM_SCHEME + ("?" + text if text else "")


class LinkProtocol:
    """How one protocol differs, beyond its link. The base is the MiniProfiler's."""

    proto = "miniprofiler"  # as resolve() gives it
    kind = "miniprofiler"
    checks_build_id = True  # the device reports the build ID of its firmware
    health_key: str | None = None  # a section of its own in the health figures
    simulated = "Simulated device"
    # Why a command its link lacks (``device_control`` None) cannot run.
    no_buffers = "this target has no buffers to reset"
    no_status = "this target reports no status: see the link health"
    # Link counters whose growth is logged as a warning (CRC errors are logged by the
    # link's status poller): name -> message, given the growth and the total.
    logged_counters: ClassVar[dict[str, str]] = {
        "malformed": "{grown} malformed packet(s) dropped, {total} in all",
    }

    def build_check(self, device_build_id: bytes | None, elf_build_id: Any) -> BuildIdCheck:
        return check_build_id(device_build_id, elf_build_id)

    def health(self, stats: Any, link: Any) -> dict[str, Any] | None:
        return None

    def restarted(self, log: Log) -> None:
        """The profile starts again (connect, Start, replay): nothing to tell."""


class QSProtocol(LinkProtocol):
    proto = "qs"
    kind = "qs"
    checks_build_id = False  # names come from the target's dictionaries
    health_key = "qs"
    simulated = "Simulated QS target"
    no_buffers = "a QS target has no buffers to reset: use Reset target"
    no_status = "a QS target reports no status: see the link health"
    logged_counters: ClassVar[dict[str, str]] = {
        **LinkProtocol.logged_counters,
        "bad_frames": "{grown} bad QS frame(s) dropped, {total} in all",
        "discontinuities": "{grown} QS sequence discontinuity(ies): frames lost on the "
        "target or the link ({total} in all)",
    }
    HEALTH = ("frames", "bad_frames", "discontinuities", "rtc_steps", "unfinished_steps")
    HEALTH += ("names_lumped", "dictionary_overflow")

    def __init__(self) -> None:
        # QS monitors: each gets ``qs_events(events)`` for every batch of decoded QS
        # events in stream order, and ``qs_reset()`` whenever the profile starts again.
        # qs_events runs on the link's reader thread: it must be quick and not block.
        self.listeners: list[Any] = []

    def build_check(self, device_build_id: bytes | None, elf_build_id: Any) -> BuildIdCheck:
        return BuildIdCheck("unknown", None, None, "QS target: names from its dictionaries")

    def health(self, stats: Any, link: Any) -> dict[str, Any] | None:
        """QS link health: frames, bad frames, sequence discontinuities (lost frames), and
        the other bounded losses (docs/limits.md): idle drops, the log's cut texts."""
        out = {k: int(getattr(stats, k, 0)) for k in self.HEALTH}
        out["idle_dropped"] = int(getattr(link, "idle_dropped", 0))
        for monitor in list(self.listeners):
            out |= getattr(monitor, "bounded_losses", dict)()
            out |= getattr(monitor, "health_figures", dict)()  # qs/watch.py
        return out

    def restarted(self, log: Log) -> None:
        self._each("qs_reset", (), log)

    def _each(self, method: str, args: tuple[Any, ...], log: Log) -> None:
        for monitor in list(self.listeners):
            try:
                getattr(monitor, method)(*args)
            except Exception as exc:  # a monitor must not cost the capture
                log("error", f"QS monitor failed: {exc!r}")


class _Relay:
    """What every link calls: the live session's listener, plus the QS events handed to
    the QS monitors (a MiniProfiler link never sends any)."""

    def __init__(self, listener: Any, protocol: QSProtocol) -> None:
        self.on_raw = listener.on_raw
        self.on_metadata = listener.on_metadata
        self.on_records = listener.on_records
        self.on_status = listener.on_status
        self.on_state = listener.on_state
        self.on_log = listener.on_log
        self._protocol = protocol

    def on_qs_events(self, events: list[Any]) -> None:
        self._protocol._each("qs_events", (events,), self.on_log)


class LinkOpener:
    """The protocols of one live session, and the factories of their links."""

    def __init__(
        self,
        *,
        device_factory: Callable[..., Any] = DeviceSession,
        qs_factory: Callable[..., Any] = QSLink,
        tick_hz: int = DEFAULT_TICK_HZ,
        allow_remote: bool = False,
    ) -> None:
        self.device_factory = device_factory
        self.qs_factory = qs_factory
        self.tick_hz = tick_hz
        self.allow_remote = allow_remote
        self.miniprofiler = LinkProtocol()
        self.qs = QSProtocol()
        self._by_kind = {p.kind: p for p in (self.miniprofiler, self.qs)}
        self.default = self.miniprofiler

    @classmethod
    def for_settings(cls, settings: Any, device_factory: Callable[..., Any]) -> LinkOpener:
        """From the server's settings (web/settings.py): QS tick rate, --allow-remote."""
        return cls(
            device_factory=device_factory,
            tick_hz=settings.qs_tick_hz,
            allow_remote=settings.allow_remote,
        )

    def new_source(self, kind: str) -> Any:
        """The decoder of a stored capture of ``kind`` (sources.new_source)."""
        return new_source(kind, self.tick_hz)

    def protocol(self, kind: str | None) -> LinkProtocol:
        return self._by_kind.get(kind or "", self.default)

    def resolve(self, text: str, proto: str | None) -> Endpoint:
        return resolve(text, proto, self.allow_remote)

    def listener(self, listener: Any) -> Any:
        """What to give every link as its listener (also a replay's, made elsewhere)."""
        return _Relay(listener, self.qs)

    def open(self, endpoint: Endpoint, url: str, baud: int, listener: Any) -> Any:
        """A new, unconnected link to ``url`` (the endpoint's port with the simulator's
        defaults filled in); ``listener`` is one ``listener()`` made."""
        if endpoint.proto == "qs":
            return self.qs_factory(
                url, baud, listener, tick_hz=self.tick_hz, allow_remote=self.allow_remote
            )
        return self.device_factory(url, baud, listener)

    def health_sections(self, kind: str, link: Any) -> dict[str, Any]:
        """Each protocol's section of the health figures: the connected one's, else None."""
        stats = link.stats if link is not None else None
        out: dict[str, Any] = {}
        for p in self._by_kind.values():
            if p.health_key is not None:
                mine = p.kind == kind and stats is not None
                out[p.health_key] = p.health(stats, link) if mine else None
        return out

    def describe_port(self, port: str | None) -> str:
        if port is None:
            return ""
        if port.startswith(SIM_SCHEME):
            return self.qs.simulated if is_qs_port(port) else self.miniprofiler.simulated
        return port

    @staticmethod
    def describe_listening(address: str) -> str:
        return f"QS target via listen://{address}"  # the port actually bound


def close_quietly(link: Any) -> None:
    """Close a link that failed or is being replaced; it is gone either way."""
    with contextlib.suppress(Exception):
        link.close()
