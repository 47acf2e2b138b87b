"""``mcuprof record``: capture a device's raw byte stream to a file."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import IO

import numpy as np

from ..errors import UserError
from ..link import DISCONNECTED, DeviceSession, LinkError, NullListener, validate_port
from ..protocol import Metadata

PROGRESS_S = 0.5


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "record",
        help="record a device's stream to a capture file",
        description="Connect, start profiling and save the bytes exactly as received until "
        "Ctrl-C or --duration; then STOP_PROFILING. `mcuprof info` and `export` read the file.",
    )
    p.add_argument(
        "--port", required=True, help="serial device (/dev/ttyACM0), socket://HOST:PORT or sim://"
    )
    p.add_argument("--baud", type=int, default=115200, help="baud rate (default 115200)")
    p.add_argument("--elf", help="firmware ELF; its build ID is checked against the device's")
    p.add_argument("--duration", type=float, help="stop after this many seconds")
    p.add_argument("-o", "--output", required=True, help="capture file to write")
    p.set_defaults(func=run)


class _Recorder(NullListener):
    """Writes every byte as received; logs go to stderr on their own line."""

    def __init__(self, out: IO[bytes], progress: _Progress) -> None:
        self.out = out
        self.progress = progress
        self.bytes = 0
        self.write_error: str | None = None

    def on_raw(self, data: bytes) -> None:
        if self.write_error is None:
            try:
                self.out.write(data)
                self.bytes += len(data)
            except OSError as exc:
                self.write_error = exc.strerror or str(exc)

    def on_records(self, records: np.ndarray) -> None:
        pass

    def on_log(self, level: str, message: str) -> None:
        self.progress.message(f"mcuprof: {level}: {message}")


class _Progress:
    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.lock = threading.Lock()
        self.shown = False
        self.last_line_at = 0.0

    def message(self, text: str) -> None:
        with self.lock:
            if self.shown:
                sys.stderr.write("\n")
                self.shown = False
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def line(self, text: str, now: float) -> None:
        with self.lock:
            if self.tty:
                sys.stderr.write("\r\x1b[K" + text)
                self.shown = True
            elif now - self.last_line_at >= 1.0:
                sys.stderr.write(text + "\n")
                self.last_line_at = now
            sys.stderr.flush()

    def end(self) -> None:
        with self.lock:
            if self.shown:
                sys.stderr.write("\n")
                self.shown = False


def _elf_build_id(path: str) -> int | None:
    from ..symbols import SymbolTable

    return SymbolTable.from_elf(path).build_id


def _check_elf(meta: Metadata, elf_id: int | None, progress: _Progress) -> None:
    from ..symbols import check_build_id

    check = check_build_id(meta.elf_build_id, elf_id)
    if check.state == "mismatch":
        bar = "!" * 72
        progress.message(
            f"{bar}\nmcuprof: WARNING: {check.message}.\n"
            "mcuprof: WARNING: function names will be wrong; flash this ELF or pass the one "
            f"that was flashed.\n{bar}"
        )
    else:
        progress.message(f"mcuprof: {check.message}")


def _status_text(session: DeviceSession, rate: float) -> str:
    status = session.last_status
    overflows = status.buffer_overflows if status else 0
    usage = status.buffer_usage_percent if status else 0
    return (
        f"records {session.records_received_since_start:,}  {rate:,.0f}/s  "
        f"crc errors {session.stats.crc_errors:,}  device buffer {usage}%  "
        f"device overflows {overflows:,}  est. loss {session.estimated_loss:,}"
    )


def run(args: argparse.Namespace) -> int:
    port = validate_port(args.port)
    if args.duration is not None and not args.duration > 0:
        raise UserError(f"--duration {args.duration}: must be a positive number of seconds")
    elf_id = _elf_build_id(args.elf) if args.elf else None
    out_path = Path(args.output)
    try:
        out = out_path.open("wb")
    except OSError as exc:
        raise UserError(f"{out_path}: cannot write ({exc.strerror or exc})") from None
    progress = _Progress()
    recorder = _Recorder(out, progress)
    session = DeviceSession(port, args.baud, recorder)
    try:
        with out:
            return _record(session, args, elf_id, recorder, progress, out_path)
    finally:
        session.close()
        progress.end()


def _record(
    session: DeviceSession,
    args: argparse.Namespace,
    elf_id: int | None,
    recorder: _Recorder,
    progress: _Progress,
    out_path: Path,
) -> int:
    meta = session.connect()
    progress.message(
        f"mcuprof: connected to {session.port}: firmware {meta.fw_version!r}, "
        f"timer {meta.timer_freq / 1e6:g} MHz, build id 0x{meta.elf_build_id:08x}"
    )
    if args.elf:
        _check_elf(meta, elf_id, progress)
    session.start()
    started = time.monotonic()
    last_t, last_n = started, 0
    interrupted = False
    try:
        while session.state != DISCONNECTED and recorder.write_error is None:
            now = time.monotonic()
            if args.duration is not None and now - started >= args.duration:
                break
            time.sleep(
                PROGRESS_S
                if args.duration is None
                else min(PROGRESS_S, max(0.01, started + args.duration - now))
            )
            now = time.monotonic()
            n = session.records_received_since_start
            rate = (n - last_n) / max(now - last_t, 1e-9)
            last_t, last_n = now, n
            progress.line(_status_text(session, rate), now)
    except KeyboardInterrupt:
        interrupted = True
    progress.end()
    if recorder.write_error is not None:
        raise UserError(f"{out_path}: write failed ({recorder.write_error}); capture is incomplete")
    if session.state == DISCONNECTED:
        raise UserError(
            f"device disconnected ({session.disconnect_reason}); "
            f"{session.records_received_since_start:,} records saved to {out_path}"
        )
    try:
        final = session.stop()
    except LinkError as exc:
        raise UserError(f"{exc}; {recorder.bytes:,} bytes saved to {out_path}") from None
    elapsed = time.monotonic() - started
    n = session.records_received_since_start
    captured = final.records_captured if final else n
    overflows = final.buffer_overflows if final else 0
    print(
        f"mcuprof: {'interrupted; ' if interrupted else ''}saved {n:,} records "
        f"({recorder.bytes:,} bytes) in {elapsed:.1f} s to {out_path}; device captured "
        f"{captured:,}, overflows {overflows:,}, crc errors {session.stats.crc_errors:,}, "
        f"est. loss {session.estimated_loss:,}",
        file=sys.stderr,
    )
    return 0
