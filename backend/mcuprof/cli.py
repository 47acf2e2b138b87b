"""The ``mcuprof`` command. Each subcommand lives in ``mcuprof.commands.<name>`` and
exposes ``register(subparsers)``; they are discovered, so adding one touches no other file.
A command's module is named as the command, so a run imports that module alone (plus
all of them for ``--help`` or a mistyped name): process start is part of every command.

Every failure the user can cause ends as one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from . import __version__, commands
from .console import TerminalText, for_terminal
from .errors import UserError


def _modules() -> list[str]:
    """The command modules, by a listing of the package's directory: pkgutil would
    import inspect (and more) on every run for the same answer."""
    names = set()
    for folder in commands.__path__:
        for entry in os.listdir(folder):
            stem, dot, ext = entry.partition(".")
            if dot and ext in ("py", "pyc") and stem.isidentifier() and not stem.startswith("_"):
                names.add(stem)
    return sorted(names)


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size finds it (COLUMNS first)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, told the terminal's width: left to find it, argparse
    imports shutil (and with it bz2, lzma, fnmatch) on every run, help shown or not."""

    def __init__(self, prog: str, **kwargs: object) -> None:
        if kwargs.get("width") is None:
            kwargs["width"] = _columns() - 2
        super().__init__(prog, **kwargs)  # type: ignore[arg-type]


class _Parser(argparse.ArgumentParser):
    """Subcommands' parsers use that formatter unless their command picks another."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


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
    parser = _Parser(prog="mcuprof", description="Live profiler for microcontroller firmware.")
    parser.add_argument("--version", action="version", version=f"mcuprof {__version__}")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    every = _modules()
    for name in every if all_commands else _command_names(argv, every):
        module = importlib.import_module(f"{commands.__name__}.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return _main(argv)[0]


def run() -> None:
    """The ``mcuprof`` command (console script and ``python -m mcuprof``): ``main``, then,
    for the whole-capture commands, an exit that skips the interpreter's teardown
    (freeing every array and module one by one: 40-60 ms of a 0.6 s export, measured)."""
    code, quick = _main(None)
    if quick:
        _quick_exit(code)
    sys.exit(code)


def _main(argv: Sequence[str] | None) -> tuple[int, bool]:
    """The exit status, and whether the command asked for a quick exit (``quick_exit``
    in its defaults: commands whose files are closed, and threads joined, when they
    return)."""
    parser = build_parser(argv, all_commands=False)
    args = parser.parse_args(argv)
    quick = bool(getattr(args, "quick_exit", False))
    if sys.stdout.isatty() and not isinstance(sys.stdout, TerminalText):
        sys.stdout = TerminalText(sys.stdout)  # type: ignore[assignment]
    try:
        return int(args.func(args) or 0), quick
    except UserError as exc:
        print(f"mcuprof: error: {for_terminal(exc)}", file=sys.stderr)
        return 2, quick
    except KeyboardInterrupt:
        print("mcuprof: interrupted", file=sys.stderr)
        return 130, quick
    except BrokenPipeError:
        return 0, quick
    except Exception as exc:  # the promise is one line, even for our own bugs
        print(
            f"mcuprof: internal error: {type(exc).__name__}: {for_terminal(exc)}", file=sys.stderr
        )
        # (a command whose 1 means something else, compare's "regression", says so)
        return int(getattr(args, "error_exit", 1)), quick


def _quick_exit(code: int) -> None:
    """Exit now, as a normal exit would but for the teardown: what is buffered for
    stdout and stderr is written and the atexit handlers run (logging's among them)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: as a normal exit
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    run()
