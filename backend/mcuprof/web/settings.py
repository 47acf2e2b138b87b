"""Every knob of the web server in one place, filled by ``mcuprof serve`` or by tests."""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..link.qs_udp_access import UdpAccess, udp_access
from ..paths import default_elf
from ..store.location import resolve_data_dir

MAX_ELF_BYTES = 64 * 1024 * 1024
SIM_PORT = "sim://"
MAX_TICK_HZ = 10**12  # QS tick rates taken (--qs-tick-hz, the page's setting)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def default_data_dir() -> Path:
    # One resolution rule for the CLI, the store and the server.
    return resolve_data_dir(None)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class Settings:
    host: str = "127.0.0.1"
    http_port: int = 8000
    port: str | None = None  # device port or URL; None means the simulated device
    baud: int = 115200
    elf: Path | None = None  # None means the bundled sample ELF
    allow_remote: bool = False
    token: str | None = None  # required on every route when set
    data_dir: Path = field(default_factory=default_data_dir)
    store_url: str | None = None  # postgresql://...: the team store (store/pg.py)
    max_elf_bytes: int = MAX_ELF_BYTES
    elf_parse_timeout_s: float = 10.0
    request_timeout_s: float = 10.0  # a client silent this long mid-request is dropped
    # Live updates a second: a record waits for the next one, so this bounds record ->
    # pixel (issue 34: p95 <= 50 ms at 50,000 records/s); the flame build paces itself
    # (publisher.py) and the page's "drawn" reports stay under WS_MAX_MESSAGES_PER_S.
    update_hz: float = 60.0
    flame_max_nodes: int = 3000
    tree_max_nodes: int = 5000
    autoconnect: bool = True
    sim_rate: int | None = None  # records/s for the simulator; None keeps its default
    sim_baud: int | None = 4_000_000  # pace of the simulated link unless sim://?baud= says
    qs_tick_hz: int = 1_000_000  # QS timestamp ticks per second (QS_onGetTime's clock)
    # How qs_tick_hz was set: "assumed" (the default, nobody said), "given" (--qs-tick-hz),
    # "page" (the page's setting) or "estimate" (qs/tickrate.py's, applied).
    qs_tick_source: str = "assumed"
    proto: str | None = None  # "qs": ``port`` is a QS target (serial or socket://)
    # QSPY's front-end UDP port beside the dashboard (0: any), or "HOST:PORT"; on
    # ``host`` unless it names another; ``qspy_udp_allow``: who may attach (ADDR,...).
    qspy_udp: int | str | None = None
    qspy_udp_allow: str | None = None
    budgets: tuple[Any, ...] = ()  # profile.budget.Budget: serve --budgets, checked live
    budgets_file: str | None = None
    tags: dict[str, str] = field(default_factory=dict)  # given to every stored capture

    def __post_init__(self) -> None:
        if not is_loopback(self.host) and not self.allow_remote:
            raise UserError(
                f"refusing to serve on non-loopback address {self.host!r}: "
                "the dashboard controls hardware; add --allow-remote to require a token"
            )
        if self.allow_remote and not self.token:
            self.token = secrets.token_urlsafe(24)

    @property
    def simulated(self) -> bool:
        return self.port is None or self.port.startswith(SIM_PORT)

    @property
    def elf_path(self) -> Path:
        return self.elf if self.elf is not None else default_elf()

    @property
    def upload_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def columns_dir(self) -> Path:
        """Where the live profile keeps its records (unnamed files, see profile/columns.py)."""
        return self.data_dir / "columns"

    def allowed_hosts(self) -> set[str]:
        """Host header values accepted: loopback names with our port (DNS rebinding guard)."""
        names = set(LOOPBACK_NAMES)
        if self.allow_remote and self.host not in ("0.0.0.0", "::"):
            names.add(f"[{self.host}]" if ":" in self.host else self.host)
        return {f"{name}:{self.http_port}" for name in names}

    @property
    def any_host(self) -> bool:
        # Bound to every interface in token mode: the token, not the name, is the guard.
        return self.allow_remote and self.host in ("0.0.0.0", "::")

    def qspy_udp_access(self) -> UdpAccess | None:
        """Where the front-end port binds and whom it admits; UserError when refused."""
        if self.qspy_udp is None:
            return None
        return udp_access(
            str(self.qspy_udp), self.host, self.allow_remote, self.qspy_udp_allow, "--qspy-udp"
        )

    def device_port(self) -> str:
        if self.port is not None:
            return self.port
        return SIM_PORT
