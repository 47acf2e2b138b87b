"""``mcuprof export CAPTURE --format FMT``: a capture as folded stacks, speedscope, Chrome
trace, CSV, an SVG flame graph or callgrind."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import export, kinds
from ..capture import iter_capture
from ..console import load_elf, warn
from ..errors import UserError
from ..export import FORMATS
from ..paths import default_elf
from ..progress import ReadProgress
from ..sources import load_stream, peek_kind


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a raw capture to a profile format")
    p.add_argument("capture", help="raw device-to-host byte stream")
    p.add_argument("--elf", help="firmware ELF, for function names and source lines")
    p.add_argument("--format", "-f", required=True, choices=FORMATS, help="output format")
    p.add_argument(
        "-o", "--output", help="output file; - or none: standard output (as other tools take it)"
    )
    p.add_argument(
        "--kind",
        choices=("auto", *kinds.PROFILE_NAMES),
        type=kinds.input_name,
        default="auto",
        help="protocol of the capture (auto: told from its first bytes); QS captures are "
        "exported as RTC steps: active object;state;signal",
    )
    p.add_argument(
        "--qs-tick-hz",
        type=int,
        default=None,
        help="QS timestamp ticks per second (assumed 1000000)",
    )
    p.set_defaults(func=run, quick_exit=True)


def _symbols(elf: str | None):
    if elf is None:
        return None
    return load_elf(elf)


def _writer(args: argparse.Namespace, loaded: Any) -> Callable[[Callable[[bytes], Any]], None]:
    """What writes the export to a byte sink. A titled format (the SVG flame graph)
    carries the page's title lines: firmware, capture time (the capture file's last
    write), profiled time."""
    profile = loaded.profile
    if not FORMATS[args.format].titled:
        return lambda out: export.write(args.format, profile, out)
    from ..export.titles import flame_titles
    from ..profile.shares import span

    version = getattr(loaded.metadata, "fw_version", None)  # QS: no firmware version
    try:
        captured: float | None = os.stat(args.capture).st_mtime
    except OSError:
        captured = None
    title = flame_titles(version, captured, None, profile.t0_us, span(profile, None))
    return lambda out: export.write(args.format, profile, out, None, title)


def run(args: argparse.Namespace) -> int:
    symbols = _symbols(args.elf)
    size, chunks = iter_capture(args.capture)  # read as it is decoded: never held whole
    progress = ReadProgress()
    kind = args.kind
    if kind == "auto":
        kind, chunks = peek_kind(chunks)
    loaded = load_stream(kind, chunks, size, symbols, progress=progress, tick_hz=args.qs_tick_hz)
    names_from_elf = kinds.get(kind).names_from_elf
    if names_from_elf and loaded.metadata is not None and symbols is not None:
        from ..symbols import check_build_id

        check = check_build_id(loaded.metadata.elf_build_id, symbols.build_id)
        if check.state == "mismatch":
            warn(check.message)
    progress.step(f"rendering {args.format}")
    _output(args, _writer(args, loaded), progress)
    if kinds.get(kind).ticks_assumed and args.qs_tick_hz is None and loaded.profile.n_records:
        warn(
            "QS times assume 1 tick = 1 µs (1 MHz): give the target's tick rate with "
            "--qs-tick-hz HZ (the real QP/C POSIX port's is 10000000)"
        )
    if names_from_elf and symbols is None and loaded.profile.n_records:
        # Said once the export is written (a failed one says only its error).
        warn(
            "no --elf: functions are named by their addresses; give the firmware's ELF "
            f"with --elf (the bundled sample firmware's is {default_elf()})"
        )
    return 0


def _output(args: argparse.Namespace, write: Any, progress: ReadProgress) -> None:
    """The export to standard output or to the -o file (written whole, then renamed)."""
    if args.output is None or args.output == "-":
        # Text, as the stream expects (ASCII or UTF-8, written as it comes).
        write(lambda b: sys.stdout.write(str(b, "utf-8")))
        sys.stdout.flush()
        progress.finish()
        return
    out = Path(args.output)
    if out.exists() and not out.is_file():
        # A device or FIFO (e.g. /dev/null, a pipe): write to it as it is. The
        # write-then-rename below would replace the special file with a regular one.
        try:
            with open(out, "wb") as f:
                write(f.write)
        except OSError as exc:
            raise UserError(f"{out}: cannot write ({exc.strerror or exc})") from None
        finally:
            progress.finish()
        return
    tmp = out.with_name(out.name + ".part")
    try:
        with open(tmp, "wb") as f:
            write(f.write)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"{out}: cannot write ({exc.strerror or exc})") from None
    finally:
        progress.finish()
