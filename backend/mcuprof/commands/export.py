"""``mcuprof export CAPTURE --format FMT``: a capture as folded stacks, speedscope, Chrome
trace, CSV, an SVG flame graph or callgrind."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import export
from ..capture import iter_capture
from ..console import load_elf, warn
from ..errors import UserError
from ..export import FORMATS
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
        choices=("auto", "miniprofiler", "qs"),
        default="auto",
        help="protocol of the capture (auto: told from its first bytes); QS captures are "
        "exported as RTC steps: active object;state;signal",
    )
    p.add_argument(
        "--qs-tick-hz", type=int, default=None, help="QS timestamp ticks per second (1000000)"
    )
    p.set_defaults(func=run, quick_exit=True)


def _symbols(elf: str | None):
    if elf is None:
        return None
    return load_elf(elf)


def run(args: argparse.Namespace) -> int:
    symbols = _symbols(args.elf)
    size, chunks = iter_capture(args.capture)  # read as it is decoded: never held whole
    progress = ReadProgress()
    kind = args.kind
    if kind == "auto":
        kind, chunks = peek_kind(chunks)
    loaded = load_stream(kind, chunks, size, symbols, progress=progress, tick_hz=args.qs_tick_hz)
    if kind == "miniprofiler" and loaded.metadata is not None and symbols is not None:
        from ..symbols import check_build_id

        check = check_build_id(loaded.metadata.elf_build_id, symbols.build_id)
        if check.state == "mismatch":
            warn(check.message)
    progress.step(f"rendering {args.format}")
    if args.output is None or args.output == "-":
        # Text, as the stream expects (ASCII or UTF-8, written as it comes).
        export.write(args.format, loaded.profile, lambda b: sys.stdout.write(str(b, "utf-8")))
        sys.stdout.flush()
        progress.finish()
        return 0
    out = Path(args.output)
    if out.exists() and not out.is_file():
        # A device or FIFO (e.g. /dev/null, a pipe): write to it as it is. The
        # write-then-rename below would replace the special file with a regular one.
        try:
            with open(out, "wb") as f:
                export.write(args.format, loaded.profile, f.write)
        except OSError as exc:
            raise UserError(f"{out}: cannot write ({exc.strerror or exc})") from None
        finally:
            progress.finish()
        return 0
    tmp = out.with_name(out.name + ".part")
    try:
        with open(tmp, "wb") as f:
            export.write(args.format, loaded.profile, f.write)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"{out}: cannot write ({exc.strerror or exc})") from None
    finally:
        progress.finish()
    return 0
