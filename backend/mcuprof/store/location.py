"""Where the session store lives. Every command and the server resolve it here, once."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV_VAR = "MCUPROF_DATA_DIR"


def resolve_data_dir(
    cli_value: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Path:
    """``--data-dir`` beats ``MCUPROF_DATA_DIR`` beats ``$XDG_DATA_HOME/mcuprof``
    (which is ``~/.local/share/mcuprof`` when XDG_DATA_HOME is unset)."""
    env = os.environ if env is None else env
    if cli_value:
        return Path(cli_value).expanduser()
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR]).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "mcuprof"
