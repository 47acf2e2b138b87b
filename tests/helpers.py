"""Helpers shared by test packages."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
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

import pytest

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

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "Served", "built_once", "free_port", "running_serve"]


def built_once(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    build: Callable[[Path], None],
) -> Path:
    """A directory that ``build`` fills once per test run, however many workers run it.

    Under pytest-xdist each worker has its own basetemp inside the run's; the workers
    share the run's directory, and the first to take the lock builds while the others
    wait and reuse its output. A failed build is not marked as built, so the next worker
    that needs it starts afresh (and fails as loudly).
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    out = base / name
    with (base / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".built").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            build(out)
            (out / ".built").touch()
    return out


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
