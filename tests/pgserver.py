"""A throwaway PostgreSQL server from Debian's packages, for the store tests.

It runs in a temporary directory and listens on a Unix socket there only (no TCP port),
so it never meets a system server. PostgreSQL refuses to run as root, and CI runs as
root: then initdb and pg_ctl run as the ``postgres`` user, which owns the directory.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from urllib.parse import quote

INSTALL_HINT = (
    "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run `make sysdeps` "
    "(scripts/install-sysdeps.sh installs the postgresql package)"
)


def bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class PgServer:
    def __init__(self) -> None:
        bins = bin_dir()
        if bins is None:
            raise RuntimeError(INSTALL_HINT)
        self.bins = bins
        # Short: a Unix socket path must fit 107 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="mcuprof-pg-"))
        self.data = self.root / "data"
        self.as_postgres = os.geteuid() == 0
        self.user = "postgres" if self.as_postgres else os.environ.get("USER", "postgres")
        if self.as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", self.data, "-U", self.user, "-A", "trust", "-E", "UTF8",
                  "--no-sync")  # fmt: skip
        opts = (
            f"-k {self.root} -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off -c max_connections=60"
        )
        self._run("pg_ctl", "-D", self.data, "-o", opts, "-l", self.root / "log", "-w", "start")

    def _run(self, tool: str, *args: object) -> None:
        cmd = [str(self.bins / tool), *map(str, args)]
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode:
            log = self.root / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{tool} failed:\n{done.stdout}\n{done.stderr}\n{tail}")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{self.user}@{quote(str(self.root), safe='')}/{db}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
