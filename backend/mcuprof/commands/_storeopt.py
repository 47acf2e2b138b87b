"""``--store URL``: the option every command that reads or writes sessions shares (not a
command itself: the leading underscore keeps cli.py from registering it)."""

from __future__ import annotations

import argparse
from typing import Any

STORE_HELP = (
    "session store: postgresql://USER@HOST/DB for a team store (default: $MCUPROF_STORE, "
    "else SQLite plus files in the data directory)"
)


def add_store_option(parser: argparse.ArgumentParser, default: Any = None) -> None:
    parser.add_argument("--store", default=default, metavar="URL", help=STORE_HELP)


def store_url(args: argparse.Namespace) -> str | None:
    from ..store import resolve_store_url

    return resolve_store_url(getattr(args, "store", None))


def open_from_args(args: argparse.Namespace, **options: Any) -> Any:
    """The store ``--store``/``--data-dir`` (or their environment variables) name."""
    from ..store import open_store, resolve_data_dir

    return open_store(resolve_data_dir(getattr(args, "data_dir", None)), store_url(args), **options)
