"""Names on the live session for what its parts hold.

``Via`` shows one part's attribute on the live session. ``ProtocolNames`` holds the one
name that is the QS protocol's (link/open.py), the QS monitors: web/live/session.py speaks of
links, not protocols, and the app and the tests reach them where they always did.
"""

from __future__ import annotations

from typing import Any

from ...link.open import LinkOpener


class Via:
    """The attribute ``name`` of the part ``part``; ``settable``: tests and the replay
    API set it too."""

    def __init__(self, part: str, name: str, *, settable: bool = False) -> None:
        self.part, self.name, self.settable = part, name, settable

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else getattr(getattr(obj, self.part), self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        if not self.settable:
            raise AttributeError(f"{self.name} is {self.part}'s: read-only here")
        setattr(getattr(obj, self.part), self.name, value)


class ProtocolNames:
    links: LinkOpener

    @property
    def qs_listeners(self) -> list[Any]:
        """The QS monitors: ``qs_events(events)`` per decoded batch, ``qs_reset()``."""
        return self.links.qs.listeners
