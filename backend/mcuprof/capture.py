"""Raw captures: the device-to-host byte stream exactly as a serial logger saves it."""

from __future__ import annotations

import os

from .files import read_file


def read_capture(path: str | os.PathLike[str]) -> bytes:
    return read_file(path, "capture file")
