"""Soak: the dashboard on the simulator at 50,000 records/s with a headless Chromium
tab open, for N minutes, sampling what would give out first over a long session.

Samples (every --every seconds): the server's RSS (anonymous and file-backed apart, and
its peak), browser RSS (every Chromium process of the tab), server CPU (cores, over the
interval), records received, kept by the profile and lost by the device, decoder errors,
the live update latency (record received -> frame drawn in the page, p50/p95 of the last
updates), the session store's size on disk, the size on disk of the profile's column
files (unnamed files under <data dir>/columns, found through the server's open file
descriptors) and the load average. With --queries each sample also asks the views a user
would (whole timeline, a zoomed one, Functions and the call tree over the last second)
and times them, so pages a query maps are seen if they stay.

At the end (after Stop and the link's drain) it checks every record the device captured
is in the profile, then prints the first and last samples, the growth rates over the
second half of the run (after warm-up), the bytes per record kept that they amount to,
and those rates carried on to one hour.

With --hostile-qs the dashboard listens on listen://127.0.0.1:PORT instead, and a QS
target (a thread of this script) connects to it and sends, beside a normal QS stream of
RTC steps on a few named objects (--rate records/s), what a broken or hostile target
would: steps and posts from ever new object and state pointers, one signal renamed
again and again, and floods of 0x7D with no flag (issue 26). The samples add the QS
health (frames, bad frames, steps, names lumped) and whether /api/state answered.

Run: .venv/bin/python bench/soak.py --minutes 10 [--rate 50000] [--queries] [--json out.json]
     .venv/bin/python bench/soak.py --minutes 10 --hostile-qs --rate 5000
Asserts nothing; prints figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
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
sys.path.insert(0, str(ROOT / "backend"))
from mcuprof.protocol.qs import encode_frame  # noqa: E402

# What the hostile QS target adds each second, beside the normal steps.
HOSTILE_NEW_STEPS = 2_000  # RTC steps on a new object and a new state each
HOSTILE_NEW_POSTS = 2_000  # QS_QF_ACTIVE_POST from a new sender each
HOSTILE_RENAMES = 1_000  # signal dictionary entries renaming one signal
HOSTILE_FLOOD = 1 << 20  # bytes of 0x7D with no flag, then a flag


class HostileQS:
    """A QS target (32-bit pointers, 4-byte timestamps) that connects to the dashboard's
    listen:// port and sends, every second, ``rate`` records of normal RTC steps plus
    the hostile parts above. Reads and drops what the dashboard sends (QS-RX)."""

    def __init__(self, port: int, rate: int) -> None:
        self.port, self.rate = port, rate
        self.seq = 0
        self.clock = 0
        self.sent_bytes = 0
        self.fresh = 0x2000_0000  # next new pointer
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _frame(self, rec: int, payload: bytes) -> bytes:
        self.seq = (self.seq + 1) & 0xFF
        return encode_frame(self.seq, rec, payload)

    def _step(self, obj: int, sig: int, state: int) -> bytes:
        """QS_QEP_DISPATCH then QS_QEP_INTERN_TRAN: one RTC step of 7 ticks."""
        self.clock += 5
        disp = self._frame(8, struct.pack("<IHII", self.clock, sig, obj, state))
        self.clock += 7
        return disp + self._frame(5, struct.pack("<IHII", self.clock, sig, obj, state))

    def _preamble(self) -> bytes:
        info = bytes([0xFF, 0xE4, 0x02, 0x22, 0x41, 0x22, 0x44, 4, 8, 0x13]) + bytes(6)
        out = [self._frame(64, info)]
        for i in range(4):
            out.append(self._frame(61, struct.pack("<I", 0x100 + i) + b"Philo_%d\0" % i))
            out.append(self._frame(62, struct.pack("<I", 0x1000 + i) + b"state_%d\0" % i))
        out.append(self._frame(60, struct.pack("<HI", 4, 0) + b"EAT_SIG\0"))
        return b"".join(out)

    def _second(self) -> list[bytes]:
        """One second of traffic, in pieces of about 64 KiB, hostile parts interleaved."""
        steps = self.rate // 2  # two records each
        frames = [self._step(0x100 + i % 4, 4, 0x1000 + i % 4) for i in range(steps // 2)]
        for _ in range(HOSTILE_NEW_STEPS):
            frames.append(self._step(self.fresh, 5, self.fresh + 8))
            self.fresh += 16
        for _ in range(HOSTILE_NEW_POSTS):
            self.clock += 1
            post = struct.pack("<IIHIBBBB", self.clock, self.fresh, 4, self.fresh + 8, 0, 0, 3, 2)
            frames.append(self._frame(14, post))
            self.fresh += 16
        for i in range(HOSTILE_RENAMES):
            name = b"RENAMED_%d\0" % (i % 2)
            frames.append(self._frame(60, struct.pack("<HI", 4, 0) + name))
        frames += [self._step(0x100 + i % 4, 4, 0x1000 + i % 4) for i in range(steps - steps // 2)]
        data = b"".join(frames)
        data += b"\x7d" * HOSTILE_FLOOD + b"\x7e"
        return [data[i : i + 65536] for i in range(0, len(data), 65536)]

    def _run(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        with sock:
            sock.setblocking(True)
            threading.Thread(target=self._drain, args=(sock,), daemon=True).start()
            sock.sendall(self._preamble())
            while not self.stop.is_set():
                started = time.monotonic()
                for piece in self._second():
                    sock.sendall(piece)
                    self.sent_bytes += len(piece)
                self.stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))

    @staticmethod
    def _drain(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while sock.recv(4096):
                pass


def proc_status(pid: int) -> dict[str, int]:
    """The memory lines of /proc/PID/status, in bytes (VmRSS, VmHWM, RssAnon, RssFile...)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            out[key] = int(value.split()[0]) * 1024
    return out


