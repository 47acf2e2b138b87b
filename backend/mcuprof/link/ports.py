"""Which ports exist, which port strings are allowed, and opening them.

Only three kinds of port string are ever opened: a serial device path (a tty
character device that is not a terminal of this process or its session),
``socket://HOST:PORT`` and ``sim://[?options]``. Everything
else is refused before pyserial sees it, because some pyserial URL schemes
have side effects: ``spy://...?file=`` writes files, ``alt://`` picks a class.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import serial
import serial.tools.list_ports

from ..errors import UserError
from .simulator import SimOptions
from .urlhandler.keep_socket import KeepInputSocket

MAX_BAUD = 1_000_000_000
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_IPV6 = re.compile(r"^[0-9A-Fa-f:.]{2,45}$")
# Terminals of this machine, not serial links: the console, virtual consoles, the
# controlling terminal (reading it would steal the keyboard of whoever runs mcuprof).
_LOCAL_TERMINALS = re.compile(r"^(tty|tty\d+|console|ptmx|vcs\w*)$")
# Unix98 pty slaves (/dev/pts/N) are not listed in /sys/class/tty; their major numbers are fixed.
_PTY_SLAVE_MAJORS = range(136, 144)


@dataclass(frozen=True, slots=True)
class PortInfo:
    device: str
    description: str
    vid_pid: str | None  # "0483:5740" for USB devices


def list_ports() -> list[PortInfo]:
    """Serial ports the OS knows, USB ones first."""
    out = []
    for p in serial.tools.list_ports.comports():
        vid_pid = f"{p.vid:04x}:{p.pid:04x}" if p.vid is not None and p.pid is not None else None
        desc = p.description if p.description and p.description != "n/a" else ""
        out.append(PortInfo(p.device, desc, vid_pid))
    out.sort(key=lambda p: (p.vid_pid is None, p.device))
    return out


def _is_tty_device(path: Path) -> bool:
    """A character device that is a terminal line, judged without opening it
    (opening some character devices, /dev/watchdog for one, has effects)."""
    try:
        real = path.resolve(strict=True)
        st = real.stat()
    except (OSError, RuntimeError):
        return False
    if not stat.S_ISCHR(st.st_mode) or _LOCAL_TERMINALS.match(real.name):
        return False
    if sys.platform.startswith("linux"):
        if os.major(st.st_rdev) in _PTY_SLAVE_MAJORS:
            return True
        return Path("/sys/class/tty", real.name).exists()
    return real.name.startswith(("tty", "cu.", "cu", "pts"))


def _own_terminals() -> set[int]:
    """Device numbers of the terminals this process talks to: its standard streams and
    its session's controlling terminal. Opening one as a device port would write
    packets into the terminal of whoever runs mcuprof and leave it in raw mode."""
    devices: set[int] = set()
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                devices.add(os.fstat(fd).st_rdev)
        except OSError:
            continue
    try:
        # Field 7 of /proc/self/stat, after the parenthesised command name: tty_nr.
        tty_nr = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[4])
    except (OSError, ValueError, IndexError):
        tty_nr = 0
    if tty_nr:
        major = (tty_nr >> 8) & 0xFFF
        minor = (tty_nr & 0xFF) | ((tty_nr >> 12) & 0xFFF00)
        devices.add(os.makedev(major, minor))
    return devices


def _refuse_own_terminal(text: str) -> None:
    try:
        rdev = Path(text).resolve(strict=True).stat().st_rdev
    except (OSError, RuntimeError):
        return
    if rdev and rdev in _own_terminals():
        raise UserError(
            f"{text}: is the terminal this server runs in, not a device port; "
            "give the serial device the board is plugged into"
        )


def _validate_device(text: str) -> str:
    _refuse_own_terminal(text)
    listed = {p.device for p in list_ports()}
    if text in listed:
        return text
    path = Path(text)
    if not path.is_absolute():
        raise UserError(
            f"{text}: not a port; give a device path such as /dev/ttyACM0, "
            "socket://HOST:PORT or sim://"
        )
    if not path.exists():
        raise UserError(f"{text}: no such serial port")
    if not _is_tty_device(path):
        raise UserError(f"{text}: not a serial port (only tty character devices can be opened)")
    return text


def _validate_socket(text: str) -> str:
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UserError(f"{text}: bad socket:// URL ({exc})") from None
    host = parts.hostname or ""
    if parts.username is not None or parts.password is not None:
        raise UserError(f"{text}: socket:// URLs take no user name or password")
    if parts.path not in {"", "/"} or parts.query or parts.fragment:
        raise UserError(f"{text}: expected socket://HOST:PORT with nothing after the port")
    if port is None or not 1 <= port <= 65535:
        raise UserError(f"{text}: expected socket://HOST:PORT with a port from 1 to 65535")
    if ":" in host:
        if not _IPV6.match(host):
            raise UserError(f"{text}: bad IPv6 address {host!r}")
        return f"socket://[{host}]:{port}"
    if not _HOSTNAME.match(host):
        raise UserError(f"{text}: bad host name {host!r}")
    return f"socket://{host}:{port}"


def _validate_sim(text: str) -> str:
    rest = text[len("sim://") :]
    head, _, query = rest.partition("?")
    if head not in {"", "/"} or "#" in rest:
        raise UserError(f"{text}: expected sim:// or sim://?option=value&... (see SimOptions)")
    try:
        opts = SimOptions.from_query(query)
    except ValueError as exc:
        raise UserError(f"{text}: {exc}") from None
    canonical = opts.to_query()
    return "sim://" + (f"?{canonical}" if canonical else "")


def validate_port(text: str) -> str:
    """The accepted (canonical) port string, or UserError saying why not."""
    if not isinstance(text, str) or not text.strip():
        raise UserError("no port given; use a device path, socket://HOST:PORT or sim://")
    text = text.strip()
    if any(ord(c) < 32 for c in text):
        raise UserError("port contains control characters")
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if scheme == "socket":
            return _validate_socket(text)
        if scheme == "sim":
            return _validate_sim(text)
        raise UserError(
            f"{scheme}:// ports are not allowed; use a device path, socket://HOST:PORT or sim://"
        )
    return _validate_device(text)


def validate_baud(baud: int) -> int:
    if isinstance(baud, bool) or not isinstance(baud, int) or not 1 <= baud <= MAX_BAUD:
        raise UserError(f"bad baud rate {baud!r}: give a positive whole number such as 115200")
    return baud


def _open_error(port: str, exc: BaseException) -> UserError:
    code = getattr(exc, "errno", None)
    text = str(exc)
    if "exclusively lock" in text or code in {errno.EBUSY, errno.EAGAIN, errno.EWOULDBLOCK}:
        return UserError(f"{port}: port is busy (another program has it open)")
    if code == errno.EACCES or "Permission denied" in text:
        return UserError(
            f"{port}: permission denied (on Linux, add yourself to the 'dialout' group)"
        )
    if code == errno.ENOENT or "No such file" in text:
        return UserError(f"{port}: no such port (unplugged?)")
    if "Connection refused" in text:
        return UserError(f"{port}: connection refused (nothing listens there)")
    if "timed out" in text:
        return UserError(f"{port}: connection timed out")
    first = text.splitlines()[0] if text else type(exc).__name__
    return UserError(f"{port}: cannot open ({first})")


def open_transport(port: str, baud: int) -> serial.SerialBase:
    """Open a validated port: exclusive access for serial devices, non-blocking reads;
    ``socket://`` keeps every byte from the connection's first (KeepInputSocket)."""
    port = validate_port(port)
    validate_baud(baud)
    try:
        if port.startswith("socket://"):
            # Keep what the target sent as the connection opened (its boot).
            ser = KeepInputSocket()
            ser.port = port
        elif "://" in port:
            ser = serial.serial_for_url(port, do_not_open=True)
        else:
            # A device path goes straight to the native class, never through serial_for_url.
            ser = serial.Serial()
            ser.port = port
            ser.exclusive = True
        ser.baudrate = baud
        ser.timeout = 0
        ser.write_timeout = 2.0
        ser.open()
    except (serial.SerialException, OSError, ValueError) as exc:
        raise _open_error(port, exc) from None
    return ser
