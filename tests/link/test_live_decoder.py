"""A live link never sits on good data, and a Stop is a Stop.

A scripted device on a real TCP socket sends a false header (PROFILE_DATA claiming
4,680 records) and then intact packets, and goes quiet: the packets must reach the
listener when the link idles, at Stop and at disconnect, each exactly once."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from mcuprof.link import DeviceSession
from mcuprof.protocol import (
    RECORD_DTYPE,
    Command,
    CommandDecoder,
    CommandPacket,
    Metadata,
    ResponseType,
    encode_metadata,
    encode_profile_data,
    encode_response,
)

from .conftest import HANG_S, FakeClock, Recorder

pytestmark = pytest.mark.timeout(120)

FALSE_HEADER = (
    bytes([0xAA, 0x55, 0x05])
    + (3 + 4680 * 14).to_bytes(2, "little")
    + b"\x01"
    + (4680).to_bytes(2, "little")
)
N_RECORDS = 1975  # what the campaign saw withheld


def _records() -> np.ndarray:
    recs = np.zeros(N_RECORDS, dtype=RECORD_DTYPE)
    recs["func_addr"] = 0x08000101 + 2 * (np.arange(N_RECORDS) % 7)
    recs["entry_time"] = np.arange(N_RECORDS) * 50
    recs["duration"] = 10
    return recs


class ScriptedDevice:
    """Answers commands; after the ACK of ``send_on`` (START, or STOP as a device
    draining its ring does) sends the false header, the records, then silence.
    ``nack`` lists commands answered with NACK."""

    def __init__(
        self,
        nack: frozenset[Command] = frozenset(),
        send_on: Command = Command.START_PROFILING,
        false_header: bool = True,
    ) -> None:
        self.nack = nack
        self.send_on = send_on
        self.noise = FALSE_HEADER if false_header else b""
        self.records = _records()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"socket://127.0.0.1:{self.listener.getsockname()[1]}"
        self.commands: list[Command] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        decoder = CommandDecoder()
        with conn:
            while True:
                try:
                    data = conn.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                for event in decoder.feed(data):
                    if isinstance(event, CommandPacket):
                        conn.sendall(self._answer(event.command))

    def _answer(self, command: Command) -> bytes:
        self.commands.append(command)
        if command in self.nack:
            return encode_response(ResponseType.NACK)
        if command is Command.GET_METADATA:
            return encode_metadata(Metadata(1_000_000, 1_000_000, 0, "scripted"))
        ack = encode_response(ResponseType.ACK)
        if command is self.send_on:
            packets = [
                encode_profile_data(self.records[i : i + 25]) for i in range(0, N_RECORDS, 25)
            ]
            return ack + self.noise + b"".join(packets)
        return ack

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def device():
    made: list[ScriptedDevice] = []

    def make(**kw: object) -> ScriptedDevice:
        made.append(ScriptedDevice(**kw))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for d in made:
        d.close()


def _delivered_once(rec: Recorder, dev: ScriptedDevice) -> None:
    assert rec.n_records == N_RECORDS
    assert np.array_equal(rec.records(), dev.records)


def test_idle_link_delivers_what_a_false_header_held_back(device) -> None:
    dev = device()
    rec = Recorder()
    session = DeviceSession(dev.url, 921_600, rec, idle_flush_s=0.2)
    session.connect()
    try:
        session.start(reset=False)
        rec.wait_for(lambda: rec.n_records >= N_RECORDS, "the held-back records")
        time.sleep(0.5)  # more idle time changes nothing: nothing comes twice
        _delivered_once(rec, dev)
        assert session.stats.malformed >= 1  # the false header, judged once
    finally:
        session.close()
    _delivered_once(rec, dev)


def test_disconnect_delivers_what_was_waiting(device) -> None:
    dev = device()
    rec = Recorder()
    # A frozen clock: the link never counts as idle, so only close() can resolve it.
    session = DeviceSession(dev.url, 921_600, rec, clock=FakeClock(), idle_flush_s=1e9)
    session.connect()
    session.start(reset=False)
    deadline = time.monotonic() + HANG_S
    while len(rec.raw) < len(FALSE_HEADER) + N_RECORDS * 14 and time.monotonic() < deadline:
        time.sleep(0.01)  # every byte has arrived; the decoder waits on the header
    assert rec.n_records == 0
    session.close()
    _delivered_once(rec, dev)


def test_stop_succeeds_when_status_is_nacked(device) -> None:
    dev = device(nack=frozenset({Command.GET_STATUS}), false_header=False)
    rec = Recorder()
    session = DeviceSession(dev.url, 921_600, rec, command_timeout_s=0.3)
    session.connect()
    try:
        session.start(reset=False)
        assert session.state == "profiling"
        assert session.stop() is None  # STOP was ACKed; the final count is unknown
        assert session.state == "ready"
        assert dev.commands[-4:] == [Command.STOP_PROFILING] + [Command.GET_STATUS] * 3
        assert any("STOP was acknowledged" in m for _, m in rec.logs)
        _delivered_once(rec, dev)
    finally:
        session.close()


def test_stop_delivers_what_a_false_header_held_back(device) -> None:
    # The ring drains after STOP's ACK, behind a false header; the link never counts
    # as idle (idle_flush_s huge), and the status answer is stuck behind it too.
    dev = device(send_on=Command.STOP_PROFILING)
    rec = Recorder()
    session = DeviceSession(dev.url, 921_600, rec, idle_flush_s=1e9, command_timeout_s=0.3)
    session.connect()
    try:
        session.start(reset=False)
        session.stop()
        assert session.state == "ready"
        _delivered_once(rec, dev)
    finally:
        session.close()
    _delivered_once(rec, dev)
