"""``mcuprof qemu [--qs] [--elf ELF] [--tcp PORT]``: firmware in QEMU, UART on a TCP port."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from ..errors import UserError
from ..paths import default_elf
from ..qemu import QemuProcess, default_qs_elf


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "qemu",
        help="run firmware under qemu-system-arm (mps2-an386), UART on 127.0.0.1:PORT",
        description=(
            "Runs the firmware in QEMU until Ctrl-C or SIGTERM. The guest starts when the "
            "first client connects, e.g. mcuprof serve --port socket://127.0.0.1:PORT."
        ),
    )
    p.add_argument("--elf", help="firmware ELF (default: the bundled demo firmware)")
    p.add_argument(
        "--qs",
        action="store_true",
        help="a QP/Spy (QS) target: the bundled QS demo by default "
        "(read it with mcuprof qs listen --port socket://127.0.0.1:PORT)",
    )
    p.add_argument("--tcp", type=int, default=5555, metavar="PORT", help="TCP port (5555)")
    p.set_defaults(func=run)


class _Terminated(Exception):
    pass


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def _echo(line: str) -> None:
    if "has no peer" in line:  # the board's Ethernet controller, which the firmware never uses
        return
    sys.stderr.write(f"qemu: {line}")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    elf = args.elf or (default_qs_elf() if args.qs else default_elf())
    client = "mcuprof qs listen --port" if args.qs else "mcuprof serve --port"
    qemu = QemuProcess(elf, args.tcp or None, on_output=_echo)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        qemu.start()
        print(
            f"QEMU runs {qemu.elf} with its UART on {qemu.url}; the firmware starts when a "
            f"client connects ({client} {qemu.url}). Ctrl-C stops it.",
            flush=True,
        )
        code = qemu.wait()
        tail = qemu.output.strip().splitlines()
        raise UserError(f"QEMU exited with status {code}" + (f": {tail[-1]}" if tail else ""))
    except (KeyboardInterrupt, _Terminated):
        print("stopping QEMU", file=sys.stderr)
        return 0
    finally:
        qemu.stop()
        signal.signal(signal.SIGTERM, previous)
