"""Raw captures: the device-to-host byte stream exactly as a serial logger saves it."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import UserError


def read_capture(path: str | os.PathLike[str]) -> bytes:
    p = Path(path)
    try:
        if p.is_dir():
            raise UserError(f"{p}: is a directory, not a capture file")
        return p.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{p}: no such file") from None
    except PermissionError:
        raise UserError(f"{p}: permission denied") from None
    except OSError as exc:
        raise UserError(f"{p}: cannot read ({exc.strerror or exc})") from None
