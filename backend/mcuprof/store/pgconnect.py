"""Reaching a PostgreSQL store: the URL's credentials kept out of every message, the
schema brought up to date by plain SQL migrations recorded in the database."""

from __future__ import annotations

import re
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from ..errors import UserError

if TYPE_CHECKING:
    import psycopg

# Advisory locks of this store live under one 32-bit class, so they cannot meet another
# application's locks on the same database: (LOCK_CLASS, session id) marks a live writer,
# (LOCK_CLASS, 0) serialises migrations. Session ids must then fit 31 bits.
LOCK_CLASS = 0x6D637570  # "mcup"
MIGRATION_LOCK = 0
MAX_SESSION_ID = (1 << 31) - 1
CONNECT_TIMEOUT_S = 10  # unless the URL sets connect_timeout: a silent host, one line

_PASSWORD_PARAM = re.compile(r"(?i)(password=)[^&\s]*")


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def scrub_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (in the netloc and the query), for
    messages and logs. TLS file paths and other parameters stay: they are not secret."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}{':***' if sep else ''}@{hostport}"
    query = _PASSWORD_PARAM.sub(r"\1***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub_text(text: str, url: str) -> str:
    """An error message from libpq with any trace of the URL's password removed."""
    secret = urlsplit(url).password
    text = text.replace(url, scrub_url(url))
    if secret:
        text = text.replace(secret, "***")
    return " ".join(_PASSWORD_PARAM.sub(r"\1***", text).split())


def connect(url: str) -> psycopg.Connection:
    """An autocommit connection; the URL goes to libpq as is, so sslmode, sslrootcert,
    PGPASSFILE, PGPASSWORD and the other libpq settings apply unchanged."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - a dependency; only a broken install lacks it
        raise UserError("a postgresql:// store needs psycopg (pip install psycopg)") from None
    try:
        given = psycopg.conninfo.conninfo_to_dict(url)
        timeout = {} if "connect_timeout" in given else {"connect_timeout": CONNECT_TIMEOUT_S}
        return psycopg.connect(url, autocommit=True, **timeout)
    except psycopg.Error as exc:
        reason = scrub_text(str(exc), url)
        raise UserError(f"cannot open store {scrub_url(url)}: {reason}") from None


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply the migrations not yet recorded, in name order, each in its own transaction;
    concurrent opens wait for each other. Returns the names applied."""
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, MIGRATION_LOCK))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS mcuprof_migrations ("
            "name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        done = {r[0] for r in conn.execute("SELECT name FROM mcuprof_migrations")}
        for name, sql in migrations():
            if name in done:
                continue
            with conn.transaction():
                conn.execute(sql)  # type: ignore[arg-type]  # our own files, no parameters
                conn.execute("INSERT INTO mcuprof_migrations (name) VALUES (%s)", (name,))
            applied.append(name)
    newer = done - {name for name, _ in migrations()}
    if newer:
        raise UserError(f"the store was written by a newer mcuprof ({min(newer)}); upgrade")
    return applied


def migrations() -> list[tuple[str, str]]:
    """(file name, SQL) of store/migrations/pg/*.sql, in name order."""
    folder = resources.files(__package__).joinpath("migrations", "pg")
    files = sorted(f for f in folder.iterdir() if f.name.endswith(".sql"))
    return [(f.name, f.read_text(encoding="utf-8")) for f in files]
