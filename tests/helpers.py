"""Helpers shared by test packages."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcuprof.qemu import free_port

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling Google's hosts,
# which this machine's closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "Served", "free_port", "running_serve"]


@dataclass
class Served:
    """A running `mcuprof serve` subprocess; its stdout and stderr go to ``log``."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def running_serve(
    data_dir: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    ready: Callable[[dict[str, Any]], bool] | None = None,
    timeout_s: float = 30.0,
) -> Iterator[Served]:
    """`mcuprof serve` on a free loopback port, yielded once it accepts connections and,
    when ``ready`` is given, once ``ready(/api/state)`` holds; stopped afterwards."""
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / f"serve-{port}.log"
    argv = [sys.executable, "-m", "mcuprof", "serve", "--http-port", str(port)]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [*argv, "--data-dir", str(data_dir), *extra],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**(env if env is not None else os.environ), "PYTHONUNBUFFERED": "1"},
        )
        served = Served(proc, port, log_path)
        try:
            deadline = time.monotonic() + timeout_s
            while not _answers(served, ready):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"mcuprof serve did not come up:\n{served.output()}")
                time.sleep(0.1)
            yield served
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _answers(served: Served, ready: Callable[[dict[str, Any]], bool] | None) -> bool:
    try:
        if ready is None:
            with socket.create_connection(("127.0.0.1", served.port), timeout=1):
                return True
        with urllib.request.urlopen(served.url + "api/state", timeout=2) as r:
            return ready(json.loads(r.read()))
    except OSError:
        return False
