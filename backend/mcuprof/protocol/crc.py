"""Checksums: CRC-16/CCITT-FALSE for responses, an 8-bit sum for commands."""

from __future__ import annotations

import binascii
from functools import lru_cache

import numpy as np
from fastcrc.crc16 import xmodem as _crc0  # poly 0x1021, init 0: linear in the message

_POLY = 0x11021  # x^16 + x^12 + x^5 + 1


def crc16_ccitt_false(data: bytes | bytearray | memoryview, crc: int = 0xFFFF) -> int:
    """Poly 0x1021, init 0xFFFF, no reflection, no final xor; check value 0x29B1."""
    return binascii.crc_hqx(data, crc)


def checksum8(data: bytes | bytearray | memoryview) -> int:
    return sum(data) & 0xFF


def crc16_run_ok(
    run: bytes | bytearray | memoryview, lo: np.ndarray, hi: np.ndarray, size: int, end: int
) -> bool:
    """Whether every packet of ``run`` (packets of ``size`` bytes back to back, each its
    CRC-16/CCITT-FALSE over all but its last 3 bytes, then that CRC little-endian (bytes
    ``lo``, ``hi``) and the byte ``end``, which the caller has checked) carries the right
    CRC, in one pass over the bytes.

    A CRC with a zero initial value is linear over GF(2): the zero-init CRC of the whole
    run is the sum of each packet's, multiplied by x^(8·bytes after it), and a packet
    with a right CRC has a zero-init CRC fixed by its two CRC bytes (see ``_expected``).
    So the run's CRC, computed once (fastcrc: gigabytes a second), must equal that sum of
    what each packet should give, which numpy forms in log2(packets) steps. A wrong
    packet changes the run's CRC by its error times a power of x, which is never zero
    (x is invertible modulo the polynomial): one bad packet is caught exactly as its own
    check would catch it; several can cancel out with chance 2^-16, as each of their own
    checks could pass. False sends the caller to the check per packet, which says which."""
    m = len(lo)
    if m == 0:
        return True
    v = _expected(size - 3, end)[np.bitwise_xor(lo, hi)]
    # Leading zeros change no zero-init CRC: pad to a power of two, then fold pairs.
    n = 1 << (m - 1).bit_length()
    if n != m:
        v = np.concatenate([np.zeros(n - m, np.uint16), v])
    level = 0
    while len(v) > 1:
        high, low = _times(size, level)
        a = v[0::2]
        v = high[a >> 8] ^ low[a & 0xFF] ^ v[1::2]
        level += 1
    return int(v[0]) == _crc0(run)


@lru_cache(maxsize=64)
def _expected(body: int, end: int) -> np.ndarray:
    """The zero-init CRC of a packet whose ``body`` bytes carry the right CRC, by the
    XOR of its two CRC bytes: with init 0xFFFF the CRC of the body is s, so with init 0
    it is s ^ k (k: the CRC of ``body`` zero bytes from 0xFFFF); three bytes later the
    register holds (s ^ k)·x^24, the zero-init CRC of the bytes (s ^ k)_hi, (s ^ k)_lo, 0.
    Adding the tail's own bytes (lo, hi, end) at the same places leaves
    [lo ^ hi ^ k_hi, lo ^ hi ^ k_lo, end]."""
    k = binascii.crc_hqx(bytes(body), 0xFFFF)
    k_hi, k_lo = k >> 8, k & 0xFF
    table = [_crc0(bytes((u ^ k_hi, u ^ k_lo, end))) for u in range(256)]
    return np.array(table, np.uint16)


@lru_cache(maxsize=256)
def _times(size: int, level: int) -> tuple[np.ndarray, np.ndarray]:
    """Tables for v -> v·x^(8·size·2^level) mod the polynomial, by v's high and low byte."""
    c = _power(8 * size << level)
    basis = []
    for _ in range(16):
        basis.append(c)
        c <<= 1
        if c & 0x10000:
            c ^= _POLY
    byte = np.arange(256)
    high = np.zeros(256, np.uint16)
    low = np.zeros(256, np.uint16)
    for j in range(8):
        bit = (byte >> j) & 1 == 1
        low[bit] ^= basis[j]
        high[bit] ^= basis[j + 8]
    return high, low


def _mul(a: int, b: int) -> int:
    r = 0
    for i in range(15, -1, -1):
        r <<= 1
        if r & 0x10000:
            r ^= _POLY
        if (b >> i) & 1:
            r ^= a
    return r


def _power(e: int) -> int:
    """x^e mod the polynomial."""
    result, base = 1, 2
    while e:
        if e & 1:
            result = _mul(result, base)
        base = _mul(base, base)
        e >>= 1
    return result