def rss_bytes(pid: int) -> int:
    return proc_status(pid).get("VmRSS", 0)


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


def open_files_bytes(pid: int, folder: Path) -> int:
    """Disk space (allocated blocks: the files are sparse) of the distinct files under
    ``folder`` that ``pid`` holds open, unlinked ones included."""
    seen: dict[tuple[int, int], int] = {}
    prefix = str(folder) + "/"
    fds = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fds):
        try:
            if not os.readlink(fds / fd).startswith(prefix):
                continue
            st = os.stat(fds / fd)
        except OSError:
            continue
        seen[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return sum(seen.values())


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def timed_queries(base: str, t0: float, t1: float) -> dict[str, float]:
    """Ask the views a user would, over the capture as it is now; wall time of each, ms."""
    last_s = f"t0={max(t0, t1 - 1e6)}&t1={t1}"
    paths = {
        "timeline_whole": f"api/timeline?t0={t0}&t1={t1}&width=1200",
        "timeline_zoomed": f"api/timeline?t0={t1 - 1e4}&t1={t1}&width=1200",
        "functions_last_s": f"api/functions?{last_s}",
        "tree_last_s": f"api/tree?{last_s}",
    }
    out = {}
    for key, path in paths.items():
        started = time.perf_counter()
        api(base, path)
        out[key] = round((time.perf_counter() - started) * 1000, 1)
    return out


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


def median(values: list[float]) -> float | None:
    return sorted(values)[len(values) // 2] if values else None


def drain(base: str, seconds: float = 60) -> dict:
    """The health after Stop, once the link has drained (the profile stops growing)."""
    deadline = time.monotonic() + seconds
    last = None
    while True:
        health = api(base, "api/state")["health"]
        if not health["profiling"] and last == health["profile_records"]:
            return health
        if time.monotonic() > deadline:
            return health
        last = health["profile_records"]
        time.sleep(1.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to run (10)")
    ap.add_argument("--rate", type=int, default=50_000, help="simulated records/s (50,000)")
    ap.add_argument("--every", type=float, default=15.0, help="seconds between samples (15)")
    ap.add_argument(
        "--queries", action="store_true", help="also ask timeline/Functions/tree each sample"
    )
    ap.add_argument("--json", help="also write every sample and the summary here")
    ap.add_argument(
        "--hostile-qs",
        action="store_true",
        help="a QS target on listen:// with normal steps plus new pointers, renames, 0x7D floods",
    )
    args = ap.parse_args()
    # A run stopped with kill still stops its server and removes its gigabytes of data.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    data_dir = Path(tempfile.mkdtemp(prefix="mcuprof-soak-"))
    columns_dir = data_dir / "columns"
    load_start = os.getloadavg()
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
        idle = proc_status(server.pid)
        hostile = None
        if args.hostile_qs:
            qs_port = free_port()
            api(base, "api/connect", {"port": f"listen://127.0.0.1:{qs_port}", "baud": 115200})
            hostile = HostileQS(qs_port, args.rate)
            hostile.thread.start()
        else:
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
                asked = time.perf_counter()
                state = api(base, "api/state")
                state_ms = round((time.perf_counter() - asked) * 1000, 1)
                health = state["health"]
                metrics = api(base, "api/metrics")
                queries = {}
                if args.queries and health["profile_records"]:
                    lo, hi = api(base, "api/timeline?width=10")["range"]
                    queries = timed_queries(base, lo, hi)
                mem = proc_status(server.pid)
                sample = {
                    "t_s": round(now - t0, 1),
                    "server_rss_mib": round(mem["VmRSS"] / MIB, 1),
                    "server_anon_mib": round(mem["RssAnon"] / MIB, 1),
                    "server_file_mib": round(mem["RssFile"] / MIB, 1),
                    "server_peak_mib": round(mem["VmHWM"] / MIB, 1),
                    "browser_rss_mib": round(browser_rss() / MIB, 1),
                    "server_cpu_cores": round((cpu - cpu_prev) / (now - t_prev), 2),
                    "received": health["received"],
                    "profile_records": health["profile_records"],
                    "loss": health["loss"],
                    "crc_errors": health["crc_errors"],
                    "latency_p50_ms": _ms(metrics["latency_p50_ms"]),
                    "latency_p95_ms": _ms(metrics["latency_p95_ms"]),
                    "store_mib": round(disk_bytes(data_dir) / MIB, 1),
                    "columns_mib": round(open_files_bytes(server.pid, columns_dir) / MIB, 1),
                    "load1": round(os.getloadavg()[0], 2),
                    "state_ms": state_ms,
                    **queries,
                }
                if hostile is not None:
                    sample["qs"] = health["qs"]
                    sample["hostile_sent_mib"] = round(hostile.sent_bytes / MIB, 1)
                samples.append(sample)
                print(json.dumps(sample), flush=True)
                cpu_prev, t_prev = cpu, now
                if now >= end:
                    break
            page.get_by_role("button", name="Stop", exact=True).click()
            final = drain(base)
            if hostile is not None:
                hostile.stop.set()
            browser.close()
        peak = proc_status(server.pid)["VmHWM"]
    finally:
        server.terminate()
        # Stop counts the stored session's records from its bytes: a long hostile QS
        # capture (hundreds of MiB of floods) takes minutes, and the server finishes it first.
        server.wait(timeout=600)
        shutil.rmtree(data_dir, ignore_errors=True)  # gigabytes an hour at the default rate

    first, last = samples[0], samples[-1]
    minutes = last["t_s"] / 60
    rest = 60 - minutes
    summary: dict = {"minutes": round(minutes, 2), "rate": args.rate}
    records_per_min = slope_per_min(samples, "profile_records")
    for key in (
        "server_rss_mib",
        "server_anon_mib",
        "server_file_mib",
        "browser_rss_mib",
        "store_mib",
        "columns_mib",
    ):
        slope = slope_per_min(samples, key)
        summary[key] = {
            "first": first[key],
            "last": last[key],
            "per_min": round(slope, 2),
            "bytes_per_record": round(slope * MIB / records_per_min, 2)
            if records_per_min
            else None,
            "hour": round(last[key] + max(0.0, slope) * rest, 1),
        }
    received = last["received"]
    p50s = [s["latency_p50_ms"] for s in samples if s["latency_p50_ms"] is not None]
    p95s = [s["latency_p95_ms"] for s in samples if s["latency_p95_ms"] is not None]
    captured = final.get("captured")
    summary.update(
        idle_rss_mib=round(idle["VmRSS"] / MIB, 1),
        server_peak_mib=round(peak / MIB, 1),
        received=received,
        records_per_s=round(received / (last["t_s"] or 1)),
        loss=last["loss"],
        loss_pct=round(100 * last["loss"] / max(1, received + last["loss"]), 4),
        crc_errors=last["crc_errors"],
        after_stop={
            "captured": captured,
            "received": final["received"],
            "profile_records": final["profile_records"],
            "lost": None if captured is None else captured - final["profile_records"],
        },
        server_cpu_cores_median=median([s["server_cpu_cores"] for s in samples]),
        state_ms_max=max(s["state_ms"] for s in samples),
        latency_p50_ms_median=median(p50s),
        latency_p95_ms_median=median(p95s),
        latency_p95_ms_max=max(p95s) if p95s else None,
        load_average_start=[round(x, 2) for x in load_start],
        load1_median=median([s["load1"] for s in samples]),
        load_average_end=[round(x, 2) for x in os.getloadavg()],
    )
    for key in ("timeline_whole", "timeline_zoomed", "functions_last_s", "tree_last_s"):
        times = [s[key] for s in samples if key in s]
        if times:
            summary[f"{key}_ms"] = {"median": median(times), "max": max(times)}

    target = "a hostile QS target (listen://)" if args.hostile_qs else "the simulator"
    print(
        f"\nsoak: {minutes:.1f} min, {target} at {args.rate:,} records/s, one Chromium tab; "
        f"/api/state answered every sample, slowest {summary['state_ms_max']} ms"
    )
    if args.hostile_qs:
        print(f"  QS health at the end {last['qs']}; sent {last['hostile_sent_mib']} MiB")
    after = summary["after_stop"]
    print(
        f"  records received   {received:,} ({summary['records_per_s']:,}/s); "
        f"device loss {last['loss']:,} ({summary['loss_pct']}%); CRC errors {last['crc_errors']}"
    )
    print(
        f"  after Stop         captured {after['captured']:,}, received {after['received']:,}, "
        f"in the profile {after['profile_records']:,}: lost {after['lost']}"
        if captured is not None
        else f"  after Stop         in the profile {after['profile_records']:,} (no device count)"
    )
    print(
        f"  server CPU         median {summary['server_cpu_cores_median']} cores; "
        f"latency p50 median {summary['latency_p50_ms_median']} ms, p95 median "
        f"{summary['latency_p95_ms_median']} ms, worst {summary['latency_p95_ms_max']} ms"
    )
    print(
        f"  server RSS         idle {summary['idle_rss_mib']} MiB; peak (VmHWM) "
        f"{summary['server_peak_mib']} MiB"
    )
    for key, label in (
        ("server_rss_mib", "server RSS"),
        ("server_anon_mib", "  anonymous"),
        ("server_file_mib", "  file-backed"),
        ("browser_rss_mib", "browser RSS"),
        ("store_mib", "store on disk"),
        ("columns_mib", "column files"),
    ):
        s = summary[key]
        per_rec = "" if s["bytes_per_record"] is None else f" ({s['bytes_per_record']} B/record)"
        print(
            f"  {label:<18} {s['first']} -> {s['last']} MiB, "
            f"{s['per_min']:+} MiB/min late in the run{per_rec}; one hour: ~{s['hour']} MiB"
        )
    for key in ("timeline_whole", "timeline_zoomed", "functions_last_s", "tree_last_s"):
        if f"{key}_ms" in summary:
            q = summary[f"{key}_ms"]
            print(f"  query {key:<12} median {q['median']} ms, worst {q['max']} ms")
    print(
        f"  load average       start {summary['load_average_start']}, median (1 min) "
        f"{summary['load1_median']}, end {summary['load_average_end']} (2 cores)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": samples, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
