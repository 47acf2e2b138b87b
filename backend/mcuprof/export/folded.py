"""Folded stacks, byte-exact per CLARIFICATIONS.md."""

from __future__ import annotations

from ..profile import Profile, Window


def render(profile: Profile, window: Window = None) -> str:
    return "".join(f"{stack} {value}\n" for stack, value in profile.folded(window).items())
