"""QSPY front ends and the capture's rate (issue 35, finding 8): a real `mcuprof serve`
on listen:// with --qspy-udp, a TCP target sending the DPP reference capture's records
as fast as the server reads them, and the frames the server decodes per second with 0
front ends attached, with 8 that never read, and with 8 that read everything.

Run: .venv/bin/python bench/qs_frontends.py [--seconds S]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from qs_serve import free_port  # bench/qs_serve.py (this script's folder is on sys.path)

CAPTURE = Path("/work/shared/reference/qs/dpp-posix64.bin")
FRONT_ENDS = 8


def state(base: str) -> dict:
    with urllib.request.urlopen(base + "/api/state", timeout=60) as r:
        return json.loads(r.read())


@contextlib.contextmanager
def serve() -> Iterator[tuple[subprocess.Popen, str, int, int]]:
    """(server, base URL, target TCP port, front-end UDP port)."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        exe = str(Path(sys.executable).with_name("mcuprof"))
        cmd = [exe, "serve", "--port", "listen://127.0.0.1:0", "--qspy-udp", "0",
               "--data-dir", tmp, "--http-port", str(port)]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        base = f"http://127.0.0.1:{port}"
        try:
            udp = None
            while udp is None:
                line = proc.stdout.readline()
                if not line:
                    raise SystemExit("mcuprof serve ended")
                m = re.search(r"QSPY front ends on UDP [\d.]+:(\d+)", line)
                udp = int(m.group(1)) if m else None
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            deadline = time.monotonic() + 30
            while True:
                try:
                    where = state(base)["device"].get("listening_on")
                    if where:
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                time.sleep(0.1)
            yield proc, base, int(where.rsplit(":", 1)[1]), udp
        finally:
            proc.terminate()
            proc.wait(timeout=10)


class Target:
    """Sends the reset sequence, then the capture's records over and over."""

    def __init__(self, port: int) -> None:
        frames = CAPTURE.read_bytes().split(b"\x7e")
        self.hello = b"\x7e".join(frames[:100]) + b"\x7e"
        self.body = b"\x7e".join(frames[100:-1]) + b"\x7e"
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(self.hello)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sock.sendall(self.body)
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(timeout=5)


def attach(udp: int, reading: bool, got: list[int]) -> list[socket.socket]:
    """Front ends on both channels; ``got[i]``: binary record packets front end i read."""
    socks = []
    for i in range(FRONT_ENDS):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"\x00\x80\x03", ("127.0.0.1", udp))  # ATTACH, binary and text
        socks.append(s)
        if reading:
            threading.Thread(target=_drain, args=(s, got, i), daemon=True).start()
    return socks


def _drain(s: socket.socket, got: list[int], i: int) -> None:
    with contextlib.suppress(OSError):
        while packet := s.recv(65536):
            got[i] += packet[1] not in (0, 0x80)


def rate(base: str, seconds: float) -> float:
    frames = lambda: state(base)["health"]["qs"]["frames"]  # noqa: E731
    t0, f0 = time.monotonic(), frames()
    time.sleep(seconds)
    return (frames() - f0) / (time.monotonic() - t0)


def measure(base: str, udp: int, reading: bool | None, seconds: float) -> tuple[float, float]:
    """(frames/s the server decoded, records/s each front end read) in one phase."""
    if reading is None:
        return rate(base, seconds), 0.0
    got = [0] * FRONT_ENDS
    socks = attach(udp, reading, got)
    time.sleep(1)
    before = sum(got)
    frames = rate(base, seconds)
    each = (sum(got) - before) / FRONT_ENDS / seconds
    for s in socks:
        s.sendto(b"\x00\x81", ("127.0.0.1", udp))  # DETACH
        s.close()
    return frames, each


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with serve() as (_proc, base, tport, udp):
        target = Target(tport)
        try:
            time.sleep(2)  # warm up
            # Each phase with front ends beside one without, in turn: the machine drifts.
            ratios: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.rounds):
                for reading in (False, True):
                    alone, _ = measure(base, udp, None, args.seconds)
                    frames, each = measure(base, udp, reading, args.seconds)
                    ratios[reading].append(frames / alone)
                    what = "reading everything" if reading else "never reading"
                    print(
                        f"no front ends {alone:,.0f} frames/s; {FRONT_ENDS} front ends "
                        f"{what} {frames:,.0f} frames/s ({100 * frames / alone:.0f}%)"
                        + (f", each read {each:,.0f} records/s" if reading else "")
                    )
            for reading, values in ratios.items():
                what = "reading everything" if reading else "never reading"
                print(
                    f"median, {FRONT_ENDS} front ends {what}: "
                    f"{100 * statistics.median(values):.0f}% of the rate without them"
                )
            last = "(nothing said)"
            log = urllib.request.urlopen(base + "/api/log", timeout=60).read().decode()
            for entry in json.loads(log)["entries"]:
                if "front end" in entry["message"] and "not forwarded" in entry["message"]:
                    last = entry["message"]
            print("log:", last)
        finally:
            target.close()


if __name__ == "__main__":
    main()
