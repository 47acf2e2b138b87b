"""Port listing and validation: only tty devices, socket:// and sim:// get through."""

from __future__ import annotations

import os
import tty
from types import SimpleNamespace

import pytest
import serial
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.errors import UserError
from mcuprof.link import DeviceSession, SimOptions, list_ports, open_transport, validate_port


@pytest.fixture
def pty_path():
    master, slave = os.openpty()
    tty.setraw(slave)
    yield os.ttyname(slave)
    os.close(slave)
    os.close(master)


@pytest.mark.parametrize(
    "text",
    [
        "spy://sim://?file=/tmp/x",
        "spy:///dev/ttyS0?file=/etc/passwd",
        "alt:///dev/ttyS0?class=PosixPollSerial",
        "loop://",
        "rfc2217://localhost:7000",
        "hwgrep://.*",
        "cp2110://0001:0002",
        "SPY://x",
        "file:///etc/passwd",
    ],
)
def test_other_url_schemes_are_refused(text: str) -> None:
    with pytest.raises(UserError, match="not allowed"):
        validate_port(text)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("/etc/passwd", "not a serial port"),  # a regular file
        ("/tmp", "not a serial port"),  # a directory
        ("/dev/null", "not a serial port"),  # a character device, but not a tty
        ("/dev/zero", "not a serial port"),
        ("/dev/ptmx", "not a serial port"),  # a tty driver, but not a serial link
        ("/no/such/device", "no such serial port"),
        ("ttyUSB0", "not a port"),  # relative: never resolved against the cwd
        ("", "no port given"),
        ("   ", "no port given"),
        ("/dev/tty\x00S0", "control characters"),
    ],
)
def test_arbitrary_paths_are_refused(text: str, why: str) -> None:
    with pytest.raises(UserError, match=why):
        validate_port(text)


@pytest.mark.parametrize(
    "text",
    [
        "socket://",
        "socket://localhost",
        "socket://localhost:0",
        "socket://localhost:70000",
        "socket://localhost:port",
        "socket://user:pw@localhost:4444",
        "socket://localhost:4444/path",
        "socket://localhost:4444?logging=debug",
        "socket://bad_host!:4444",
        "socket://-x:4444",
    ],
)
def test_bad_socket_urls_are_refused(text: str) -> None:
    with pytest.raises(UserError):
        validate_port(text)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("socket://127.0.0.1:4444", "socket://127.0.0.1:4444"),
        ("socket://localhost:2331/", "socket://localhost:2331"),
        ("SOCKET://ser2net.lan:3001", "socket://ser2net.lan:3001"),
        ("socket://[::1]:19021", "socket://[::1]:19021"),
    ],
)
def test_socket_urls_are_accepted_in_canonical_form(text: str, canonical: str) -> None:
    assert validate_port(text) == canonical


@pytest.mark.parametrize(
    "text",
    [
        "sim://?bogus=1",
        "sim://?rate=-5",
        "sim://?rate=nan",
        "sim://?ber=0.5",
        "sim://?mismatch=yes",
        "sim://?nack=FROBNICATE",
        "sim://?rate=1&rate=2",
        "sim://?elf=/no/such.elf",
        "sim://somehost",
        "sim:///path",
    ],
)
def test_bad_sim_urls_are_refused(text: str) -> None:
    with pytest.raises(UserError):
        validate_port(text)


def test_sim_urls_are_accepted_in_canonical_form() -> None:
    assert validate_port("sim://") == "sim://"
    assert validate_port("sim://?rate=500") == "sim://"  # 500 is the default
    got = validate_port("sim://?seed=4&rate=20000&mismatch=1&nack=start,GET_STATUS&ber=1e-4")
    assert got.startswith("sim://?")
    assert SimOptions.from_query(got.split("?", 1)[1]) == SimOptions(
        rate=20000,
        seed=4,
        mismatch=True,
        ber=1e-4,
        nack=frozenset({1, 3}),
    )


def test_a_pty_is_a_serial_port(pty_path: str) -> None:
    assert validate_port(pty_path) == pty_path


def test_listed_ports_validate_and_are_described(monkeypatch: pytest.MonkeyPatch) -> None:
    for port in list_ports():
        assert validate_port(port.device) == port.device
    fake = [
        SimpleNamespace(device="/dev/ttyS9", description="n/a", vid=None, pid=None),
        SimpleNamespace(device="/dev/ttyACM3", description="STM32 STLink", vid=0x0483, pid=0x374B),
    ]
    monkeypatch.setattr(serial.tools.list_ports, "comports", lambda: fake)
    ports = list_ports()
    assert [p.device for p in ports] == ["/dev/ttyACM3", "/dev/ttyS9"]  # USB first
    assert ports[0].vid_pid == "0483:374b" and ports[0].description == "STM32 STLink"
    assert ports[1].vid_pid is None and ports[1].description == ""
    # A listed port is accepted even though it does not exist here.
    assert validate_port("/dev/ttyACM3") == "/dev/ttyACM3"


