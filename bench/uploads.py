"""Six parallel uploads of large ELFs: the peak memory of the server and its ELF readers.

Each upload is the sample ELF padded to --mib MiB (distinct padding, so none is a
duplicate). The peak is the largest sum of RSS over `mcuprof serve` and every process
below it (the ELF reader children), sampled every 10 ms.

Run: .venv/bin/python bench/uploads.py [--mib 60] [--count 6] [--checkout DIR]
``--checkout`` serves from another checkout's .venv (the baseline: before the budget).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import ROOT, free_port, wait_for_server
from soak import MIB, descendants, rss_bytes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=60, help="size of each upload (60)")
    ap.add_argument("--count", type=int, default=6, help="parallel uploads (6)")
    ap.add_argument("--checkout", type=Path, default=ROOT, help="checkout whose .venv serves")
    args = ap.parse_args()

    sample = (ROOT / "sample_elfs" / "mcuprof-demo.elf").read_bytes()
    bodies = [sample + bytes([i + 1]) * (args.mib * MIB - len(sample)) for i in range(args.count)]
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    python = args.checkout / ".venv" / "bin" / "python"
    data_dir = tempfile.mkdtemp(prefix="mcuprof-up-")
    server = subprocess.Popen(
        [
            *(str(python), "-m", "mcuprof", "serve", "--http-port", str(port)),
            *("--data-dir", data_dir, "--no-connect"),
        ],
        cwd=args.checkout,
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for_server(base)
        peak = [0]
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                total = 0
                for pid in [server.pid, *descendants(server.pid)]:
                    with contextlib.suppress(OSError):
                        total += rss_bytes(pid)
                peak[0] = max(peak[0], total)
                time.sleep(0.01)

        statuses: list[int] = []

        def upload(i: int) -> None:
            req = urllib.request.Request(
                f"{base}api/elfs?name=big{i}.elf",
                data=bodies[i],
                headers={"Origin": base.rstrip("/"), "Content-Type": "application/octet-stream"},
                method="POST",
            )
            try:
                with urllib.request.urlopen(req, timeout=300) as r:
                    statuses.append(r.status)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)

        idle = rss_bytes(server.pid)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        began = time.monotonic()
        threads = [threading.Thread(target=upload, args=(i,)) for i in range(args.count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - began
        done.set()
        watcher.join()
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(
        f"{args.count} parallel uploads of {args.mib} MiB ({args.checkout}): "
        f"peak RSS {peak[0] / MIB:,.0f} MiB (server idle {idle / MIB:,.0f} MiB), "
        f"{took:.1f} s, statuses {sorted(statuses)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
