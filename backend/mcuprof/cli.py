"""The ``mcuprof`` command. Each subcommand lives in ``mcuprof.commands.<name>`` and
exposes ``register(subparsers)``; they are discovered, so adding one touches no other file.

Every failure the user can cause ends as one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from . import __version__, commands
from .console import TerminalText, for_terminal
from .errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcuprof", description="Live profiler for microcontroller firmware."
    )
    parser.add_argument("--version", action="version", version=f"mcuprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if sys.stdout.isatty() and not isinstance(sys.stdout, TerminalText):
        sys.stdout = TerminalText(sys.stdout)  # type: ignore[assignment]
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"mcuprof: error: {for_terminal(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mcuprof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the promise is one line, even for our own bugs
        print(
            f"mcuprof: internal error: {type(exc).__name__}: {for_terminal(exc)}", file=sys.stderr
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
