"""Import and read-back throughput of the session store on both backends: SQLite plus
files, and PostgreSQL (a throwaway server from Debian's packages, tests/pgserver.py, on a
Unix socket, with fsync off as in the tests: a figure for the store's own code path).
Also 8 runners importing at once into PostgreSQL.

Run: .venv/bin/python bench/store.py [--packets 12000]  (706 bytes a packet: ~8.5 MB)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "backend"), str(ROOT)]

from tests.pgserver import PgServer  # noqa: E402
from tests.store.conftest import capture  # noqa: E402

from mcuprof.store import open_store  # noqa: E402


def one_backend(name: str, url: str | None, data: bytes) -> None:
    with open_store(tempfile.mkdtemp(), url, autoflush=False) as store:
        best = min(_timed(lambda: store.import_capture("bench", data)) for _ in range(3))
        sid = store.list()[0].id
        read = _timed(lambda: sum(len(c) for c in store.raw_chunks(sid)))
    mb = len(data) / 1e6
    print(
        f"{name:<11} import {mb / best:6.1f} MB/s ({best:.2f} s)   read back {mb / read:7.0f} MB/s"
    )


def eight_runners(url: str, data: bytes) -> None:
    start = threading.Barrier(8)

    def runner() -> None:
        with open_store(tempfile.mkdtemp(), url, autoflush=False) as store:
            start.wait()
            store.import_capture("runner", data)

    threads = [threading.Thread(target=runner) for _ in range(8)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - t0
    print(f"8 runners   {8 * len(data) / 1e6 / took:6.1f} MB/s together ({took:.2f} s)")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packets", type=int, default=12_000)
    args = ap.parse_args()
    data = capture(args.packets)
    print(f"capture: {len(data) / 1e6:.1f} MB, {args.packets * 50:,} records")
    one_backend("sqlite", None, data)
    server = PgServer()
    try:
        url = server.new_database()
        one_backend("postgresql", url, data)
        eight_runners(url, data)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
