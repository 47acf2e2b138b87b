"""Time to first view of a stored session in the browser (issue 33, item 2): from the
click on the Sessions tab's Open to the drawn flame graph, then to the Functions tab's
rows, and to the end of the calls' load (the timeline's data).

It makes a MiniProfiler capture of N records (a simulated trace of --calls calls of the
sample ELF's functions, interrupts and return addresses included, tiled in time: about as
many distinct call paths as calls, so --calls sets the flame graph's size), imports
it with `mcuprof sessions import` (which keeps its summary) into a data directory, both
cached under --cache, then for each repeat starts `mcuprof serve` on that directory
(the sample ELF, no device), opens the page in Chromium and opens the session as a user
does. ``--plain`` also times the same open with the kept aggregate taken out of the
summary (the open then loads every call before the first view, as before), in the same
run; the aggregate is put back after.

Run: .venv/bin/python bench/open.py [--records 36M] [--calls 2000] [--repeats 5] [--plain]
Prints the median and max of each figure; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import CHROMIUM_ARGS, ROOT, api, free_port, wait_for_server
from mcuprof.history.summary import VERSION
from mcuprof.paths import default_elf
from mcuprof.profile.synth import addresses, generate
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.store import SessionStore
from mcuprof.symbols import SymbolTable

PER_PACKET = 100
RECS_PER_WRITE = 1_000_000


def write_capture(path: Path, n: int, calls: int) -> None:
    """N records: one simulated trace over the sample ELF's functions, tiled in time."""
    rng = random.Random(1)
    ranges = [(f.start, f.end) for f in SymbolTable.from_elf(default_elf()).functions]
    trace = generate(rng, len(ranges), calls, isr_funcs=(0, 1), isr_rate=0.1, max_depth=10)
    addrs = addresses(rng, trace, ranges, style="mixed", thumb=True)
    span = int((trace.entry + trace.duration).max()) + 10
    tmp = path.with_suffix(".part")
    with tmp.open("wb") as f:
        f.write(encode_metadata(Metadata(168_000_000, 1_000_000, 0, "bench-open")))
        for start in range(0, n, RECS_PER_WRITE):
            k = min(RECS_PER_WRITE, n - start)
            idx = np.arange(start, start + k, dtype=np.int64)
            rep, i = np.divmod(idx, len(trace))
            recs = np.empty(k, RECORD_DTYPE)
            recs["func_addr"] = addrs[i]
            recs["entry_time"] = (trace.entry[i] + rep * span) & 0xFFFFFFFF
            recs["duration"] = trace.duration[i]
            recs["depth"] = trace.depth[i]
            f.write(b"".join(encode_profile_data(recs[j : j + PER_PACKET])
                             for j in range(0, k, PER_PACKET)))  # fmt: skip
    tmp.rename(path)


def stored_session(cache: Path, n: int, calls: int) -> tuple[Path, int]:
    """The data directory holding the capture as a session with its summary (cached)."""
    cache.mkdir(parents=True, exist_ok=True)
    capture = cache / f"capture-{n}-{calls}.bin"
    if not capture.exists():
        t = time.monotonic()
        write_capture(capture, n, calls)
        print(f"wrote {capture} ({capture.stat().st_size:,} bytes) in {time.monotonic() - t:.0f} s")
    data = cache / f"data-{n}-{calls}"
    done = data / "bench-open.json"
    if done.exists():
        return data, json.loads(done.read_text())["session"]
    t = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "mcuprof", "sessions", "import", "--data-dir", str(data),
         "--elf", str(default_elf()), "--json", str(capture)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "backend")},
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    sid = int(json.loads(out.stdout)["id"])
    print(f"imported session {sid} with its summary in {time.monotonic() - t:.0f} s")
    done.write_text(json.dumps({"session": sid}))
    return data, sid


def set_view(data: Path, sid: int, keep: dict | None) -> dict | None:
    """Take the kept aggregate out of the session's summary (``keep`` None), or put
    ``keep`` back; returns what was there."""
    with SessionStore(data) as store:
        summary = store.summary(sid, VERSION)
        if summary is None:
            raise SystemExit(f"session {sid} has no summary: remove {data} and run again")
        was = summary.get("view")
        summary["view"] = keep
        store.save_summary(sid, VERSION, summary)
    return was


