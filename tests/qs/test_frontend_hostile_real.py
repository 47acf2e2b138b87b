"""A hostile front end against ``mcuprof qs listen --udp`` and the real dpp-posix64
(issue 25, the hostile-input done-when line): 100,000 datagrams of garbage, names not in
the dictionary, oversized peeks and QSPY's own records are refused, nothing of them
reaches the target, and the target link and the text output keep going."""

from __future__ import annotations

import re
import signal
import socket

import pytest

from .qsfe import REAL, FrontEnd, start_listen, start_target, wait_for

TARGET = "dpp-posix64"
FLOOD = 100_000
HOSTILE = [
    b"\xff",  # too short
    b"\x11",  # no such QS-RX record
    b"\x04\x00\x00\x04\xff",  # a peek of 1020 bytes
    b"\x87\x00\x00\x00\x00\x00NO_SUCH_SIG\x00",  # a signal not in the dictionary
    b"\x89\x00" + bytes(8) + b"No_such_inst\x00",  # an object not in the dictionary
    b"\x10\x01\x00\x00\x00\x00",  # signal 0 posted: the target would die of it
    b"\x8a\x00" + bytes(12) + b"CMD\x00",  # QSPY's command by name
    b"\x00" * 600,  # longer than any front-end packet
]


def test_a_flood_of_hostile_datagrams_is_refused_and_the_target_link_keeps_going():
    if not (REAL / TARGET).exists():
        pytest.skip(f"the real target {REAL / TARGET} is missing")
    host, tport, uport = start_listen()
    target = start_target(TARGET, tport)
    fe = FrontEnd(uport)
    hostile = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        fe.send(b"\x80\x03")
        host.wait_line(r"QF_RUN")
        hostile.sendto(b"\x00\x80\x03", ("127.0.0.1", uport))  # attached: it gets replies
        for i in range(FLOOD):
            body = HOSTILE[i % len(HOSTILE)]
            # (when the host's socket buffer is full, the kernel drops the datagram)
            hostile.sendto(bytes([i & 0xFF]) + body, ("127.0.0.1", uport))
        flooded = len(host.out)
        # The target's records still arrive and are still printed...
        host.wait_line(r"Philo_inst\[\d\]", since=flooded)
        # ...and a well-behaved front end is still served, the target answering it.
        fe.ask_again(b"\x03\x00", r"Trg-Ack  QS_RX_TICK")
        assert target.proc.poll() is None
    finally:
        hostile.close()
        fe.close()
        target.stop(signal.SIGKILL)
        host.stop(signal.SIGINT)
    # Nothing of the flood reached the target: it never answered with an error.
    assert not [line for line in host.out if "Trg-ERR" in line]
    refusals = [line for line in host.out if "<F-END> ERROR" in line]
    assert refusals and all(line.count("\n") == 0 for line in refusals)
    shown = [line for line in refusals if "more datagrams refused" not in line]
    held = sum(int(m.group(1)) for m in map(re.compile(r"(\d+) more datagrams").search,
                                             refusals) if m)  # fmt: skip
    summary = wait_for(lambda: next((e for e in host.err if "datagrams refused" in e), None),
                       "the summary")  # fmt: skip
    refused = int(re.search(r"(\d+) front-end datagrams refused", str(summary)).group(1))
    # Every refusal was shown or counted; the kernel may have dropped part of the flood.
    assert 0 < refused <= FLOOD
    assert len(shown) + held <= refused and len(shown) < refused
