"""QSPY 7.4's UDP front-end protocol, sans-IO: a datagram in, what it asks for out.

Byte 0 of every datagram is the sender's sequence number, byte 1 the record id.
Records below 128 go to the target (checked by ``RxCommands.parse``); records from 128
are for the host: attach, detach, save dictionaries, a note, and target commands by
name (0x87 event, 0x88 AO filter, 0x89 current object). The packets back are built
here too: the attach confirmation, a text line, a target record.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .rx import MAX_NAME, RxCommand, RxCommands, RxError

ATTACH, DETACH, SAVE_DICT = 0x80, 0x81, 0x82
SEND_EVENT, SEND_AO_FILTER, SEND_CURR_OBJ = 0x87, 0x88, 0x89
SHOW_NOTE = 0x8D
# QSPY's own records that mcuprof does not offer: each is refused with its reason and
# never reaches the target (docs/limits.md).
QSPY_ONLY = {
    0x83: "TEXT_OUT toggles QSPY's text file: mcuprof's text goes to stdout",
    0x84: "BIN_OUT toggles QSPY's binary file: use mcuprof qs listen -o CAPTURE",
    0x85: "MATLAB_OUT toggles QSPY's MATLAB file, which mcuprof does not write",
    0x86: "SEQUENCE_OUT toggles QSPY's -g file: use mcuprof qs seq on the capture",
    0x8A: "SEND_COMMAND by name is not offered: send QS_RX_COMMAND (0x01) by number",
    0x8B: "SEND_TEST_PROBE by name is not offered: send QS_RX_TEST_PROBE (0x09)",
    0x8C: "CLEAR_SCREEN is not offered: mcuprof's output is a stream",
}
CHAN_BINARY, CHAN_TEXT = 0x01, 0x02
TEXT_REC = 0x00  # a text packet: ss 00 rr line
# The longest datagram read: a QView packet is at most a few dozen bytes; anything
# longer is refused whole (docs/limits.md).
MAX_DATAGRAM = 512
MAX_NOTE = 256  # bytes of a note's text


@dataclass(frozen=True, slots=True)
class Attach:
    channels: int


@dataclass(frozen=True, slots=True)
class Detach:
    pass


@dataclass(frozen=True, slots=True)
class SaveDict:
    pass


@dataclass(frozen=True, slots=True)
class Note:
    kind: int
    text: str


@dataclass(frozen=True, slots=True)
class ToTarget:
    command: RxCommand


Packet = Attach | Detach | SaveDict | Note | ToTarget


def parse_datagram(data: bytes, commands: RxCommands) -> Packet:
    """What one datagram asks for; RxError (one line) when it is refused."""
    if len(data) < 2:
        raise RxError(f"datagram of {len(data)} bytes: too short")
    if len(data) > MAX_DATAGRAM:
        raise RxError(f"datagram of {len(data)} bytes: at most {MAX_DATAGRAM}")
    rec, body = data[1], bytes(data[2:])
    if rec < 0x80:
        return ToTarget(commands.parse(rec, body))
    if rec == ATTACH:
        if len(body) != 1 or not 0 < body[0] <= CHAN_BINARY | CHAN_TEXT:
            raise RxError("ATTACH: give one channel byte, 1 binary, 2 text or 3 both")
        return Attach(body[0])
    if rec in (DETACH, SAVE_DICT):
        if body:
            raise RxError(f"record 0x{rec:02X} takes no payload")
        return Detach() if rec == DETACH else SaveDict()
    if rec == SHOW_NOTE:
        text = _string(body[1:], MAX_NOTE, "note") if body else None
        if text is None:
            raise RxError("note: give a kind byte and a NUL-terminated text")
        return Note(body[0], text)
    if rec in (SEND_EVENT, SEND_AO_FILTER, SEND_CURR_OBJ):
        return ToTarget(_by_name(rec, body, commands))
    if rec in QSPY_ONLY:
        raise RxError(f"record 0x{rec:02X} refused: {QSPY_ONLY[rec]}")
    raise RxError(f"Unrecognized command Rec={rec}")


def _string(raw: bytes, limit: int, what: str) -> str:
    """A NUL-terminated string that ends the packet."""
    if not raw or raw[-1] != 0 or 0 in raw[:-1]:
        raise RxError(f"{what}: the text must end the packet with one NUL byte")
    if len(raw) - 1 > limit:
        raise RxError(f"{what} of {len(raw) - 1} bytes: at most {limit}")
    text = raw[:-1].decode("utf-8", "replace")
    if not text.isprintable():
        raise RxError(f"{what} has control characters")
    return text


def _by_name(rec: int, body: bytes, commands: RxCommands) -> RxCommand:
    config, _ = commands.state()
    if rec == SEND_EVENT:
        head = 1 + config.sig_size + 2
        if len(body) < head:
            raise RxError("SEND_EVENT: too short")
        (length,) = struct.unpack_from("<H", body, 1 + config.sig_size)
        params = body[head : head + length]
        if len(params) != length:
            raise RxError(f"SEND_EVENT: parameter length {length} does not fit the packet")
        name = _string(body[head + length :], MAX_NAME, "signal name")
        return commands.event(body[0], name, params)
    head = 1 + config.obj_ptr_size
    if len(body) < head:
        raise RxError(f"record 0x{rec:02X}: too short")
    name = _string(body[head:], MAX_NAME, "object name")
    if rec == SEND_AO_FILTER:
        if body[0] > 1:
            raise RxError(f"AO filter: {body[0]} is neither 0 (add) nor 1 (remove)")
        return commands.ao_filter(name, remove=bool(body[0]))
    return commands.curr_obj(body[0], name)


def attach_packet(seq: int) -> bytes:
    return bytes([seq & 0xFF, ATTACH])


def text_packet(seq: int, rec: int, line: str) -> bytes:
    return bytes([seq & 0xFF, TEXT_REC, rec & 0xFF]) + line.encode("utf-8", "replace")


def binary_packet(raw_frame: bytes) -> bytes:
    """A decoded target frame (seq, record, data, checksum) as QSPY forwards it:
    the target's sequence number, the record id and the data."""
    return bytes(raw_frame[:-1])
