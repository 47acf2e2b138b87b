"""Which link the live session has, on which port, in which state; and a replay's
bookkeeping (a replay is a link to a recording, shown under a label of its own).

Changed under the live session's command lock, except ``state`` and ``reason``, which
the link's reader thread sets too (``LiveSession.on_state``); read from any thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import UserError
from ...link.base import LinkState
from ...link.open import LinkOpener, LinkProtocol, close_quietly
from ...protocol import Metadata


class Connection:
    def __init__(self, links: LinkOpener, baud: int, clock: Callable[[], float]) -> None:
        self.links = links
        self.clock = clock
        self.link: Any = None  # a Link (link/base.py)
        self.port: str | None = None
        self.proto = links.default.proto  # as connect() takes it ("miniprofiler", "qs")
        self.port_label: str | None = None  # shown instead of the port (replays)
        self.baud = baud
        self.state: str = LinkState.DISCONNECTED
        self.reason: str | None = None
        self.metadata: Metadata | None = None
        self.kind = links.default.kind  # of the link connected last
        self.listening_on: str | None = None
        self.own_names = False  # the link's stream names its frames itself
        # A replay: its record count when known, when it began, the port to reconnect
        # when it ends, and whether it is ending.
        self.replay_total: int | None = None
        self.replay_started = 0.0
        self.restore: tuple[str, int, str] | None = None  # port, baud, proto
        self.replay_ending = False
        # A stored session being opened by the loader (open.py), shown as a replay's
        # progress is; None otherwise.
        self.loading: Any = None

    @property
    def protocol(self) -> LinkProtocol:
        return self.links.protocol(self.kind)

    @property
    def connected(self) -> bool:
        return self.link is not None and self.state != LinkState.DISCONNECTED

    def require(self) -> Any:
        if self.link is None or self.state == LinkState.DISCONNECTED:
            raise UserError("not connected: choose a port and click Connect")
        return self.link

    def clear_dead(self) -> None:
        """A link that died on its own (unplugged): cleared away before reconnecting."""
        if self.link is not None and self.state == LinkState.DISCONNECTED:
            close_quietly(self.link)
            self.link = None
        if self.link is not None:
            raise UserError("already connected: disconnect first")

    def open(self, link: Any, port: str, label: str | None) -> Metadata:
        """Connect ``link`` and make it the live one. A failure closes it and raises."""
        self.state = LinkState.CONNECTING
        try:
            meta = link.connect()
        except UserError:
            close_quietly(link)
            self.state = LinkState.DISCONNECTED
            raise
        self.link = link
        self.port, self.port_label = port, label
        self.proto = self.links.protocol(link.kind).proto
        self.metadata = meta
        self.kind = link.kind
        self.listening_on = link.listening_on
        self.own_names = link.own_names
        self.state = link.state
        return meta

    def drop(self) -> Any:
        """Forget the live link (the caller closes it); returns it."""
        link, self.link = self.link, None
        self.listening_on = None
        self.state = LinkState.DISCONNECTED
        self.reason = None
        return link

    def port_text(self) -> str | None:
        if self.listening_on:
            return self.links.describe_listening(self.listening_on)
        return self.links.describe_port(self.port) if self.port else None

    # ------------------------------------------------------------- replay

    def replay_progress(self) -> dict[str, Any] | None:
        loading = self.loading
        if loading is not None:
            return loading.progress()
        if self.port_label is None or self.link is None:
            return None
        received = int(self.link.records_received_since_start)
        total = self.replay_total
        elapsed = self.clock() - self.replay_started
        return {
            "label": self.port_label,
            "received": received,
            "total": total,
            "pct": min(100.0, 100.0 * received / total) if total else None,
            "rate": received / elapsed if elapsed > 0 else None,  # records/s since it began
        }

    def replay_done(self) -> bool:
        if self.loading is not None:
            return False  # an open ends when its loader returns, not by a count
        progress = self.replay_progress()
        if progress is None or not progress["total"] or self.replay_ending:
            return False
        return bool(progress["received"] >= progress["total"])
