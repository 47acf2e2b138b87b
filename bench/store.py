"""Import and read-back throughput of the session store on both backends: SQLite plus
files, and PostgreSQL (a throwaway server from Debian's packages, tests/pgserver.py, on a
Unix socket, with fsync off as in the tests: a figure for the store's own code path).
Also 8 runners importing at once into PostgreSQL.

Compact raw storage (issue 33, item 6), on the realistic capture: what the simulated board
sends at 50,000 calls a second (tests/store/conftest.py: simulated_capture), appended as
a link's reader delivers it, --append bytes at a time. Stored bytes a record, and the time
to first view of the stored session (Open: the kind's load_stored into a profile on disk)
before (HEAD's path: the uncompressed raw/N.raw mapped and decoded) and after (raw/N.zst
decoded as a stream through raw_chunks), alternated in one run, best of --runs.

Run: .venv/bin/python bench/store.py [--packets 12000] [--seconds 40] [--no-pg]
(706 bytes a packet: ~8.5 MB; 40 s of simulated capture: 2M records, 28 MB as received)
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
from tests.store.conftest import capture, simulated_capture  # noqa: E402

from mcuprof import kinds  # noqa: E402
from mcuprof.store import SessionStore, open_store  # noqa: E402


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


def compact_raw(seconds: float, append: int, runs: int) -> None:
    data, records = simulated_capture(seconds, baud=10_000_000)
    print(f"realistic capture: {records:,} records, {len(data) / records:.2f} bytes a record")
    with SessionStore(tempfile.mkdtemp(), autoflush=False) as store:
        writer = store.create("realistic", kind="miniprofiler")
        took = _timed(
            lambda: [writer.append(data[i : i + append]) for i in range(0, len(data), append)]
        )
        writer.finish()
        sid = writer.id
        stored = store.raw_path(sid).stat().st_size
        print(
            f"stored      {stored / records:.2f} bytes a record ({stored / 1e6:.1f} MB, "
            f"appends of {append:,} B at {len(data) / 1e6 / took:.0f} MB/s)"
        )
        assert store.raw(sid) == data  # byte-identical
        legacy = store.raw_dir / "legacy.raw"  # the same bytes as HEAD stored them
        legacy.write_bytes(data)
        kind = kinds.get("miniprofiler")
        before, after = [], []
        for _ in range(runs):
            before.append(_timed(lambda: _mapped_load(store, legacy)))
            after.append(_timed(lambda: kind.load_stored(store, sid, None)))
    print(
        f"first view  before (mapped .raw) {min(before):.2f} s   "
        f"after (.zst stream) {min(after):.2f} s   (best of {runs}, alternated)"
    )


def _mapped_load(store, path: Path):
    """HEAD's MiniProfiler.load_stored: the raw file mapped, decoded a CHUNK at a time
    into a profile on disk, pages dropped as they are decoded."""
    import mmap

    from mcuprof.capture import CHUNK
    from mcuprof.profile import load_capture
    from mcuprof.profile.columns import Spill

    spill = Spill(store.data_dir / "columns")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:

        def leave(done: int, total: int, records: int) -> None:
            mm.madvise(mmap.MADV_DONTNEED)

        with memoryview(mm) as view:
            return load_capture(view, None, progress=leave, chunk=CHUNK, spill=spill).profile


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packets", type=int, default=12_000)
    ap.add_argument("--seconds", type=float, default=40.0, help="of simulated capture")
    ap.add_argument("--append", type=int, default=2048, help="bytes a writer append")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-pg", action="store_true", help="skip the PostgreSQL cells")
    args = ap.parse_args()
    compact_raw(args.seconds, args.append, args.runs)
    data = capture(args.packets)
    print(f"capture: {len(data) / 1e6:.1f} MB, {args.packets * 50:,} records")
    one_backend("sqlite", None, data)
    if args.no_pg:
        return 0
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
