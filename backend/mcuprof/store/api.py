"""What every caller may ask of a session store, whichever backend holds it: SQLite plus
files in the data directory (store/sessions.py) or PostgreSQL (store/pg.py).
``open_store`` is the one place that picks the backend."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from ..protocol import LinkStats, Metadata
from .model import SessionInfo

STORE_ENV_VAR = "MCUPROF_STORE"


class Writer(Protocol):
    """A session being written (store/writer.py, store/pgwriter.py)."""

    error: str | None

    @property
    def id(self) -> int: ...
    @property
    def bytes_written(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def append(self, data: bytes | bytearray | memoryview) -> None: ...
    def set_metadata(self, meta: Metadata) -> None: ...
    def flush(self) -> None: ...
    def finish(
        self,
        stats: LinkStats | dict[str, Any] | None = None,
        duration_us: float | None = None,
        loss: dict[str, Any] | None = None,
    ) -> SessionInfo: ...
    def abort(
        self,
        stats: LinkStats | dict[str, Any] | None = None,
        duration_us: float | None = None,
        loss: dict[str, Any] | None = None,
    ) -> SessionInfo: ...


class Store(Protocol):
    """The public interface both backends implement (tests/store/test_backends.py)."""

    data_dir: Path  # local caches (column spills, uploads) even when sessions live elsewhere

    def create(self, name: str, elf_path: Any = None, metadata: Metadata | None = None,
               **options: Any) -> Writer: ...  # fmt: skip
    def import_capture(self, name: str, data: Any, elf: Any = None, **options: Any
                       ) -> SessionInfo: ...  # fmt: skip
    def writer(self, session_id: int) -> Writer | None: ...
    def list(self, where: dict[str, str] | None = None) -> list[SessionInfo]: ...
    def get(self, session_id: int) -> SessionInfo: ...
    def tags(self, session_id: int) -> dict[str, str]: ...
    def set_tags(self, session_id: int, tags: dict[str, str]) -> SessionInfo: ...
    def summary(self, session_id: int, version: int) -> dict[str, Any] | None: ...
    def save_summary(self, session_id: int, version: int, summary: dict[str, Any]) -> None: ...
    def raw(self, session_id: int) -> bytes: ...
    # The one way to read a session's bytes as the device sent them, in pieces of at
    # most ``chunk``, whatever the store keeps (zstd frames, old uncompressed files, rows).
    def raw_chunks(self, session_id: int, chunk: int = ...) -> Iterator[bytes]: ...
    def elf_bytes(self, session_id: int) -> bytes | None: ...
    def raw_size(self, session_id: int) -> int: ...
    def raw_location(self, session_id: int) -> str: ...
    def elf_location(self, session_id: int) -> str | None: ...
    def rename(self, session_id: int, name: str) -> SessionInfo: ...
    def set_notes(self, session_id: int, notes: str) -> SessionInfo: ...
    def set_tick_hz(self, session_id: int, hz: int) -> SessionInfo: ...
    def delete(self, session_id: int) -> None: ...
    def recover(self) -> list[int]: ...
    def flush_due(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Store: ...
    def __exit__(self, *exc: object) -> None: ...


def resolve_store_url(cli_value: str | None = None, env: Mapping[str, str] | None = None
                      ) -> str | None:  # fmt: skip
    """``--store`` beats ``MCUPROF_STORE``; None (or empty) is the embedded store."""
    env = os.environ if env is None else env
    return cli_value or env.get(STORE_ENV_VAR) or None


def open_store(
    data_dir: str | os.PathLike[str], store_url: str | None = None, **options: Any
) -> Store:
    """The store to use: PostgreSQL for a ``postgresql://`` URL, else SQLite plus files
    under ``data_dir``. ``options`` (autoflush, clocks) go to either constructor."""
    from ..errors import UserError
    from .pgconnect import is_postgres_url, scrub_url

    if not store_url:
        from .sessions import SessionStore

        return SessionStore(data_dir, **options)
    if not is_postgres_url(store_url):
        raise UserError(
            f"--store {scrub_url(store_url)}: expected postgresql://USER@HOST/DB "
            "(leave it unset for the store in the data directory)"
        )
    from .pg import PgSessionStore

    return PgSessionStore(store_url, data_dir, **options)


def describe(store: Any) -> str:
    """Where a store's sessions are, for messages: its directory or its scrubbed URL."""
    return str(getattr(store, "location", None) or store.data_dir)
