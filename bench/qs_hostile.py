"""Issue 26's F5 and F6 inputs against a real `mcuprof serve`: server peak RSS and time.

F5: a 2 MB QS capture whose dictionaries name one object, state and signal with 500
control bytes each (every byte prints as 4 characters), named by every dispatch. Two
such stored sessions are opened (summary), searched (a text query renders every kept
line) and downloaded (log.txt). F6: one frame, then 8 MB of 0x7E, replayed at 1x: the
time until the replay request returns (it has started), and the peak RSS as it plays
(its record count is counted aside meanwhile). Each in a fresh server; peak RSS is
the server's VmHWM. Asserts nothing about time.

Run: .venv/bin/python bench/qs_hostile.py
"""

from __future__ import annotations

import contextlib
import json
import struct
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from mcuprof.protocol.qs import encode_frame
from qs_serve import serve_qs  # bench/qs_serve.py (this script's folder is on sys.path)


def f5_capture(size: int = 2_000_000, name_len: int = 500) -> bytes:
    sizes = bytes([0x22, 0x41, 0x22, 0x44, 4, 8, 0x13])
    name = (bytes(range(1, 32)) * (name_len // 31 + 1))[:name_len]
    frames = [
        encode_frame(0, 64, bytes([0xFF]) + struct.pack("<H", 740) + sizes + bytes(6)),
        encode_frame(1, 61, struct.pack("<I", 0x100) + name + b"\0"),
        encode_frame(2, 62, struct.pack("<I", 0x1000) + name + b"\0"),
        encode_frame(3, 60, struct.pack("<HI", 5, 0) + name + b"\0"),
    ]
    n, seq = sum(map(len, frames)), 4
    while n < size:
        frames.append(encode_frame(seq, 8, struct.pack("<IHII", 10 * seq, 5, 0x100, 0x1000)))
        n += len(frames[-1])
        seq += 1
    return b"".join(frames)


def f6_capture(flags: int = 8 << 20) -> bytes:
    sizes = bytes([0x22, 0x41, 0x22, 0x44, 4, 8, 0x13])
    info = bytes([0xFF]) + struct.pack("<H", 740) + sizes + bytes(6)
    return encode_frame(0, 64, info) + b"\x7e" * flags


def hwm(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def request(url: str, body: dict | None = None, origin: str = "") -> bytes:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Origin": origin} if body else {}
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=600) as r:
        return r.read()


@contextlib.contextmanager
def serve(captures: list[bytes]) -> Iterator[tuple[subprocess.Popen, str, list[int]]]:
    """A fresh `mcuprof serve` over a store holding ``captures`` as QS sessions."""
    with serve_qs(captures, "hostile") as (proc, base, sids):
        print(f"server idle: peak RSS {hwm(proc.pid):.0f} MiB")
        yield proc, base, sids


def main() -> None:
    with serve([f6_capture()]) as (proc, base, sids):
        t = time.perf_counter()
        request(f"{base}/api/sessions/{sids[0]}/replay", {"speed": "1x"}, base)
        print(f"F6 replay at 1x: started in {time.perf_counter() - t:.2f} s")
        for seconds in (5, 10, 20):
            time.sleep(seconds - (time.perf_counter() - t))
            print(f"  {seconds} s in: server peak RSS {hwm(proc.pid):.0f} MiB")
    with serve([f5_capture(), f5_capture()]) as (proc, base, sids):
        for sid in sids:
            t = time.perf_counter()
            summary = json.loads(request(f"{base}/api/qs/summary?session={sid}"))
            request(f"{base}/api/qs/log?session={sid}&q=x01&limit=10")
            body = request(f"{base}/api/qs/log.txt?session={sid}")
            longest = max(map(len, body.split(b"\n")))
            print(
                f"F5 session {sid}: {summary['lines']:,} lines; open + search + log.txt "
                f"{time.perf_counter() - t:.1f} s; log.txt {len(body):,} bytes, longest "
                f"line {longest:,} bytes; server peak RSS {hwm(proc.pid):.0f} MiB"
            )


if __name__ == "__main__":
    main()
