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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    with serve() as (_proc, base, tport, udp):
        target = Target(tport)
        try:
            time.sleep(2)  # warm up
            for reading in (None, False, True, None):
                if reading is None:  # before and after: the machine's speed drifts
                    print(f"no front ends: {rate(base, args.seconds):,.0f} frames/s")
                    continue
                got = [0] * FRONT_ENDS
                socks = attach(udp, reading, got)
                time.sleep(1)
                before = sum(got)
                frames = rate(base, args.seconds)
                each = (sum(got) - before) / FRONT_ENDS / args.seconds
                what = "reading everything" if reading else "never reading"
                print(
                    f"{FRONT_ENDS} front ends {what}: {frames:,.0f} frames/s"
                    + (f"; each front end read {each:,.0f} records/s" if reading else "")
                )
                for s in socks:
                    s.sendto(b"\x00\x81", ("127.0.0.1", udp))  # DETACH
                    s.close()
            log = urllib.request.urlopen(base + "/api/log", timeout=60).read().decode()
            for entry in json.loads(log)["entries"]:
                if "front end" in entry["message"] and "dropped" in entry["message"]:
                    print("log:", entry["message"])
        finally:
            target.close()


if __name__ == "__main__":
    main()
