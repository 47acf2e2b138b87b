"""Per-function statistics as CSV, one header row. A function is named as in every
view (the short demangled name); its file is a column of its own, which tells
same-name statics apart, and its full signature is the last column. The
percentile columns come last (after the shares), so a reader that took columns by
position before they were added reads the same columns."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

from ..names import short_label
from ..profile import Profile, Window
from ..profile.distribution import summaries

HEADER = [
    "function",
    "file",
    "line",
    "calls",
    "total_us",
    "self_us",
    "min_us",
    "max_us",
    "mean_us",
    "total_pct",
    "self_pct",
    # per call, inclusive, as mean_us: profile/distribution.py's nearest-rank percentiles
    "p50_us",
    "p90_us",
    "p99_us",
    "p999_us",
    # the full demangled name; "function" is the display name, the page's short one
    "signature",
]


def render(profile: Profile, window: Window = None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HEADER)
    dist = summaries(profile, window, exact=True)  # sorted, however many calls
    for s in profile.function_stats(window):
        d = dist[s.frame]
        numbers = (s.total_us, s.self_us, s.min_us, s.max_us, s.mean_us, s.pct, s.self_pct)
        numbers += (d.p50_us, d.p90_us, d.p99_us, d.p999_us)
        line = "" if s.line is None else s.line
        cells = [short_label(s.name), s.where or "", line, s.calls]
        w.writerow([*cells, *(f"{v:.3f}" for v in numbers), s.name])
    return buf.getvalue()


def write(
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    title: tuple[str, str] | None = None,
) -> None:
    """The export contract (export/__init__.py): the table as UTF-8, whole."""
    out(render(profile, window).encode("utf-8"))
