"""The ``mcuprof`` command. Each subcommand lives in ``mcuprof.commands.<name>`` and
exposes ``register(subparsers)``; they are discovered, so adding one touches no other file.
A command's module is named as the command, so a run imports that module alone (plus
all of them for ``--help`` or a mistyped name): process start is part of every command.

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


def _command_names(argv: Sequence[str] | None, names: list[str]) -> list[str]:
    """The command modules to register: the one named in ``argv``, else all of them."""
    args = list(sys.argv[1:] if argv is None else argv)
    typed = next((a for a in args if not a.startswith("-")), None)
    if typed in names and "--version" not in args[: args.index(typed)]:
        return [typed]
    return names


def build_parser(
    argv: Sequence[str] | None = None, *, all_commands: bool = True
) -> argparse.ArgumentParser:
    """The parser; ``all_commands=False`` registers only the command ``argv`` names."""
    parser = argparse.ArgumentParser(
        prog="mcuprof", description="Live profiler for microcontroller firmware."
    )
    parser.add_argument("--version", action="version", version=f"mcuprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    every = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))
    for name in every if all_commands else _command_names(argv, every):
        module = importlib.import_module(f"{commands.__name__}.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(argv, all_commands=False)
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
