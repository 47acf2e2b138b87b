"""One door for QSPY front ends (issue 35, findings 2 and 8): the UDP port binds the
address the page (or the target's listen://) binds unless told another; an address
other machines reach needs --allow-remote and an allow-list, and datagrams from
anyone else are dropped unanswered and counted. The target's records reach front ends
from a queue on a thread of their own: the thread that decodes never sends to them."""

from __future__ import annotations

import select
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcuprof.errors import UserError
from mcuprof.link.qs_udp import MAX_FRONT_ENDS, FrontEndPort
from mcuprof.link.qs_udp_access import MAX_ALLOW, UdpAccess, udp_access
from mcuprof.protocol.qs import Dictionaries, QSConfig, QSDecoder
from mcuprof.qs.rx import RxCommands

from .qsfe import REAL, FrontEnd, wait_for

NONE = RxCommands(lambda: (QSConfig(), Dictionaries()))


@pytest.mark.parametrize(
    ("text", "page", "remote", "allow", "host"),
    [
        ("0", "127.0.0.1", False, None, "127.0.0.1"),
        ("0", "127.0.0.1", True, None, "127.0.0.1"),  # finding 2: it bound 0.0.0.0
        ("7701", "localhost", False, None, "127.0.0.1"),
        ("127.0.0.2:7701", "127.0.0.1", False, None, "127.0.0.2"),
        ("[::1]:7701", "127.0.0.1", False, None, "::1"),
        ("0", "0.0.0.0", True, "10.0.0.0/8,192.168.1.5", "0.0.0.0"),
    ],
)
def test_the_port_binds_the_pages_address_unless_told(text, page, remote, allow, host) -> None:
    access = udp_access(text, page, remote, allow, "--qspy-udp")
    assert access.host == host


@pytest.mark.parametrize(
    ("text", "page", "remote", "allow", "message"),
    [
        ("0.0.0.0:0", "127.0.0.1", False, None, "refusing UDP on 0.0.0.0"),
        ("0", "0.0.0.0", False, "10.0.0.1", "refusing UDP on 0.0.0.0"),
        ("0", "0.0.0.0", True, None, "unauthenticated: name who may attach with --qspy-udp-allow"),
        ("0", "127.0.0.1", False, "10.0.0.300", "10.0.0.300 is not an IP address or network"),
        ("0", "127.0.0.1", False, " , ", "give one or more addresses"),
        ("0", "127.0.0.1", False, ",".join(["10.0.0.1"] * (MAX_ALLOW + 1)), "at most 64"),
        ("70000", "127.0.0.1", False, None, "--qspy-udp 70000: a UDP port from 0 to 65535"),
        ("example.com:7", "127.0.0.1", False, None, "bind an IP address, not 'example.com'"),
    ],
)
def test_what_the_port_refuses(text, page, remote, allow, message) -> None:
    with pytest.raises(UserError, match=message.replace("[", r"\[")):
        udp_access(text, page, remote, allow, "--qspy-udp")


@given(text=st.text(max_size=60), allow=st.none() | st.text(max_size=80))
def test_any_address_text_is_taken_or_refused_in_one_line(text: str, allow: str | None) -> None:
    try:
        access = udp_access(text, "127.0.0.1", True, allow, "--udp")
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    assert 0 <= access.port <= 65535 and (not access.remote or access.allow)


def test_the_allow_list_admits_addresses_and_networks() -> None:
    access = udp_access("0", "0.0.0.0", True, "127.0.0.2,10.1.0.0/16,::1", "--udp")
    assert access.admits("127.0.0.2") and access.admits("10.1.200.3") and access.admits("::1")
    assert access.admits("::ffff:10.1.0.9")  # a v4 peer on a v6 socket
    assert not access.admits("127.0.0.1") and not access.admits("10.2.0.1")
    assert "unauthenticated" in access.warning() and "\n" not in access.warning()
    assert udp_access("0", "127.0.0.1", False, None, "--udp").warning() is None


def test_datagrams_from_addresses_not_allowed_are_dropped_and_counted() -> None:
    lines: list[str] = []
    access = UdpAccess("127.0.0.1", 0, udp_access("0", "0.0.0.0", True, "127.0.0.2", "x").allow)
    port = FrontEndPort(access, lambda: NONE, lambda cmd: None, lines.append, lambda: "")
    stranger, friend = FrontEnd(port.address[1]), FrontEnd(port.address[1], source="127.0.0.2")
    stop = threading.Event()
    poller = threading.Thread(target=_poll, args=(port, stop))
    poller.start()
    try:
        stranger.send(b"\x80\x03")
        stranger.send(b"\x02")  # RESET
        friend.send(b"\x80\x03")
        wait_for(lambda: any(p[1:2] == b"\x80" for p in friend.packets), "the friend attached")
        wait_for(lambda: port.foreign == 2, "the stranger's datagrams counted")
        assert stranger.packets == [] and list(port.clients) == [friend.sock.getsockname()]
        assert lines == ["   <F-END> Attached Chan=00000011"]
    finally:
        stop.set()
        poller.join(timeout=5)
        stranger.close()
        friend.close()
        port.close()


def _poll(port: FrontEndPort, stop: threading.Event) -> None:
    while not stop.is_set():
        if select.select([port], [], [], 0.05)[0]:
            port.poll()


class _SpySocket:
    """The port's socket, noting which threads send on it."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self.senders: set[str] = set()

    def sendto(self, data: bytes, addr: Any) -> int:
        self.senders.add(threading.current_thread().name)
        return self._sock.sendto(data, addr)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


@pytest.fixture(scope="module")
def dpp_events() -> list:
    data = (REAL.parent / "dpp-posix64.bin").read_bytes()
    return QSDecoder().feed(data)


def test_the_decoding_thread_never_sends_to_front_ends(dpp_events) -> None:
    """Finding 8: eight attached front ends that never read cost the thread that hands
    records over nothing but a queue append; they get what they can, each losing its
    own records, counted, when the queue is full."""
    port = FrontEndPort(UdpAccess("127.0.0.1", 0), lambda: NONE, lambda c: None, print, str)
    port.sock = spy = _SpySocket(port.sock)
    front_ends = [FrontEnd(port.address[1]) for _ in range(MAX_FRONT_ENDS)]
    try:
        for fe in front_ends:
            fe.send(b"\x80\x03")
        wait_for(lambda: port.poll() or len(port.clients) == MAX_FRONT_ENDS, "all attached")
        spy.senders.clear()  # the attach confirmations: the port's own thread's
        port._fanout.limit = 2 * len(dpp_events)  # a small queue: most batches are lost
        for _ in range(20):
            port.forward(dpp_events)
        assert threading.current_thread().name not in spy.senders
        wait_for(lambda: "mcuprof-qspy-out" in spy.senders, "the fan-out thread sending")
        wait_for(lambda: port.lost >= len(dpp_events), "lost records counted")
        assert all(c.lost >= port.lost for c in port.clients.values())
        wait_for(lambda: all(fe.binaries() for fe in front_ends), "records reaching front ends")
    finally:
        port.close()
        for fe in front_ends:
            fe.close()