FLAME_DRAWN = """() => {
  const area = document.getElementById("flame-area");
  return area.style.visibility === "visible" && document.getElementById("flame-info").textContent;
}"""
FUNCTION_ROWS = "() => document.querySelectorAll('#functions-table tbody tr[data-fid]').length > 0"
NEXT_FRAME = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


class Details:
    """The session's details as the page asks for them (their counts read the whole
    capture: tens of seconds at 36M records): until they have answered, the panel
    with Open is still being drawn."""

    def __init__(self, page, path: str) -> None:
        self.path, self.asked, self.answered = path, 0, 0
        page.on("request", lambda r: self._count(r, "asked"))
        page.on("requestfinished", lambda r: self._count(r, "answered"))
        page.on("requestfailed", lambda r: self._count(r, "answered"))
        self.page = page

    def _count(self, request, what: str) -> None:
        if request.url.endswith(self.path):
            setattr(self, what, getattr(self, what) + 1)

    def wait(self) -> None:
        while not (self.asked and self.answered == self.asked):
            self.page.wait_for_timeout(100)
        self.page.wait_for_timeout(300)


def one_open(browser, data: Path, sid: int) -> dict[str, float]:
    """Serve the data directory, open the session in a fresh page; the seconds from the
    click on Open to each view."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    server = subprocess.Popen(
        [sys.executable, "-m", "mcuprof", "serve", "--http-port", str(port), "--data-dir",
         str(data), "--no-connect", "--elf", str(default_elf())],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "backend")},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    page = None
    try:
        wait_for_server(base)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        details = Details(page, f"/api/sessions/{sid}")
        page.goto(base)
        page.locator("#tab-sessions").click()
        page.locator(f"#sessions-table tr[data-id='{sid}']").click()
        details.wait()  # a user clicks Open on the details they see
        t0 = time.perf_counter()
        page.locator("#sess-open").click()
        page.wait_for_function(FLAME_DRAWN, polling="raf", timeout=600_000)
        page.evaluate(NEXT_FRAME)
        flame = time.perf_counter() - t0
        page.locator("#tab-functions").click()
        page.wait_for_function(FUNCTION_ROWS, polling="raf", timeout=600_000)
        functions = time.perf_counter() - t0
        while api(base, "api/state")["health"]["replay"] is not None:
            time.sleep(0.05)
        loaded = time.perf_counter() - t0
        return {"flame": flame, "functions": functions, "loaded": loaded}
    finally:
        if page is not None:
            page.close()
        server.terminate()
        server.wait(30)


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * scale)


def report(label: str, runs: list[dict[str, float]]) -> None:
    cells = []
    for key in ("flame", "functions", "loaded"):
        xs = [r[key] for r in runs]
        cells.append(f"{key} median {statistics.median(xs):.2f} s, max {max(xs):.2f} s")
    print(f"{label}: " + "; ".join(cells))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="36M", help="records in the stored session (36M)")
    ap.add_argument("--calls", type=int, default=2000, help="the trace tiled (2000 calls)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/mcuprof-bench-open"))
    ap.add_argument("--plain", action="store_true", help="also time the open without it")
    args = ap.parse_args()
    n = _count(args.records)
    data, sid = stored_session(args.cache, n, args.calls)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        modes = ["summary", "plain"] if args.plain else ["summary"]
        for mode in modes:
            view = set_view(data, sid, None) if mode == "plain" else None
            try:
                runs = []
                for k in range(args.repeats):
                    runs.append(one_open(browser, data, sid))
                    load = os.getloadavg()[0]
                    print(f"{mode} {k + 1}: " + ", ".join(f"{a} {b:.2f} s" for a, b in
                          runs[-1].items()) + f" (load average {load:.1f})")  # fmt: skip
            finally:
                if view is not None:
                    set_view(data, sid, view)
            report(f"{mode}, {n:,} records, a trace of {args.calls:,} calls", runs)
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
