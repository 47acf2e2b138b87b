"""``mcuprof history``: a function's figure per build across stored sessions, oldest
first, and the change points found in it."""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..console import for_terminal
from ..store.tags import parse_tags
from ._storeopt import add_store_option, open_from_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "history",
        help="a function's figure per build across stored sessions, with change points",
        description="One figure per stored session (oldest first) for each function that "
        "matches, and the change points found in each series (ruptures' PELT on the mean; "
        "docs/history.md).",
    )
    p.add_argument(
        "--function",
        action="extend",
        nargs="+",
        required=True,
        metavar="GLOB",
        help="function names or globs (repeatable)",
    )
    p.add_argument(
        "--where",
        action="append",
        metavar="KEY=VALUE",
        help="only sessions with this tag (repeatable: all must match)",
    )
    p.add_argument(
        "--metric",
        choices=("mean", "p99", "share"),
        default="mean",
        help="mean: inclusive µs per call (default); p99: its 99th percentile; share: self "
        "time in %% of the profiled time",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--data-dir", help="session store directory")
    add_store_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..history.series import history

    where = parse_tags(args.where)
    with open_from_args(args, autoflush=False) as store:
        series = history(store, args.function, args.metric, where)
    if args.json:
        out = {"metric": args.metric, "where": where, "series": [s.as_dict() for s in series]}
        json.dump(out, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    if not series:
        print("no stored session has a matching function")
    for s in series:
        _print(s.as_dict())
    return 0


def _print(s: dict) -> None:
    unit = "%" if s["metric"] == "share" else " µs"
    print(for_terminal(f"{s['function']}  ({s['metric']}, {len(s['points'])} sessions)"))
    starts = {c["index"]: c for c in s["change_points"]}
    for i, p in enumerate(s["points"]):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(p["created_at"]))
        mark = ""
        if i in starts:
            c = starts[i]
            pct = "" if c["step_pct"] is None else f" ({c['step_pct']:+.1f}%)"
            mark = (
                f"  <- change: {c['before']:.4g} -> {c['after']:.4g}{unit}{pct}, "
                f"interval {c['interval'][0]:+.3g}..{c['interval'][1]:+.3g}"
            )
        line = f"  #{p['session_id']:<5} {when}  {p['build'][:20]:<20} {p['value']:>12.4g}{mark}"
        print(for_terminal(line))
