"""The kinds of capture: one object per kind (``kinds/<name>.py``), which says what the
rest of the code needs to know of it: its name, how it is told from the bytes, its
source, live link and replay device, how a stored session of it is loaded and counted,
and which views and controls it offers. Outside ``kinds/`` and the protocol packages
(``protocol/``, ``sources/``, ``link/``, ``qs/``, ``s12z/``) nothing compares a kind's
name: it asks the kind object (tests/test_kinds.py).

Adding a kind: its protocol code below, one module here defining ``KIND``, and its
entry in ``KINDS``."""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from . import miniprofiler, qs, s12z
from .base import DEVICE_CONTROL, PROFILE, QS_MONITOR, QS_RX, S12Z_REPORT, Kind

KINDS: tuple[Kind, ...] = (miniprofiler.KIND, qs.KIND, s12z.KIND)
DEFAULT = miniprofiler.KIND  # what an unsure detection and an old store's sessions are
# Input names that mean a kind (its one name is always accepted): "mp" is older.
ALIASES = {"mp": miniprofiler.KIND.name}
_BY_NAME = {k.name: k for k in KINDS}

NAMES = tuple(_BY_NAME)
PROFILE_NAMES = tuple(k.name for k in KINDS if k.profiles)  # --kind and import choices
LIVE_NAMES = tuple(k.name for k in KINDS if k.live)  # serve --proto choices


def input_name(text: str) -> str:
    """A kind's name as a user may type it: any case, ``mp`` for miniprofiler."""
    key = text.strip().lower()
    return ALIASES.get(key, key)


def get(name: str) -> Kind:
    """The kind of a stored session (its one name); a one-line UserError otherwise."""
    kind = _BY_NAME.get(name)
    if kind is None:
        raise UserError(f"unknown capture kind {name!r}: one of {', '.join(NAMES)}")
    return kind


def resolve(name: str | None) -> Kind:
    """The kind a user named (an alias too); the default when none is named."""
    return get(input_name(name)) if name else DEFAULT


def session_tick_hz(info: Any, fallback: int | None) -> int | None:
    """The rate a session's ticks are read with when its kind does not say (QS): the one
    stored with it (the rate it was recorded with, or set since: web/qs_time.py), else
    ``fallback`` (the server's)."""
    meta = info.metadata
    if get(info.kind).ticks_assumed and meta is not None and meta.timer_freq:
        return int(meta.timer_freq)
    return fallback


def detect(data: bytes) -> Kind | None:
    """The kind told from a capture's first bytes (sources.detect_kind); None when no
    decoder finds anything in them."""
    from ..sources import detect_kind

    name = detect_kind(data)
    return None if name is None else get(name)


__all__ = [
    "ALIASES",
    "DEFAULT",
    "DEVICE_CONTROL",
    "KINDS",
    "LIVE_NAMES",
    "NAMES",
    "PROFILE",
    "PROFILE_NAMES",
    "QS_MONITOR",
    "QS_RX",
    "S12Z_REPORT",
    "Kind",
    "detect",
    "get",
    "input_name",
    "resolve",
]
