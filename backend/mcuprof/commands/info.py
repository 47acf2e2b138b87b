"""``mcuprof info CAPTURE``: what a raw capture holds."""

from __future__ import annotations

import argparse

from ..capture import iter_capture
from ..console import load_elf
from ..progress import ReadProgress
from ..summary import format_summary, summarize_chunks


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="summarise a raw capture file")
    p.add_argument(
        "capture", help="raw device-to-host byte stream (e.g. cat /dev/ttyACM0 > cap.bin)"
    )
    p.add_argument("--elf", help="firmware ELF, to check its build ID against the device's")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run, quick_exit=True)


def run(args: argparse.Namespace) -> int:
    elf_build_id = None
    elf_note = "no ELF given; use --elf"
    if args.elf:
        table = load_elf(args.elf)
        elf_build_id, elf_note = table.build_id, table.build_id_note
    progress = ReadProgress()
    size, chunks = iter_capture(args.capture)
    summary = summarize_chunks(chunks, size, elf_build_id, progress)
    progress.finish()
    if args.json:
        import json  # only here: a module less to import on every other run

        print(json.dumps(summary))
    else:
        print(format_summary(args.capture, size, summary, elf_note))
    return 0
