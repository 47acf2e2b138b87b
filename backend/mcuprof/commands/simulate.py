"""``mcuprof simulate``: a simulated MiniProfiler device on a pty or a local TCP port."""

from __future__ import annotations

import argparse
import sys
import threading

from .. import kinds
from ..errors import UserError
from ..link.servers import PtySimServer, TcpSimServer
from ..link.simulator import SimOptions, load_firmware


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        help="run a simulated device on a pty or a TCP port",
        description="Serve a simulated MiniProfiler device until Ctrl-C. Its workload is a "
        "call graph drawn from the ELF's functions, paced to --baud.",
    )
    p.add_argument("--elf", help="firmware ELF for the workload (default: the bundled sample)")
    p.add_argument("--rate", type=float, default=None, help="records per second (default 500)")
    p.add_argument("--baud", type=int, default=115200, help="link speed to pace to (115200)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--pty", action="store_true", help="serve on a pty and print its path")
    where.add_argument("--tcp", type=int, metavar="PORT", help="serve on 127.0.0.1:PORT (0: any)")
    p.add_argument(
        "--option",
        "-O",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=(
            "any sim:// option, e.g. -O ber=1e-4 -O mismatch=1 -O unplug=30 -O wrap=1;"
            " -O main=1 instruments a main that never returns (orphan stacks)"
        ),
    )
    p.set_defaults(func=run)


def options_from_args(args: argparse.Namespace) -> SimOptions:
    pairs = list(args.option)
    if args.elf is not None:
        pairs.append(f"elf={args.elf}")
    if args.rate is not None:
        pairs.append(f"rate={args.rate}")
    for pair in pairs:
        if "=" not in pair:
            raise UserError(f"-O {pair!r}: expected KEY=VALUE")
    try:
        return SimOptions.from_query("&".join(pairs))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    if not 300 <= args.baud <= 1_000_000_000:
        raise UserError(f"--baud {args.baud}: must be between 300 and 1000000000")
    if args.tcp is not None and not 0 <= args.tcp <= 65535:
        raise UserError(f"--tcp {args.tcp}: not a TCP port number")
    options = options_from_args(args)
    firmware = load_firmware(options.elf)
    try:
        if args.pty:
            server: PtySimServer | TcpSimServer = PtySimServer(
                options, baud=args.baud, firmware=firmware
            )
            where = server.path
        else:
            server = TcpSimServer(options, port=args.tcp, baud=args.baud, firmware=firmware)
            where = server.url
    except OSError as exc:
        raise UserError(f"cannot start the simulator: {exc.strerror or exc}") from None
    print(where, flush=True)
    what = kinds.resolve(options.proto).simulated(firmware, server.device, options.rate)
    print(
        f"mcuprof: simulating {what}, {args.baud} baud; Ctrl-C to stop",
        file=sys.stderr,
        flush=True,
    )
    server.start()
    done = threading.Event()
    try:
        while not server.finished.wait(0.5):
            pass
    except KeyboardInterrupt:
        done.set()
    finally:
        server.close()
    if server.error:
        raise UserError(f"simulator stopped: {server.error}")
    if not done.is_set() and server.device.unplugged:
        print("mcuprof: simulated unplug", file=sys.stderr)
    return 0