def test_refused_text_never_reaches_serial_for_url(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = serial.serial_for_url
    monkeypatch.setattr(
        serial, "serial_for_url", lambda url, *a, **k: calls.append(url) or real(url, *a, **k)
    )
    for text in ["spy://sim://?file=/tmp/mcuprof-spy", "alt://loop://?class=Serial", "loop://"]:
        with pytest.raises(UserError):
            DeviceSession(text)
        with pytest.raises(UserError):
            open_transport(text, 115200)
    assert calls == []
    assert not os.path.exists("/tmp/mcuprof-spy")


def test_device_paths_open_exclusively(pty_path: str) -> None:
    first = open_transport(pty_path, 115200)
    try:
        with pytest.raises(UserError, match="busy"):
            open_transport(pty_path, 460800)
    finally:
        first.close()
    again = open_transport(pty_path, 921600)  # free again once closed
    assert again.baudrate == 921600
    again.close()


def test_bad_baud_rates_are_refused() -> None:
    for baud in (0, -9600, 10**12):
        with pytest.raises(UserError, match="baud"):
            DeviceSession("sim://", baud)


def test_custom_baud_is_allowed_on_sim_and_socket() -> None:
    assert DeviceSession("sim://", 250_000).baud == 250_000
    assert DeviceSession("socket://127.0.0.1:9", 2_000_000).baud == 2_000_000


def test_connection_refused_is_one_clear_line() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(UserError, match="refused") as info:
        open_transport(f"socket://127.0.0.1:{port}", 115200)
    assert "\n" not in str(info.value)


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_validation_never_crashes_and_accepts_only_allowed_forms(text: str) -> None:
    try:
        got = validate_port(text)
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    assert got.startswith(("socket://", "sim://", "/"))


@settings(max_examples=200)
@given(
    st.sampled_from(["rate", "seed", "ber", "drop", "unplug", "buffer", "packet", "timer", "wrap"]),
    st.text(alphabet="0123456789.e-+x", max_size=12),
)
def test_sim_option_values_are_checked_or_round_trip(key: str, value: str) -> None:
    try:
        opts = SimOptions.from_query(f"{key}={value}")
    except ValueError as exc:
        assert key in str(exc)
        return
    assert SimOptions.from_query(opts.to_query()) == opts


# The server's own terminal: a subprocess plays the server, its stdin (or its session's
# controlling terminal) a pty, and reports what validate_port says from inside.
_PROBE = """
import json, os, sys
from mcuprof.errors import UserError
from mcuprof.link import validate_port
out = {}
for text in sys.argv[1:]:
    try:
        out[text] = "ok: " + validate_port(text)
    except UserError as exc:
        out[text] = "refused: " + str(exc)
print(json.dumps(out))
"""


def _probe(*ports: str, **popen: object) -> dict[str, str]:
    import json
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *ports],
        capture_output=True,
        timeout=60,
        **popen,  # type: ignore[arg-type]
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_servers_own_terminal_is_refused() -> None:
    own_master, own_slave = os.openpty()
    other_master, other_slave = os.openpty()
    try:
        own, other = os.ttyname(own_slave), os.ttyname(other_slave)
        said = _probe("/proc/self/fd/0", own, other, stdin=own_slave)
    finally:
        for fd in (own_master, own_slave, other_master, other_slave):
            os.close(fd)
    for text in ("/proc/self/fd/0", own):
        assert said[text].startswith(f"refused: {text}: is the terminal this server runs in")
    assert said[other] == f"ok: {other}"  # a pty that is not ours is a serial port


def test_the_sessions_controlling_terminal_is_refused() -> None:
    import subprocess

    master, slave = os.openpty()
    path = os.ttyname(slave)
    os.close(slave)

    def own_session() -> None:
        # A new session whose controlling terminal is the pty (opening it without
        # O_NOCTTY makes it so), while the standard streams are pipes and /dev/null.
        os.setsid()
        fd = os.open(path, os.O_RDWR)
        os.close(fd)

    try:
        said = _probe(path, "/dev/tty", stdin=subprocess.DEVNULL, preexec_fn=own_session)
    finally:
        os.close(master)
    assert said[path].startswith(f"refused: {path}: is the terminal this server runs in")
    assert said["/dev/tty"].startswith("refused: ")
