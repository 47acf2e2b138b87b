"""``mcuprof check CAPTURE_OR_SESSION --budgets FILE``: each timing budget's verdict on
one capture, and an exit status a CI job can gate on (0 every budget holds or cannot tell
yet, 1 one is broken, 2 error). The verdicts are profile/budget.py's, as the page's."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..console import load_elf
from ..errors import UserError
from ..files import read_file
from ._storeopt import add_store_option, store_url

if TYPE_CHECKING:
    from ..profile.budget import Verdict


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="check timing budgets on a capture; exit 1 when one is broken (CI gate)",
        description="Check a TOML file of [[budget]] entries (function, any of p50_us, "
        "p90_us, p99_us, p999_us, max_us, period_us, period_jitter_us) against a capture "
        "or stored session. Exit status: 0 all hold (or cannot tell yet), 1 one is broken, "
        "2 error (a budget that matches no function is an error).",
    )
    p.add_argument("capture", metavar="CAPTURE_OR_SESSION", help="capture file or session id")
    p.add_argument("--budgets", required=True, metavar="FILE", help="the budgets (TOML)")
    p.add_argument("--elf", help="firmware ELF, for function names (default: the session's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--confidence",
        default="95%",
        help="confidence of a percentile's interval: 0.95, 95 or 95%% (default 95%%)",
    )
    p.add_argument("--data-dir", help="session store directory (for session ids)")
    add_store_option(p)
    p.set_defaults(func=run, quick_exit=True, error_exit=2)


def parse_confidence(text: str) -> float:
    """0.95, 95 or 95% -> 0.95; strictly between 0 and 1."""
    raw = text.strip()
    try:
        value = float(raw.removesuffix("%"))
    except ValueError:
        raise UserError(f"--confidence {text!r}: expected e.g. 95% or 0.95") from None
    if raw.endswith("%") or value >= 1:
        value /= 100
    if not 0 < value < 1:
        raise UserError(f"--confidence {text!r}: must be between 0 and 100%")
    return value


def _load(args: argparse.Namespace) -> tuple[Any, str]:
    """The capture's profile, and how the report names it."""
    from ..diff.sources import StoreOpener, resolve_source
    from ..sources import load_stream, peek_kind
    from ..store import resolve_data_dir

    opener = StoreOpener(resolve_data_dir(args.data_dir), store_url(args))
    try:
        src = resolve_source(args.capture, opener)
        symbols = None
        if args.elf:
            symbols = load_elf(args.elf)
        elif src.elf is not None:
            from ..symbols import SymbolTable

            symbols = SymbolTable.from_elf_bytes(src.elf, src.elf_name or "session ELF")
        kind, chunks = peek_kind(src.chunks())
        loaded = load_stream(kind, chunks, src.size, symbols)
    finally:
        opener.close()
    if loaded.profile.n_records == 0:
        raise UserError(f"{args.capture}: no profile records in this capture")
    return loaded.profile, src.label


def run(args: argparse.Namespace) -> int:
    from ..profile.budget import check as check_budgets
    from ..profile.budget import parse

    confidence = parse_confidence(args.confidence)
    from ..profile.budget import MAX_BUDGET_BYTES

    text = read_file(args.budgets, "budgets file", MAX_BUDGET_BYTES)
    budgets = parse(text, args.budgets)
    profile, label = _load(args)
    verdicts = check_budgets(profile, budgets, confidence)
    broken = sum(v.state == "broken" for v in verdicts)
    unsure = sum(v.state == "cannot tell" for v in verdicts)
    if args.json:
        doc = {
            "source": label,
            "confidence": confidence,
            "broken": broken,
            "cannot_tell": unsure,
            "verdicts": [v.to_dict() for v in verdicts],
        }
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(report(verdicts, label, confidence))
    return 1 if broken else 0


def _us(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f} µs"


def line(v: Verdict, confidence: float) -> str:
    """One verdict with its figure, as the page says it too."""
    what = v.limit.removesuffix("_us").replace("p999", "p99.9")
    head = f"{v.state.upper() if v.state == 'broken' else v.state:<11} {v.function}  {what}"
    if v.limit == "period_us":
        fig = f"period {_us(v.figure_us)}, jitter {_us(v.jitter_us)} (budget {_us(v.limit_us)})"
        if v.over:
            fig += (
                f"; {v.over:,} calls off the period, the first at {v.first_over_us / 1e3:,.3f} ms"
            )
        return f"{head}: {fig}{'; ' + '; '.join(v.notes) if v.notes else ''}"
    if v.limit == "max_us":
        fig = f"{_us(v.figure_us)} (budget {_us(v.limit_us)})"
        if v.over:
            fig += f"; {v.over:,} calls over, the first at {v.first_over_us / 1e3:,.3f} ms"
        return f"{head} {fig}"
    ci = f"{confidence * 100:g}% interval {_us(v.low_us)} to {_us(v.high_us)}"
    fig = f"{_us(v.figure_us)} (budget {_us(v.limit_us)}; {ci}; {v.calls:,} calls)"
    if v.state == "cannot tell":
        more = (
            f"{v.more_calls:,} more calls needed"
            if v.more_calls is not None
            else "the limit is at the percentile: more calls will not tell"
        )
        fig += f": cannot tell yet: {more}"
    return f"{head} {fig}"


def report(verdicts: list[Verdict], label: str, confidence: float) -> str:
    lines = [f"budgets on {label}"]
    lines += ["  " + line(v, confidence) for v in verdicts]
    broken = sum(v.state == "broken" for v in verdicts)
    unsure = sum(v.state == "cannot tell" for v in verdicts)
    tail = f" ({unsure} cannot tell yet)" if unsure else ""
    if broken:
        lines.append(f"FAIL: {broken} of {len(verdicts)} budget checks broken{tail}")
    else:
        lines.append(f"OK: no budget broken in {len(verdicts)} checks{tail}")
    return "\n".join(lines) + "\n"
