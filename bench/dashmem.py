"""The dashboard's memory at scale (issue 13): a stored session of N records opened as a
user opens it (the Sessions tab's Open: a replay at max speed through the live path:
reader thread, decoder, ingest, the 10 Hz ticker), then every view asked once.

For each code tree (this checkout, and ``--baseline`` e.g. a checkout of main) it starts
``mcuprof serve`` on a fresh data dir holding the capture, opens the session, samples
the server's RSS every 0.2 s while it plays, and prints the open time, records/s, peak
RSS (the kernel's VmHWM), bytes/record above the idle server, and whether the views'
answers (flame top-down and bottom-up, Functions, call tree, timeline, /api/call, a
selected window) are the same in both trees.

With ``--browser`` a headless Chromium keeps the page open on the Flame tab meanwhile
(the live updates the page draws are then part of the load).

Run: .venv/bin/python bench/dashmem.py --records 35M [--baseline /work/main] [--browser]
Asserts nothing about time or memory; prints figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import CHROMIUM_ARGS, ROOT, api, free_port, wait_for_server
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.store import SessionStore

MIB = 1 << 20
PER_PACKET = 100
# (depth, entry offset, duration, function) of one period, in exit order: main > (a > (b,
# c), d > e), the shape of bench/scale.py's regular capture.
PERIOD = [(2, 2, 3, 2), (2, 6, 3, 3), (1, 1, 9, 1), (2, 12, 2, 5), (1, 11, 5, 4), (0, 0, 18, 0)]


def write_capture(path: Path, n: int) -> None:
    """N records of the repeating six-call tree, written a chunk at a time."""
    p = np.array(PERIOD, np.int64)
    step = 6 * 100_000
    with path.open("wb") as f:
        f.write(encode_metadata(Metadata(168_000_000, 1_000_000, 0, "dashmem")))
        for start in range(0, n, step):
            k = min(step, n - start)
            reps = -(-k // 6)
            base = np.repeat((start // 6 + np.arange(reps, dtype=np.int64)) * 20, 6)
            recs = np.empty(reps * 6, RECORD_DTYPE)
            recs["depth"] = np.tile(p[:, 0], reps)
            recs["entry_time"] = (base + np.tile(p[:, 1], reps)) & 0xFFFFFFFF
            recs["duration"] = np.tile(p[:, 2], reps)
            recs["func_addr"] = 0x0800_0101 + 0x40 * np.tile(p[:, 3], reps)
            recs = recs[:k]
            f.write(
                b"".join(
                    encode_profile_data(recs[i : i + PER_PACKET]) for i in range(0, k, PER_PACKET)
                )
            )


def status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:12]


def views(base: str, pid: int | None = None) -> dict[str, str]:
    """Every view once; a digest of each answer (compared across trees)."""
    lo, hi = api(base, "api/state")["range"]
    mid = lo + 20 * int((hi - lo) / 40)  # a period's start: depth 1 runs at +1..+10
    win = f"t0={mid:.3f}&t1={mid + 5000:.3f}"
    out = {}
    for name, path in {
        "flame top-down": "api/flame",
        "flame bottom-up": "api/flame?mode=bottom-up",
        "functions": "api/functions",
        "call tree": "api/tree",
        "timeline whole": f"api/timeline?t0={lo}&t1={hi}&width=1200",
        "timeline zoom": f"api/timeline?t0={mid}&t1={mid + 2000}&width=1200",
        "call details": f"api/call?depth=1&t={mid + 3}",
        "window functions": f"api/functions?{win}",
        "window flame": f"api/flame?{win}",
    }.items():
        answer = api(base, path)
        if isinstance(answer, dict):
            answer.pop("elapsed_ms", None)
        out[name] = digest(answer)
        if pid is not None and os.environ.get("DASHMEM_DEBUG"):
            print(name, status_kib(pid, "VmRSS") // 1024, status_kib(pid, "VmHWM") // 1024)
    return out


def open_session(tree: Path, store_dir: Path, sid: int, n: int, browser: bool) -> dict:
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "PYTHONPATH": str(tree / "backend")}
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "mcuprof", "serve", "--http-port", str(port)),
            *("--data-dir", str(store_dir), "--no-connect"),
        ],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pw = page = None
    try:
        wait_for_server(base)
        if browser:
            from playwright.sync_api import sync_playwright

            pw = sync_playwright().start()
            chromium = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = chromium.new_page(viewport={"width": 1440, "height": 900})
            page.goto(base)
            page.locator("#tab-flame").click()
        idle = status_kib(server.pid, "VmRSS") * 1024
        t0 = time.monotonic()
        api(base, f"api/sessions/{sid}/replay", {"speed": "max"})
        samples = []
        while True:
            time.sleep(0.2)
            rss = status_kib(server.pid, "VmRSS") * 1024
            t = time.monotonic() - t0
            st = api(base, "api/state")
            rp = st["health"].get("replay")
            samples.append((t, rss))
            if rp is None and st.get("range") is not None:
                break
            if t > 7200:
                raise SystemExit("replay did not finish in 2 hours")
        took = time.monotonic() - t0
        open_peak = status_kib(server.pid, "VmHWM") * 1024
        answers = views(base, server.pid)
        peak = status_kib(server.pid, "VmHWM") * 1024
        end_rss = status_kib(server.pid, "VmRSS") * 1024
        return {
            "tree": str(tree),
            "records": n,
            "open_s": round(took, 2),
            "records_per_s": round(n / took),
            "idle_mib": round(idle / MIB, 1),
            "peak_mib": round(peak / MIB, 1),
            "open_peak_mib": round(open_peak / MIB, 1),
            "max_sampled_mib": round(max(r for _, r in samples) / MIB, 1),
            "after_views_mib": round(end_rss / MIB, 1),
            "bytes_per_record": round((peak - idle) / n, 2),
            "views": answers,
        }
    finally:
        if pw is not None:
            pw.stop()
        server.terminate()
        server.wait(30)


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * scale)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="10M", help="records in the stored session (10M)")
    ap.add_argument("--baseline", type=Path, help="another checkout to run the same way")
    ap.add_argument("--browser", action="store_true", help="keep a Chromium page open")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    n = _count(args.records)
    work = Path(tempfile.mkdtemp(prefix="mcuprof-dashmem-"))
    capture = work / "capture.bin"
    t = time.monotonic()
    write_capture(capture, n)
    size = capture.stat().st_size
    print(f"capture: {n:,} records, {size / MIB:,.0f} MiB, made in {time.monotonic() - t:.0f} s")
    trees = [ROOT] + ([args.baseline.resolve()] if args.baseline else [])
    results = []
    for tree in trees:
        store_dir = work / f"data-{len(results)}"
        with SessionStore(store_dir) as store:
            # Recorded as the live path records (an import is capped at 1 GiB).
            writer = store.create(
                "dashmem", metadata=Metadata(168_000_000, 1_000_000, 0, "dashmem")
            )
            with capture.open("rb") as f:
                while chunk := f.read(1 << 22):
                    writer.append(chunk)
            sid = writer.finish().id
        res = open_session(tree, store_dir, sid, n, args.browser)
        res["capture_mib"] = round(size / MIB, 1)
        results.append(res)
        print(json.dumps(res), flush=True)
        subprocess.run(["rm", "-rf", str(store_dir)], check=False)
    capture.unlink()
    print()
    print(f"{'tree':<28} {'open s':>8} {'rec/s':>11} {'idle MiB':>9} {'peak MiB':>9} {'B/rec':>7}")
    for r in results:
        print(
            f"{r['tree'][-28:]:<28} {r['open_s']:>8} {r['records_per_s']:>11,} "
            f"{r['idle_mib']:>9} {r['peak_mib']:>9} {r['bytes_per_record']:>7}"
        )
    if len(results) == 2:
        same = results[0]["views"] == results[1]["views"]
        diff = [k for k in results[0]["views"] if results[0]["views"][k] != results[1]["views"][k]]
        print("views identical in both trees" if same else f"views differ: {diff}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
