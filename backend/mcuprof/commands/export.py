"""``mcuprof export CAPTURE --format FMT``: a capture as folded stacks, speedscope, Chrome
trace, CSV, an SVG flame graph or callgrind."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from .. import export
from ..capture import read_capture
from ..console import load_elf, warn
from ..errors import UserError
from ..export import FORMATS
from ..profile import load_capture

# Show progress only when the job is long enough to wonder about.
PROGRESS_AFTER_S = 1.0
PROGRESS_AFTER_RECORDS = 1_000_000
LINE_EVERY_S = 5.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a raw capture to a profile format")
    p.add_argument("capture", help="raw device-to-host byte stream")
    p.add_argument("--elf", help="firmware ELF, for function names and source lines")
    p.add_argument("--format", "-f", required=True, choices=FORMATS, help="output format")
    p.add_argument("-o", "--output", help="output file (default: standard output)")
    p.set_defaults(func=run)


class Progress:
    """Progress on stderr: carriage-return updates on a terminal, an occasional line
    otherwise; silent for short jobs."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.start = clock()
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.last = -1e9
        self.shown = False

    def __call__(self, done: int, total: int, records: int) -> None:
        now = self.clock()
        if not self.shown and (
            now - self.start < PROGRESS_AFTER_S and records < PROGRESS_AFTER_RECORDS
        ):
            return
        if not self.tty and now - self.last < LINE_EVERY_S and done < total:
            return
        self.last = now
        self.shown = True
        pct = 100.0 * done / total if total else 100.0
        msg = f"mcuprof: reading capture {pct:5.1f}% ({records:,} records)"
        self.stream.write(f"\r{msg}" if self.tty else msg + "\n")
        self.stream.flush()

    def step(self, what: str) -> None:
        if self.shown:
            msg = f"mcuprof: {what}"
            self.stream.write(f"\r{msg:<60}" if self.tty else msg + "\n")
            self.stream.flush()

    def finish(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _symbols(elf: str | None):
    if elf is None:
        return None
    return load_elf(elf)


def run(args: argparse.Namespace) -> int:
    symbols = _symbols(args.elf)
    data = read_capture(args.capture)
    progress = Progress(sys.stderr)
    loaded = load_capture(data, symbols, progress=progress)
    if loaded.metadata is not None and symbols is not None:
        from ..symbols import check_build_id

        check = check_build_id(loaded.metadata.elf_build_id, symbols.build_id)
        if check.state == "mismatch":
            warn(check.message)
    progress.step(f"rendering {args.format}")
    if args.output is None:
        export.write(args.format, loaded.profile, sys.stdout.write)
        sys.stdout.flush()
        progress.finish()
        return 0
    out = Path(args.output)
    tmp = out.with_name(out.name + ".part")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            export.write(args.format, loaded.profile, f.write)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"{out}: cannot write ({exc.strerror or exc})") from None
    finally:
        progress.finish()
    return 0
