"""``mcuprof compare BASE NEW``: per-function regressions between two captures, and an
exit status a CI job can gate on (0 = within threshold, 1 = regression, 2 = error)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..console import load_elf, warn
from ..diff import ProfileDiff
from ..diff.profiles import diff_reduced
from ..diff.reduce import Reduced
from ..diff.report import (
    format_report,
    parse_confidence,
    parse_threshold,
    timebase_check,
)
from ..diff.sources import CompareInput, StoreOpener, reduce_source, resolve_source, session_id_of
from ..errors import UserError
from ..progress import ReadProgress
from ..protocol import Metadata
from ..store import resolve_data_dir
from ..store.model import metadata_to_dict
from ..symbols.buildid import check_build_id
from ._storeopt import add_store_option, store_url

if TYPE_CHECKING:
    from ..symbols import SymbolTable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two captures; exit 1 when a function got slower (CI gate)",
        description="Compare two captures (raw capture files or session ids) function by "
        "function, normalised by capture length. Exit status: 0 no regression past the "
        "threshold, 1 regression, 2 error.",
    )
    p.add_argument("base", metavar="BASE", nargs="?", help="baseline: capture file or session id")
    p.add_argument("new", metavar="NEW", nargs="?", help="candidate: capture file or session id")
    p.add_argument(
        "--baseline",
        action="append",
        metavar="KEY=VALUE",
        help="instead of BASE: the newest complete stored session with these tags "
        "(repeatable; of NEW's board too when NEW is a stored session with a board tag)",
    )
    p.add_argument("--elf", help="ELF for BASE (and for NEW unless --elf-new is given)")
    p.add_argument("--elf-new", help="ELF for NEW when it is a different build")
    p.add_argument(
        "--metric", choices=("self", "total"), default="self", help="time compared (default self)"
    )
    p.add_argument(
        "--basis",
        choices=("mean", "share", "p50", "p90", "p99"),
        default="mean",
        help="normalisation: time per call (mean, default), share of the capture's "
        "profiled time (share), or a percentile of the time per call (p50, p90, p99: "
        "an order-statistics interval)",
    )
    p.add_argument(
        "--fail-on-inconclusive",
        action="store_true",
        help="exit 1 also when a function's verdict is inconclusive (loss could change it, "
        "or too few calls); by default only a regression fails",
    )
    p.add_argument(
        "--threshold", default="10%", help="fail when a function grew more than this (10%%)"
    )
    p.add_argument(
        "--min-delta-us",
        type=float,
        default=0.0,
        metavar="US",
        help="ignore growth smaller than this many µs (per call for --basis mean): a "
        "noise floor for tiny functions (default 0)",
    )
    p.add_argument(
        "--confidence",
        default="95%",
        help="a function fails only if its change is significant at this confidence: the "
        "interval of its change (Welch's t on the time per call, or a normal interval on the "
        "share) must exclude zero (default 95%%; 0 gates on the point change alone)",
    )
    p.add_argument(
        "--min-calls",
        type=int,
        default=2,
        metavar="N",
        help="functions with fewer calls than this in either capture are reported but never "
        "fail the gate: their spread is unknown (default 2, the least a spread needs)",
    )
    p.add_argument(
        "--function",
        action="extend",
        nargs="+",
        metavar="GLOB",
        default=None,
        help="only gate and report functions whose name matches a glob (repeatable)",
    )
    p.add_argument(
        "--allow-timebase-mismatch",
        action="store_true",
        help="compare captures whose METADATA gives different timer frequencies (each is "
        "converted to µs with its own; without this option such a pair is refused, exit 2)",
    )
    p.add_argument("--top", type=int, default=10, help="rows per table (default 10)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--diff-folded", metavar="FILE", help="write two-column folded stacks")
    p.add_argument("--diff-svg", metavar="FILE", help="write a differential flame graph SVG")
    p.add_argument("--data-dir", help="session store directory (for session ids)")
    add_store_option(p)
    # 1 means "regression": any error, even an internal one, exits 2
    p.set_defaults(func=run, quick_exit=True, error_exit=2)


def _symbols(elf_path: str | None, source: CompareInput) -> SymbolTable | None:
    """The capture's symbols; None without an ELF (frames are then raw addresses, as with
    an empty table, and the ELF parser is never imported)."""
    if elf_path:
        return load_elf(elf_path)
    if source.elf is not None:
        from ..symbols import SymbolTable

        return SymbolTable.from_elf_bytes(source.elf, source.elf_name or "session ELF")
    return None


def _describe(
    src: CompareInput, cap: Reduced, meta: Metadata | None, symbols: SymbolTable | None
) -> dict[str, Any]:
    build_id = symbols.build_id if symbols is not None else None
    check = check_build_id(meta.elf_build_id if meta else None, build_id)
    return {
        "source": src.label,
        "session_id": src.session_id,
        "records": cap.n_records,
        "duration_us": cap.duration_us,
        "metadata": metadata_to_dict(meta),
        "build_check": {"state": check.state, "message": check.message},
        "symbols": len(symbols.functions) if symbols is not None else 0,
    }


def run(args: argparse.Namespace) -> int:
    threshold = parse_threshold(args.threshold)
    confidence = parse_confidence(args.confidence)
    if args.min_calls < 1:
        raise UserError("--min-calls must be at least 1")
    if args.top < 1:
        raise UserError("--top must be at least 1")
    # NaN passes every comparison and would switch the noise floor off: finite only.
    if not (math.isfinite(args.min_delta_us) and args.min_delta_us >= 0):
        raise UserError(f"--min-delta-us {args.min_delta_us!r}: must be a finite number >= 0")
    opener = StoreOpener(resolve_data_dir(args.data_dir), store_url(args))
    try:
        args.base, args.new = _sides(args, opener)
        base_src = resolve_source(args.base, opener)
        new_src = resolve_source(args.new, opener)
    finally:
        opener.close()
    base_syms = _symbols(args.elf, base_src)
    new_elf = args.elf_new or args.elf
    same = new_elf == args.elf and new_src.elf == base_src.elf
    new_syms = base_syms if same else _symbols(new_elf, new_src)
    # One bar over both captures (on a terminal, after a second; silent when piped).
    progress = ReadProgress("reading captures")
    both = base_src.size + new_src.size
    folded = bool(args.diff_folded or args.diff_svg)  # per stack: only when written
    # One capture at a time: each is reduced to its per-function sums, and its records
    # are gone, before the other is read (the memory peak is one capture's).
    calls = args.basis.startswith("p")  # a percentile needs every call's time
    base_cap, base_meta = reduce_source(
        base_src,
        base_syms,
        folded=folded,
        progress=lambda d, _t, r: progress(d, both, r),
        calls=calls,
    )
    base_bytes, base_recs = base_src.size, base_cap.n_records
    new_cap, new_meta = reduce_source(
        new_src,
        new_syms,
        folded=folded,
        progress=lambda d, _t, r: progress(base_bytes + d, both, base_recs + r),
        calls=calls,
    )
    progress.step("comparing")
    for label, cap in ((args.base, base_cap), (args.new, new_cap)):
        if cap.n_records == 0:
            raise UserError(f"{label}: no profile records in this capture")
    timebase = timebase_check(base_meta, new_meta)
    if timebase["mismatch"] and not args.allow_timebase_mismatch:
        raise UserError(timebase["message"] + "; --allow-timebase-mismatch compares them anyway")
    diff = diff_reduced(base_cap, new_cap)
    from ..diff.gate import GateSide
    from ..diff.gated import gated_report

    report = gated_report(
        diff,
        GateSide(base_cap.calls or {}, base_cap.loss),
        GateSide(new_cap.calls or {}, new_cap.loss),
        reduced=(base_cap, new_cap),
        threshold=threshold,
        metric=args.metric,
        basis=args.basis,
        globs=args.function,
        min_delta_us=args.min_delta_us,
        confidence=confidence,
        min_calls=args.min_calls,
    )
    report["base"] = _describe(base_src, base_cap, base_meta, base_syms)
    report["new"] = _describe(new_src, new_cap, new_meta, new_syms)
    report["timebase"] = timebase
    for key in ("inconclusive", "verdicts", "loss"):  # added keys last: the rest as before
        report[key] = report.pop(key)
    report["aa"] = same_build(base_meta, new_meta)
    _write_exports(args, diff, report)
    progress.finish()
    if timebase["mismatch"]:
        warn(timebase["message"])
    for side in ("base", "new"):
        check = report[side]["build_check"]
        if check["state"] == "mismatch":  # the names would be wrong: say so, loudly
            warn(f"{side}: {check['message']}")
    try:
        print(json.dumps(report) if args.json else format_report(report, args.top))
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # the reader went away (| head): the verdict still stands
    return 1 if report["failed"] or (args.fail_on_inconclusive and report["inconclusive"]) else 0


def _sides(args: argparse.Namespace, opener: StoreOpener) -> tuple[str, str]:
    """BASE and NEW as given, or with --baseline: NEW (the one capture named) against
    the newest stored session with those tags."""
    if not args.baseline:
        if args.base is None or args.new is None:
            raise UserError("give BASE and NEW, or --baseline KEY=VALUE and NEW")
        return args.base, args.new
    if args.new is not None or args.base is None:
        raise UserError("with --baseline, give only NEW (the capture to judge)")
    from ..history.baseline import latest_with_tags
    from ..store.tags import parse_tags

    where = parse_tags(args.baseline)
    new = args.base
    sid = None if Path(new).exists() else session_id_of(new)
    store = opener()
    board = store.get(sid).tags.get("board") if sid is not None else None
    base = latest_with_tags(store, where, exclude=sid, board=board)
    return f"session:{base.id}", new


def same_build(base: Metadata | None, new: Metadata | None) -> bool:
    """Two captures of one build: an A/A comparison (both METADATA give one build ID)."""
    return base is not None and new is not None and base.elf_build_id == new.elf_build_id


def _write_exports(args: argparse.Namespace, diff: ProfileDiff, report: dict[str, Any]) -> None:
    if not (args.diff_folded or args.diff_svg):
        return  # (the renderers' imports cost a few ms of every run)
    from ..diff.export import basis_text, render_folded2, render_svg

    outputs = []
    if args.diff_folded:
        outputs.append((args.diff_folded, render_folded2(diff.base_folded, diff.new_folded)))
    if args.diff_svg:
        # coloured by the gate's verdicts, as the page's Compare tab
        subtitle = (
            f"{args.base} -> {args.new}: widths from NEW; colour: the verdict on the "
            f"{basis_text(report)} - red regressed, blue shrank, amber inconclusive"
        )
        svg = render_svg(diff.base_folded, diff.new_folded, subtitle=subtitle, report=report)
        outputs.append((args.diff_svg, svg))
    for path, text in outputs:
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"{path}: cannot write ({exc.strerror or exc})") from None
