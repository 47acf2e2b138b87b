"""Soak: the dashboard on the simulator at 50,000 records/s with a headless Chromium
tab open, for N minutes, sampling what would give out first over a long session.

Samples (every --every seconds): server RSS, browser RSS (every Chromium process of
the tab), server CPU (cores, over the interval), records received and device loss,
decoder errors, the live update latency (record received -> frame drawn in the page,
p50/p95 of the last updates) and the session store's size on disk.

At the end it prints the first and last samples, the growth rates over the second half
of the run (after warm-up) and those rates carried on to one hour.

Run: .venv/bin/python bench/soak.py --minutes 10 [--rate 50000] [--json out.json]
Asserts nothing; prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import (
    CHROMIUM_ARGS,
    FLAME_DRAWN,
    ROOT,
    api,
    connect_simulator,
    cpu_seconds,
    free_port,
    wait_for_server,
)

MIB = 1 << 20


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the Playwright driver's Chromium and its helpers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def browser_rss() -> int:
    total = 0
    for pid in descendants(os.getpid()):
        try:
            if b"chrom" in Path(f"/proc/{pid}/cmdline").read_bytes():
                total += rss_bytes(pid)
        except OSError:
            continue
    return total


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def slope_per_min(samples: list[dict], key: str) -> float:
    """Least-squares growth of ``key`` per minute over the second half of the run."""
    half = samples[len(samples) // 2 :]
    if len(half) < 2:
        return 0.0
    xs = [s["t_s"] / 60 for s in half]
    ys = [s[key] for s in half]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to run (10)")
    ap.add_argument("--rate", type=int, default=50_000, help="simulated records/s (50,000)")
    ap.add_argument("--every", type=float, default=15.0, help="seconds between samples (15)")
    ap.add_argument("--json", help="also write every sample and the summary here")
    args = ap.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    data_dir = Path(tempfile.mkdtemp(prefix="mcuprof-soak-"))
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "mcuprof", "serve", "--http-port", str(port)),
            *("--data-dir", str(data_dir), "--no-connect"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    samples: list[dict] = []
    try:
        wait_for_server(base)
        connect_simulator(base, args.rate)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(base)
            page.get_by_role("button", name="Start", exact=True).click()
            page.wait_for_function(FLAME_DRAWN, timeout=20_000)
            t0 = time.monotonic()
            cpu_prev, t_prev = cpu_seconds(server.pid), t0
            end = t0 + args.minutes * 60
            while True:
                time.sleep(max(0.0, min(args.every, end - time.monotonic())))
                now = time.monotonic()
                cpu = cpu_seconds(server.pid)
                health = api(base, "api/state")["health"]
                metrics = api(base, "api/metrics")
                sample = {
                    "t_s": round(now - t0, 1),
                    "server_rss_mib": round(rss_bytes(server.pid) / MIB, 1),
                    "browser_rss_mib": round(browser_rss() / MIB, 1),
                    "server_cpu_cores": round((cpu - cpu_prev) / (now - t_prev), 2),
                    "received": health["received"],
                    "loss": health["loss"],
                    "crc_errors": health["crc_errors"],
                    "latency_p50_ms": _ms(metrics["latency_p50_ms"]),
                    "latency_p95_ms": _ms(metrics["latency_p95_ms"]),
                    "disk_mib": round(disk_bytes(data_dir) / MIB, 1),
                }
                samples.append(sample)
                print(json.dumps(sample), flush=True)
                cpu_prev, t_prev = cpu, now
                if now >= end:
                    break
            page.get_by_role("button", name="Stop", exact=True).click()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)  # 2.4 GiB an hour at the default rate

    first, last = samples[0], samples[-1]
    minutes = last["t_s"] / 60
    rest = 60 - minutes
    summary = {"minutes": round(minutes, 2), "rate": args.rate}
    for key in ("server_rss_mib", "browser_rss_mib", "disk_mib"):
        slope = slope_per_min(samples, key)
        summary[key] = {
            "first": first[key],
            "last": last[key],
            "per_min": round(slope, 2),
            "hour": round(last[key] + max(0.0, slope) * rest, 1),
        }
    received = last["received"]
    cpus = [s["server_cpu_cores"] for s in samples]
    p95s = [s["latency_p95_ms"] for s in samples if s["latency_p95_ms"] is not None]
    summary.update(
        received=received,
        records_per_s=round(received / (last["t_s"] or 1)),
        loss=last["loss"],
        loss_pct=round(100 * last["loss"] / max(1, received + last["loss"]), 4),
        crc_errors=last["crc_errors"],
        server_cpu_cores_median=sorted(cpus)[len(cpus) // 2],
        latency_p95_ms_median=sorted(p95s)[len(p95s) // 2] if p95s else None,
        latency_p95_ms_max=max(p95s) if p95s else None,
    )
    print(f"\nsoak: {minutes:.1f} min at {args.rate:,} records/s with one Chromium tab")
    print(
        f"  records received   {received:,} ({summary['records_per_s']:,}/s); "
        f"device loss {last['loss']:,} ({summary['loss_pct']}%); CRC errors {last['crc_errors']}"
    )
    print(
        f"  server CPU         median {summary['server_cpu_cores_median']} cores; "
        f"latency p95 median {summary['latency_p95_ms_median']} ms, "
        f"worst {summary['latency_p95_ms_max']} ms"
    )
    for key, label in (
        ("server_rss_mib", "server RSS"),
        ("browser_rss_mib", "browser RSS"),
        ("disk_mib", "store on disk"),
    ):
        s = summary[key]
        print(
            f"  {label:<18} {s['first']} -> {s['last']} MiB, "
            f"{s['per_min']:+} MiB/min late in the run; one hour: ~{s['hour']} MiB"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": samples, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
