"""Decoder throughput: mcuprof's ResponseDecoder against a byte-at-a-time state machine.

Run: .venv/bin/python bench/decode.py [--records N] [--repeat K]
Prints medians; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import statistics
import struct
import time

import numpy as np

from mcuprof.protocol import RECORD_DTYPE, ResponseDecoder, encode_profile_data


def make_capture(n_records: int, per_packet: int = 20) -> bytes:
    rng = np.random.default_rng(1)
    recs = np.zeros(n_records, dtype=RECORD_DTYPE)
    recs["func_addr"] = rng.integers(0x0800_0000, 0x0801_0000, n_records)
    recs["entry_time"] = np.arange(n_records, dtype=np.uint64) * 7
    recs["duration"] = rng.integers(1, 500, n_records)
    recs["depth"] = rng.integers(0, 8, n_records)
    return b"".join(
        encode_profile_data(recs[i : i + per_packet]) for i in range(0, n_records, per_packet)
    )


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
        table.append(crc & 0xFFFF)
    return table


class ByteAtATimeDecoder:
    """The way most host tools are written (a port of the device's C parser): one
    state transition per byte, the CRC updated per byte from a 256-entry table, and
    one Python tuple per record."""

    TABLE = _crc_table()

    def __init__(self) -> None:
        self.state = 0
        self.crc = 0xFFFF
        self.header = bytearray()
        self.payload = bytearray()
        self.length = 0
        self.rx_crc = 0
        self.records: list[tuple[int, int, int, int]] = []

    def feed(self, data: bytes) -> None:
        table = self.TABLE
        for byte in data:
            state = self.state
            if state == 0:  # first header byte
                if byte == 0xAA:
                    self.crc = table[(0xFFFF >> 8) ^ byte] ^ 0xFF00
                    self.state = 1
            elif state == 1:  # second header byte
                self.state = 2 if byte == 0x55 else 0
                self.crc = table[((self.crc >> 8) ^ byte) & 0xFF] ^ ((self.crc << 8) & 0xFFFF)
                self.header = bytearray()
            elif state == 2:  # type and length
                self.crc = table[((self.crc >> 8) ^ byte) & 0xFF] ^ ((self.crc << 8) & 0xFFFF)
                self.header.append(byte)
                if len(self.header) == 3:
                    self.length = self.header[1] | self.header[2] << 8
                    self.payload = bytearray()
                    self.state = 3 if self.length else 4
            elif state == 3:  # payload
                self.crc = table[((self.crc >> 8) ^ byte) & 0xFF] ^ ((self.crc << 8) & 0xFFFF)
                self.payload.append(byte)
                if len(self.payload) == self.length:
                    self.state = 4
            elif state == 4:  # crc low
                self.rx_crc = byte
                self.state = 5
            elif state == 5:  # crc high
                self.rx_crc |= byte << 8
                self.state = 6
            else:  # end marker
                if byte == 0x0A and self.rx_crc == self.crc and self.header[0] == 5:
                    self._records()
                self.state = 0

    def _records(self) -> None:
        p = self.payload
        count = p[1] | p[2] << 8
        for i in range(count):
            self.records.append(struct.unpack_from("<IIIH", p, 3 + 14 * i))


def time_mcuprof(capture: bytes, chunk: int) -> tuple[float, int]:
    decoder = ResponseDecoder()
    n = 0
    start = time.perf_counter()
    for i in range(0, len(capture), chunk):
        for event in decoder.feed(capture[i : i + chunk]):
            n += len(event.records)  # type: ignore[union-attr]
    for event in decoder.close():
        n += len(event.records)  # type: ignore[union-attr]
    return time.perf_counter() - start, n


def time_baseline(capture: bytes) -> tuple[float, int]:
    decoder = ByteAtATimeDecoder()
    start = time.perf_counter()
    decoder.feed(capture)
    return time.perf_counter() - start, len(decoder.records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--baseline-records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    capture = make_capture(args.records)
    small = make_capture(args.baseline_records)
    print(f"capture: {args.records:,} records, 20 per packet, {len(capture):,} bytes")
    results: dict[str, float] = {}
    sizes = [
        ("mcuprof, 4 KiB reads", 4096),
        ("mcuprof, 64 KiB reads (link)", 1 << 16),  # what DeviceSession's reader asks for
        ("mcuprof, whole file", len(capture)),
    ]
    for label, chunk in sizes:
        runs = []
        for _ in range(args.repeat):
            seconds, n = time_mcuprof(capture, chunk)
            assert n == args.records
            runs.append(n / seconds)
        results[label] = statistics.median(runs)
    runs = []
    for _ in range(max(1, args.repeat // 2)):
        seconds, n = time_baseline(small)
        assert n == args.baseline_records
        runs.append(n / seconds)
    results["byte-at-a-time baseline"] = statistics.median(runs)
    base = results["byte-at-a-time baseline"]
    for label, rate in results.items():
        print(f"{label:28s} {rate:14,.0f} records/s  {rate / base:6.1f}x baseline")


if __name__ == "__main__":
    main()
