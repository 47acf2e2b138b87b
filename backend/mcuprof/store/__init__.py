"""Session store: captures kept on disk (SQLite + append-only raw files) for replay and diff."""

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
