"""The device side of the command channel."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcuprof.protocol import (
    BadCommand,
    Command,
    CommandDecoder,
    CommandPacket,
    encode_command,
)

commands_st = st.builds(lambda c, p: (c, p), st.sampled_from(list(Command)), st.binary(max_size=8))


@given(st.lists(commands_st, max_size=10), st.data())
def test_commands_round_trip_in_any_chunking(cmds, data) -> None:
    stream = b"".join(encode_command(c, p) for c, p in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    decoder = CommandDecoder()
    events = []
    last = 0
    for cut in [*cuts, len(stream)]:
        events += decoder.feed(stream[last:cut])
        last = cut
    assert events == [CommandPacket(c, p) for c, p in cmds]


def test_bad_checksum_is_reported_and_the_next_command_survives() -> None:
    bad = bytearray(encode_command(Command.START_PROFILING))
    bad[-1] ^= 0xFF
    events = CommandDecoder().feed(bytes(bad) + encode_command(Command.GET_STATUS))
    assert events[0] == BadCommand("bad checksum", bytes(bad))
    assert events[-1] == CommandPacket(Command.GET_STATUS)


def test_unknown_command_is_reported() -> None:
    body = bytes([0x55, 0x7F, 0]) + bytes(8)
    packet = body + bytes([sum(body) & 0xFF])
    assert CommandDecoder().feed(packet) == [BadCommand("unknown command 0x7f", packet)]


def test_payload_length_over_eight_is_reported() -> None:
    body = bytes([0x55, 0x06, 9]) + bytes(8)
    packet = body + bytes([sum(body) & 0xFF])
    (event,) = CommandDecoder().feed(packet)
    assert isinstance(event, BadCommand)
    assert "payload length" in event.reason


@given(st.lists(st.binary(max_size=64), max_size=10))
def test_random_bytes_raise_nothing_and_stay_bounded(chunks) -> None:
    decoder = CommandDecoder()
    for chunk in chunks:
        decoder.feed(chunk)
        assert len(decoder._buf) < 12
