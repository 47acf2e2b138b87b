"""Flame graph navigation on a big capture (issue 34 item 2): a stored session of N
records (10M by default) opened in the page as a user opens it (a replay at max speed),
then clicks that zoom and the W/S/A/D keys, each timed in the page from the event's
timestamp to the animation frame that drew its result.

The capture repeats one synthetic call forest (profile/synth.py over the demo ELF's
functions: ISRs, recursion, a few thousand distinct stacks), shifted in time, so the
flame graph has as many frames as a real firmware's.

Run: .venv/bin/python bench/flamenav.py [--records 10M] [--before /tmp/main-checkout]
Prints figures; asserts nothing about time. Target: clicks and keys <= 50 ms (p95).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import (
    CHROMIUM_ARGS,
    FLAME_DRAWN,
    ROOT,
    api,
    click_to_zoom,
    free_port,
    pct,
    wait_for_server,
)
from mcuprof.paths import default_elf
from mcuprof.profile.synth import addresses, generate
from mcuprof.protocol import Metadata, encode_metadata, encode_profile_data
from mcuprof.store import SessionStore
from mcuprof.symbols import SymbolTable

META = Metadata(168_000_000, 1_000_000, 0, "flamenav")
PER_PACKET = 100
FOREST_CALLS = 200_000  # calls of the forest that is repeated


def write_capture(path: Path, n: int) -> None:
    """``n`` records: one seeded forest, repeated later and later on the clock."""
    table = SymbolTable.from_elf(default_elf())
    ranges = [(f.start, f.end) for f in table.functions]
    rng = random.Random(34)
    trace = generate(
        rng, len(ranges), FOREST_CALLS, isr_funcs=(1,), isr_rate=0.2, recursive_rate=0.1
    )
    recs = trace.records(addresses(rng, trace, ranges, style="mixed", thumb=True))
    span = int((trace.entry + trace.duration).max() - trace.entry.min()) + 100
    with path.open("wb") as f:
        f.write(encode_metadata(META))
        for k in range(-(-n // len(recs))):
            part = recs[: n - k * len(recs)].copy()
            part["entry_time"] = (trace.entry[: len(part)] + k * span) & 0xFFFFFFFF
            f.write(
                b"".join(
                    encode_profile_data(part[i : i + PER_PACKET])
                    for i in range(0, len(part), PER_PACKET)
                )
            )


def store_session(capture: Path, store_dir: Path) -> int:
    with SessionStore(store_dir) as store:
        writer = store.create("flamenav", metadata=META)
        with capture.open("rb") as f:
            while chunk := f.read(1 << 22):
                writer.append(chunk)
        return writer.finish().id


def open_and_wait(base: str, sid: int, n: int) -> float:
    """Open the session (a replay at max speed, as the Sessions tab's Open) and wait
    until its ``n`` records are in the profile, or their count stays put for 5 s after
    the replay ended; seconds."""
    t0 = time.monotonic()
    api(base, f"api/sessions/{sid}/replay", {"speed": "max"})
    last, since = -1, time.monotonic()
    while True:
        time.sleep(0.5)
        st = api(base, "api/state")
        got = st["health"]["profile_records"]
        if got != last:
            last, since = got, time.monotonic()
        ended = st["health"].get("replay") is None and st.get("range") is not None
        if ended and (got >= n or time.monotonic() - since > 5):
            return since - t0
        if time.monotonic() - t0 > 3600:
            raise SystemExit("the open did not finish in an hour")


def keys(page, n: int) -> list[float]:
    """W/S/A/D, one at a time; the page times each key to the frame drawn with it."""
    page.evaluate("window.mcuprof.flameNavMs.length = 0")
    page.locator("#flame-area").focus()
    for k in range(n):
        page.keyboard.press("wdsa"[k % 4])
        page.wait_for_function("(n) => window.mcuprof.flameNavMs.length >= n", arg=k + 1)
    return page.evaluate("window.mcuprof.flameNavMs")


def measure(tree: Path, store_dir: Path, sid: int, n: int, n_records: int) -> dict:
    from playwright.sync_api import sync_playwright

    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "PYTHONPATH": str(tree / "backend")}
    argv = [sys.executable, "-m", "mcuprof", "serve", "--http-port", str(port)]
    server = subprocess.Popen(
        [*argv, "--data-dir", str(store_dir), "--no-connect"],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_server(base)
        opened = open_and_wait(base, sid, n_records)
        records = api(base, "api/state")["health"]["profile_records"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(base)
            page.locator("#tab-flame").click()
            page.wait_for_function(FLAME_DRAWN, timeout=60_000)
            frames = page.evaluate("window.mcuprof.flame.data.n")
            zoom_ms = click_to_zoom(page, n, stride=7)
            key_ms = keys(page, n)
            browser.close()
    finally:
        server.terminate()
        server.wait(30)
    return {
        "open_s": opened,
        "records": records,
        "frames": frames,
        "click": zoom_ms,
        "keys": key_ms,
    }


def _count(text: str) -> int:
    mult = {"K": 1_000, "M": 1_000_000}
    return round(float(text[:-1]) * mult[text[-1]]) if text[-1] in mult else int(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="10M", help="records in the stored session (10M)")
    ap.add_argument("--events", type=int, default=40, help="clicks, and keys, timed")
    ap.add_argument("--before", type=Path, help="another checkout, measured the same way")
    args = ap.parse_args()
    n = _count(args.records)
    work = Path(tempfile.mkdtemp(prefix="mcuprof-flamenav-"))
    capture = work / "capture.bin"
    write_capture(capture, n)
    print(f"capture: {n:,} records, {capture.stat().st_size / (1 << 20):,.0f} MiB")
    trees = [ROOT] + ([args.before.resolve()] if args.before else [])
    try:
        for k, tree in enumerate(trees):
            store_dir = work / f"data-{k}"
            res = measure(tree, store_dir, store_session(capture, store_dir), args.events, n)
            print(
                f"{tree}: {res['records']:,} records opened in {res['open_s']:.0f} s, "
                f"{res['frames']:,} flame rows"
            )
            for what in ("click", "keys"):
                ms = res[what]
                print(
                    f"  {what + '-to-frame':<15} p50 {pct(ms, 50):.0f} ms   "
                    f"p95 {pct(ms, 95):.0f} ms   max {max(ms, default=float('nan')):.0f} ms "
                    f"({len(ms)} events; target p95 <= 50 ms)"
                )
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
