"""Per-function statistics as CSV, one header row. A function is named as in every
view; its file is a column of its own, which tells same-name statics apart."""

from __future__ import annotations

import csv
import io

from ..profile import Profile, Window

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
]


def render(profile: Profile, window: Window = None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HEADER)
    for s in profile.function_stats(window):
        w.writerow(
            [
                s.name,
                s.where or "",
                "" if s.line is None else s.line,
                s.calls,
                f"{s.total_us:.3f}",
                f"{s.self_us:.3f}",
                f"{s.min_us:.3f}",
                f"{s.max_us:.3f}",
                f"{s.mean_us:.3f}",
                f"{s.pct:.3f}",
                f"{s.self_pct:.3f}",
            ]
        )
    return buf.getvalue()
