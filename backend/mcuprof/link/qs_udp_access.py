"""Who may reach the QSPY front-end port: one door with the page's.

The port binds the address the dashboard binds (``serve --host``), or the target's
listen:// address for ``mcuprof qs listen --udp``, unless ``HOST:PORT`` names another.
QSPY's protocol has no authentication, so an address other machines can reach needs
``--allow-remote`` and a list of the addresses that may attach (``--qspy-udp-allow``,
``qs listen --udp-allow``); datagrams from anyone else are dropped unanswered, and
counted.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ..errors import UserError

# Entries in one allow-list (addresses or networks): a list, not a firewall
# (docs/limits.md).
MAX_ALLOW = 64
UNAUTHENTICATED = (
    "QSPY front ends are unauthenticated: any process at an allowed address can drive "
    "the target and read its trace"
)

PORT_DIGITS = re.compile(r"[0-9]{1,5}")
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class UdpAccess:
    host: str
    port: int
    allow: tuple[IpNetwork, ...] = ()  # empty: anyone who can reach ``host``

    @property
    def remote(self) -> bool:
        return not ipaddress.ip_address(self.host).is_loopback

    def admits(self, peer: str) -> bool:
        if not self.allow:
            return True
        try:
            ip = ipaddress.ip_address(peer.split("%", 1)[0])
        except ValueError:
            return False
        mapped = getattr(ip, "ipv4_mapped", None)  # a v4 peer on a v6 socket
        ip = mapped or ip
        return any(ip in net for net in self.allow if net.version == ip.version)

    def warning(self) -> str | None:
        """The line to print when the port can be reached from other machines."""
        if not self.remote:
            return None
        who = ", ".join(str(n) for n in self.allow)
        return f"warning: {UNAUTHENTICATED} (UDP {self.host}:{self.port}; allowed: {who})"


def udp_access(
    text: str, default_host: str, allow_remote: bool, allow: str | None, option: str
) -> UdpAccess:
    """``PORT`` or ``HOST:PORT`` (``[V6]:PORT``) -> where to bind and whom to admit;
    UserError (one line, naming ``option``) when refused."""
    host, port = _split(text.strip(), default_host, option)
    text = _shown(text.strip())
    networks = parse_allow(allow, option + "-allow") if allow is not None else ()
    access = UdpAccess(host, port, networks)
    if access.remote and not allow_remote:
        raise UserError(
            f"{option} {text}: refusing UDP on {host} (reachable from other machines); "
            "use 127.0.0.1, or add --allow-remote"
        )
    if access.remote and not networks:
        raise UserError(
            f"{option} {text}: {host} is reachable from other machines, and QSPY front ends "
            f"are unauthenticated: name who may attach with {option}-allow ADDR,..."
        )
    return access


def _split(raw: str, default_host: str, option: str) -> tuple[str, int]:
    text = _shown(raw)
    if any(ord(c) < 32 for c in raw):
        raise UserError(f"{option}: control characters in the address")
    host, sep, port_text = raw.rpartition(":")
    if not sep:
        host, port_text = default_host, raw
    host = host.strip("[]") or default_host
    if host == "localhost":
        host = "127.0.0.1"
    if not PORT_DIGITS.fullmatch(port_text) or not 0 <= int(port_text) <= 65535:
        raise UserError(f"{option} {text}: a UDP port from 0 to 65535, or HOST:PORT")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise UserError(f"{option} {text}: bind an IP address, not {_shown(host)!r}") from None
    return str(ip), int(port_text)


def parse_allow(text: str, option: str) -> tuple[IpNetwork, ...]:
    """``ADDR,ADDR/BITS,...`` -> networks; UserError (one line) on a bad entry."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UserError(f"{option}: give one or more addresses, separated by commas")
    if len(items) > MAX_ALLOW:
        raise UserError(f"{option}: {len(items)} entries, at most {MAX_ALLOW}")
    networks = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise UserError(f"{option}: {_shown(item)} is not an IP address or network") from None
    return tuple(networks)


def _shown(text: str, limit: int = 60) -> str:
    """Text from the command line as an error line quotes it: short, printable."""
    text = text if text.isprintable() else repr(text)[1:-1]
    return text if len(text) <= limit else text[: limit - 3] + "..."
