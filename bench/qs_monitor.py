"""Speed of the QS tab's monitor (mcuprof.qs.monitor), beside a simple baseline.

Inner function: QsMonitor.qs_events on decoded events in batches of 200 (as a live
source delivers them), against the simple design it replaces: QSPY's text rendered for
every event on arrival into a bounded deque. End to end: a real `mcuprof serve`
(server start not timed: the page's requests are what users wait for) answering
/api/qs/summary for a stored QS session of N frames, cold (decoded on that request)
and warm (cached), and one page of filtered log lines.

Run: .venv/bin/python bench/qs_monitor.py [--frames N] [--repeat K]
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from mcuprof.protocol.qs import QSDecoder  # noqa: E402
from mcuprof.qs.monitor import MAX_LINES, QsMonitor  # noqa: E402
from mcuprof.qs.text import event_lines  # noqa: E402
from qs import make_capture  # noqa: E402 (bench/qs.py: the reference stream, repeated)
from qs_serve import serve_qs  # noqa: E402

BATCH = 200


def median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def monitor_ingest(events: list) -> None:
    m = QsMonitor()
    for i in range(0, len(events), BATCH):
        m.qs_events(events[i : i + BATCH])


def baseline_ingest(events: list) -> None:
    """Render every line on arrival and keep the last MAX_LINES: no tags, no margins."""
    lines: collections.deque[str] = collections.deque(maxlen=MAX_LINES)
    for i in range(0, len(events), BATCH):
        for e in events[i : i + BATCH]:
            lines.extend(event_lines(e))


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    data = make_capture(args.frames)
    events = QSDecoder().feed(data)
    n = len(events)
    print(f"{n:,} events ({len(data):,} bytes), batches of {BATCH}; medians of {args.repeat}")
    for label, fn in (
        ("QsMonitor.qs_events", monitor_ingest),
        ("baseline: render every line on arrival", baseline_ingest),
    ):
        s = median(lambda fn=fn: fn(events), args.repeat)
        print(f"  {label:<42} {n / s / 1e3:8.0f} k events/s ({s * 1e3:7.1f} ms)")

    # three copies: each first request decodes (two are cached)
    with serve_qs([data, data, data]) as (_proc, base, sids):
        cold = []
        for one in sids:
            t = time.perf_counter()
            get(f"{base}/api/qs/summary?session={one}")
            cold.append(time.perf_counter() - t)
        warm = median(lambda: get(f"{base}/api/qs/summary?session={sids[-1]}"), args.repeat)
        page = median(
            lambda: get(
                f"{base}/api/qs/log?session={sids[0]}&obj=Table_inst&sig=EAT_SIG&limit=500"
            ),
            args.repeat,
        )
    print("end to end (mcuprof serve, HTTP):")
    first = statistics.median(cold)
    print(f"  stored session, first request (decode)   {first * 1e3:8.0f} ms"
          f"  ({n / first / 1e3:.0f} k events/s)")  # fmt: skip
    print(f"  stored session summary, cached           {warm * 1e3:8.1f} ms")
    print(f"  500 filtered log lines (obj + sig)       {page * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
