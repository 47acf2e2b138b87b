"""A fresh `mcuprof serve` over a session store holding given QS captures, for the
benchmarks that measure the server end to end (bench/qs_monitor.py, bench/qs_hostile.py)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from mcuprof.store import SessionStore


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_qs(
    captures: list[bytes], name: str = "bench"
) -> Iterator[tuple[subprocess.Popen, str, list[int]]]:
    """(server process, base URL, session ids), once the server answers."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        sids = []
        for data in captures:
            writer = store.create(name, source="import", kind="qs")
            writer.append(data)
            sids.append(writer.finish().id)
        store.close()
        port = free_port()
        exe = str(Path(sys.executable).with_name("mcuprof"))
        cmd = [exe, "serve", "--no-connect", "--data-dir", tmp, "--http-port", str(port)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(base + "/api/qs/summary", timeout=120):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            yield proc, base, sids
        finally:
            proc.terminate()
            proc.wait(timeout=10)
