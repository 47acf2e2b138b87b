"""Application records (id >= 100): a timestamp, then self-describing data elements.

Each element starts with a format byte: the low nibble is the type, the high nibble
the display width (0xF means hexadecimal for unsigned types; for type 0 a set bit 3
makes it an enumeration whose group is the low three bits).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .dictionaries import clean_name

KINDS = (
    "I8",
    "U8",
    "I16",
    "U16",
    "I32",
    "U32",
    "F32",
    "F64",
    "STR",
    "MEM",
    "SIG",
    "OBJ",
    "FUN",
    "I64",
    "U64",
    "HEX32",
)
_FIXED = {
    "I8": struct.Struct("<b"),
    "U8": struct.Struct("<B"),
    "I16": struct.Struct("<h"),
    "U16": struct.Struct("<H"),
    "I32": struct.Struct("<i"),
    "U32": struct.Struct("<I"),
    "F32": struct.Struct("<f"),
    "F64": struct.Struct("<d"),
    "I64": struct.Struct("<q"),
    "U64": struct.Struct("<Q"),
    "HEX32": struct.Struct("<I"),
}
_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}
_new = tuple.__new__


class UserArg(NamedTuple):
    """One data element. ``value`` is an int or float, a str for STR, bytes for MEM,
    a (signal, object) pair for SIG; ENUM is an int with ``group`` set."""

    kind: str
    width: int
    value: object
    group: int = 0


def decode_user(
    data: bytes, pos: int, sig_size: int, obj_size: int, fun_size: int
) -> tuple[tuple[UserArg, ...], str | None]:
    """Decode the elements from ``pos`` on; returns them and an error (or None)."""
    args: list[UserArg] = []
    n = len(data)
    while pos < n:
        fmt = data[pos]
        pos += 1
        width = fmt >> 4
        kind = KINDS[fmt & 0xF]
        try:
            if kind in _FIXED and not (kind == "I8" and width & 0x8):
                st = _FIXED[kind]
                (value,) = st.unpack_from(data, pos)
                pos += st.size
                args.append(_new(UserArg, (kind, width, value, 0)))
            elif kind == "I8":
                args.append(_new(UserArg, ("ENUM", width, data[pos], width & 0x7)))
                pos += 1
            elif kind == "STR":
                end = data.index(0, pos)
                args.append(_new(UserArg, (kind, width, clean_name(data[pos:end]), 0)))
                pos = end + 1
            elif kind == "MEM":
                count = data[pos]
                if pos + 1 + count > n:
                    return tuple(args), f"{pos + 1 + count - n} more bytes needed for memory-dump"
                args.append(UserArg(kind, width, bytes(data[pos + 1 : pos + 1 + count])))
                pos += 1 + count
            else:
                sizes = {"SIG": (sig_size, obj_size), "OBJ": (obj_size,), "FUN": (fun_size,)}
                codes = "".join(_UINT[s] for s in sizes[kind])
                st = struct.Struct("<" + codes)
                values = st.unpack_from(data, pos)
                pos += st.size
                args.append(UserArg(kind, width, values if kind == "SIG" else values[0]))
        except (struct.error, IndexError, KeyError):
            return tuple(args), f"data too short for a {kind} element"
        except ValueError:
            return tuple(args), "string without its terminating NUL"
    return tuple(args), None
