"""Session store: captures kept on disk (SQLite + append-only raw files) for replay and diff."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
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
    "SessionBusy",
    "SessionInfo",
    "SessionNotFound",
    "SessionStore",
    "SessionWriter",
    "resolve_data_dir",
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
}


__getattr__ = lazy_getattr(__name__, _HOME)
