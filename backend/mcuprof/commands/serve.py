"""``mcuprof serve``: the dashboard. With no --port it profiles the simulated device."""

from __future__ import annotations

import argparse
import socket
import threading
import webbrowser
from pathlib import Path

from .. import kinds
from ..errors import UserError
from ..store.tags import parse_tags
from ..web.settings import MAX_TICK_HZ, Settings
from ._storeopt import add_store_option, store_url


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve the live dashboard in your browser",
        description="Serve the dashboard on http://127.0.0.1:8000. Without --port it connects "
        "to a simulated device running the sample ELF.",
    )
    p.add_argument(
        "--port",
        help="device: /dev/ttyACM0, socket://HOST:PORT or sim://[?options] (default: simulated); "
        "a QS target: sim://?proto=qs, listen://127.0.0.1:PORT (the target connects), or "
        "a serial/socket port with --proto qs",
    )
    p.add_argument(
        "--proto",
        choices=kinds.LIVE_NAMES,
        type=kinds.input_name,
        default=None,
        help="protocol of --port: miniprofiler (or mp; the default) or qs (QP/Spy target)",
    )
    p.add_argument(
        "--qs-tick-hz",
        type=int,
        default=None,
        help="QS timestamp ticks per second, to show QS times in µs (assumed 1000000: "
        "1 tick = 1 µs, until given here or in the page)",
    )
    p.add_argument("--baud", type=int, default=115200, help="serial baud rate (115200)")
    p.add_argument("--elf", help="firmware ELF for symbols (default: the bundled sample ELF)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    p.add_argument("--http-port", type=int, default=8000, help="dashboard TCP port (8000)")
    p.add_argument("--open", action="store_true", help="open the dashboard in a browser")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host; every request then needs the printed token",
    )
    p.add_argument(
        "--qspy-udp",
        metavar="[HOST:]UPORT",
        help="also serve QSPY's front-end protocol on this UDP port (0: any free one), as "
        "qspy -u: QView attaches there and drives the QS target connected in the dashboard; "
        "on --host's address unless HOST is given",
    )
    p.add_argument(
        "--qspy-udp-allow",
        metavar="ADDR,...",
        help="only these addresses (or ADDR/BITS networks) may attach to --qspy-udp; "
        "required when it is reachable from other machines (front ends are unauthenticated)",
    )
    p.add_argument(
        "--data-dir", help="session store (default: $MCUPROF_DATA_DIR or ~/.local/share/mcuprof)"
    )
    add_store_option(p)
    p.add_argument("--sim-rate", type=int, default=None, help="records/s of the simulated device")
    p.add_argument(
        "--tag",
        action="append",
        metavar="KEY=VALUE",
        help="tag every capture stored (repeatable): commit=SHA, branch=main, board=...",
    )
    p.add_argument(
        "--no-connect", action="store_true", help="do not connect to the device at start-up"
    )
    p.add_argument(
        "--budgets",
        metavar="FILE",
        help="timing budgets (TOML, as mcuprof check takes): broken ones are marked in "
        "Functions and counted in Health",
    )
    p.set_defaults(func=run)


def _check_bindable(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise UserError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc} "
                "(another mcuprof serve? try --http-port)"
            ) from None


def build_settings(args: argparse.Namespace) -> Settings:
    from ..store.location import resolve_data_dir

    if not 1 <= args.http_port <= 65535:
        raise UserError(f"--http-port {args.http_port}: not a TCP port number")
    if not 300 <= args.baud <= 20_000_000:
        raise UserError(f"--baud {args.baud}: must be between 300 and 20000000")
    port = None
    if args.port:  # listen:// checked, a sim:// port told the protocol, as /api/connect
        from ..link.open import resolve

        port = resolve(args.port.strip(), getattr(args, "proto", None), args.allow_remote).port
    tick_hz = getattr(args, "qs_tick_hz", None)
    if tick_hz is not None and not 1 <= tick_hz <= MAX_TICK_HZ:
        raise UserError("--qs-tick-hz must be between 1 and 10^12")
    elf = None
    if args.elf:
        elf = Path(args.elf).expanduser()
        if not elf.is_file():
            raise UserError(f"{args.elf}: no such ELF file")
        elf = elf.resolve()
    qspy_udp = getattr(args, "qspy_udp", None)
    qspy_udp_allow = getattr(args, "qspy_udp_allow", None)
    if qspy_udp is None and qspy_udp_allow is not None:
        raise UserError("--qspy-udp-allow needs --qspy-udp")
    from ..link.simulator import MAX_SIM_RATE

    if args.sim_rate is not None and not 1 <= args.sim_rate <= MAX_SIM_RATE:
        raise UserError(f"--sim-rate must be between 1 and {MAX_SIM_RATE}")
    settings = Settings(
        host=args.host,
        http_port=args.http_port,
        port=port,
        baud=args.baud,
        elf=elf,
        allow_remote=args.allow_remote,
        data_dir=resolve_data_dir(args.data_dir),
        store_url=store_url(args),
        autoconnect=not args.no_connect,
        sim_rate=args.sim_rate,
        qs_tick_hz=tick_hz or 1_000_000,
        qs_tick_source="assumed" if tick_hz is None else "given",
        proto=getattr(args, "proto", None),
        qspy_udp=qspy_udp,
        budgets=_budgets(getattr(args, "budgets", None)),
        budgets_file=getattr(args, "budgets", None),
        tags=parse_tags(getattr(args, "tag", None)),
        qspy_udp_allow=qspy_udp_allow,
    )
    settings.qspy_udp_access()  # its one-line refusal before anything starts
    return settings


def _budgets(path: str | None) -> tuple:
    """The budgets file's entries, checked before the server starts (one-line error)."""
    if path is None:
        return ()
    from ..files import read_file
    from ..profile.budget import MAX_BUDGET_BYTES, parse

    return tuple(parse(read_file(path, "budgets file", MAX_BUDGET_BYTES), path))


def _simulated_label(settings: Settings) -> str:
    """The simulator's name as the page's device card gives it: the QS one or the
    MiniProfiler one."""
    from ..link.open import simulated_label

    return simulated_label(settings.port, settings.proto)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from ..web.app import create_app
    from ..web.server import server_config

    settings = build_settings(args)
    _check_bindable(settings.host, settings.http_port)
    shown_host = f"[{settings.host}]" if ":" in settings.host else settings.host
    if settings.host in ("0.0.0.0", "::"):
        shown_host = "127.0.0.1"
    url = f"http://{shown_host}:{settings.http_port}/"
    if settings.token:
        url += f"?token={settings.token}"
    app = create_app(settings)
    device = _simulated_label(settings) if settings.simulated else settings.device_port()
    print(f"mcuprof: dashboard on {url}  ({device})", flush=True)
    if settings.token:
        print(
            "mcuprof: remote access is on; the token in that URL is required on every request",
            flush=True,
        )
    if app.state.qspy_udp is not None:
        udp_host, udp_port = app.state.qspy_udp.address
        print(f"mcuprof: QSPY front ends on UDP {udp_host}:{udp_port}", flush=True)
        warning = app.state.qspy_udp.port.access.warning()
        if warning:
            print(f"mcuprof: {warning}", flush=True)
    if args.open:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    server = uvicorn.Server(server_config(app, settings))
    server.run()
    return 0
