"""``mcuprof s12z CAPTURE``: what an S12Z DBG profiling trace says."""

from __future__ import annotations

import argparse
import json

from ..capture import iter_capture
from ..console import warn
from ..errors import UserError


def _number(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 0xFFFFFF:
        raise argparse.ArgumentTypeError(f"{text} is not a 24-bit address")
    return value


def _hz(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a frequency: {text!r}") from None
    if not 0 < value < 1e12:
        raise argparse.ArgumentTypeError(f"{text} Hz is not a bus clock")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("s12z", help="analyse an S12Z DBG profiling trace (PDO capture)")
    p.add_argument("capture", help="PDO byte stream as a probe or logic analyser recorded it")
    p.add_argument("--elf", help="firmware ELF: names destinations and interrupt vectors")
    p.add_argument("--bus-hz", type=_hz, help="bus clock, to turn cycles into time")
    p.add_argument(
        "--vector-base",
        type=_number,
        help="vector table address (IVBR x 0x200); default: the ELF's .vectors section, "
        "else 0xFFFE00",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..s12z import load_firmware
    from ..s12z.digest import TRACE_CHUNK, analyse_chunks
    from ..s12z.report import format_report

    _, chunks = iter_capture(args.capture, TRACE_CHUNK)  # checked before any work
    firmware = None
    if args.elf:
        firmware = load_firmware(args.elf, args.vector_base)
        for warning in firmware.warnings:
            warn(f"{args.elf}: {warning}")
    elif args.vector_base is not None:
        raise UserError("--vector-base needs --elf: the vector table is read from the ELF")
    result = analyse_chunks(chunks, firmware, args.bus_hz)
    if args.json:
        print(json.dumps(result))
    else:
        print(format_report(args.capture, result))
    return 0
