"""Folded stacks, byte-exact per CLARIFICATIONS.md, written many lines at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..profile import Profile, Window
from ..profile.aggregate import folded_lines


def write(
    profile: Profile,
    out: Callable[[bytes], Any],
    window: Window = None,
    title: tuple[str, str] | None = None,
) -> None:
    """The lines as UTF-8 bytes, a piece at a time, made as bytes (no str between)."""
    with profile.lock:  # the paths are the live profile's, added to by its reader
        names, pids, us = folded_lines(profile, window)
        for piece in names.lines_utf8(pids, us):
            out(piece)


def render(profile: Profile, window: Window = None) -> str:
    parts: list[str] = []
    write(profile, lambda b: parts.append(str(b, "utf-8")), window)
    return "".join(parts)
