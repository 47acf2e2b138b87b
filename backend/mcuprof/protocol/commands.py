"""Host-to-device commands: the host's encoder and the device's decoder."""

from __future__ import annotations

from .constants import COMMAND_HEADER, COMMAND_PAYLOAD_SIZE, COMMAND_SIZE, Command
from .crc import checksum8
from .errors import ProtocolError
from .events import BadCommand, CommandEvent, CommandPacket


def encode_command(command: Command | int, payload: bytes = b"") -> bytes:
    """The 12-byte packet for ``command``; the payload is zero-padded to 8 bytes."""
    code = int(command)
    if not 0 <= code <= 0xFF:
        raise ValueError(f"command code {code} does not fit in one byte")
    if len(payload) > COMMAND_PAYLOAD_SIZE:
        raise ValueError(f"command payload is {len(payload)} bytes; at most 8 fit")
    body = bytes([COMMAND_HEADER, code, len(payload)]) + payload.ljust(COMMAND_PAYLOAD_SIZE, b"\0")
    return body + bytes([checksum8(body)])


def decode_command(packet: bytes) -> CommandEvent:
    """Decode exactly one 12-byte packet that starts with the header byte."""
    if len(packet) != COMMAND_SIZE or packet[0] != COMMAND_HEADER:
        raise ProtocolError("not a 12-byte command packet")
    raw = bytes(packet)
    if checksum8(raw[:11]) != raw[11]:
        return BadCommand("bad checksum", raw)
    try:
        command = Command(raw[1])
    except ValueError:
        return BadCommand(f"unknown command 0x{raw[1]:02x}", raw)
    length = raw[2]
    if length > COMMAND_PAYLOAD_SIZE:
        return BadCommand(f"payload length {length} exceeds 8", raw)
    return CommandPacket(command, raw[3 : 3 + length])


class CommandDecoder:
    """Device side: feed the bytes the host sent, read back command events.

    A packet with a bad checksum is reported (the device NACKs it) and hunting
    resumes one byte after its header, so a stray 0x55 cannot eat the next command.
    The buffer never holds more than one packet.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.skipped_bytes = 0

    def feed(self, data: bytes) -> list[CommandEvent]:
        self._buf += data
        buf = self._buf
        events: list[CommandEvent] = []
        pos = 0
        while True:
            start = buf.find(COMMAND_HEADER, pos)
            if start < 0:
                self.skipped_bytes += len(buf) - pos
                pos = len(buf)
                break
            self.skipped_bytes += start - pos
            if len(buf) - start < COMMAND_SIZE:
                pos = start
                break
            event = decode_command(bytes(buf[start : start + COMMAND_SIZE]))
            events.append(event)
            if isinstance(event, BadCommand) and event.reason == "bad checksum":
                self.skipped_bytes += 1
                pos = start + 1
            else:
                pos = start + COMMAND_SIZE
        del buf[:pos]
        return events
