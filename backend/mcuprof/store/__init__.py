"""Session store: captures kept for replay and diff, on disk (SQLite + append-only raw files)
or in PostgreSQL (store/pg.py); ``open_store`` picks one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
    from .api import STORE_ENV_VAR, Store, open_store, resolve_store_url
    from .location import ENV_VAR, resolve_data_dir
    from .model import (
        COMPLETE,
        INTERRUPTED,
        RECORDING,
        SessionBusy,
        SessionInfo,
        SessionNotFound,
    )
    from .sessions import SessionStore
    from .writer import SessionWriter

__all__ = [
    "COMPLETE",
    "ENV_VAR",
    "INTERRUPTED",
    "RECORDING",
    "STORE_ENV_VAR",
    "SessionBusy",
    "SessionInfo",
    "SessionNotFound",
    "SessionStore",
    "SessionWriter",
    "Store",
    "open_store",
    "resolve_data_dir",
    "resolve_store_url",
]

# Imported on first use (PEP 562): ``compare`` of two files asks for the data dir's
# location only, and must not pay for SQLite and the store at start.
_HOME = {
    "COMPLETE": "model",
    "ENV_VAR": "location",
    "INTERRUPTED": "model",
    "RECORDING": "model",
    "SessionBusy": "model",
    "SessionInfo": "model",
    "SessionNotFound": "model",
    "SessionStore": "sessions",
    "SessionWriter": "writer",
    "resolve_data_dir": "location",
    "STORE_ENV_VAR": "api",
    "Store": "api",
    "open_store": "api",
    "resolve_store_url": "api",
}


__getattr__ = lazy_getattr(__name__, _HOME)
