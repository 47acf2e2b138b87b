"""A stored session opened into the live views by the CLI's loader (``Kind.load_stored``,
the tables ``mcuprof info`` and ``compare`` read), instead of replayed through the live
path: a paced device, the link's reader and a tick-at-a-time ingest cost 1.5-7x the
loader's time (bench/restarts.py).

``Loading`` is the open in progress, shown where a replay's progress is (health
``replay``: label, received, total, pct, rate), so the page's progress bar and source
line work as they did. Its ``update`` is the loader's progress callback: it runs on the
decode pool's thread and only stores numbers; it raises ``Cancelled`` once the open is
stopped (Stop replay), which ends the loader between two pieces.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Any


class Cancelled(Exception):
    """The open was stopped before the loader finished."""


class Loading:
    def __init__(self, label: str, total: int | None, clock: Callable[[], float]) -> None:
        self.label = label
        self.total = total  # records, when the store counted them
        self.clock = clock
        self.started = clock()
        self.received = 0
        self.done_bytes = 0
        self.all_bytes = 0
        self.cancelled = False
        self.counts: Any = None  # a QS session's stream counts (StoredCounts), once read

    def update(self, done: int, total: int, records: int) -> None:
        if self.cancelled:
            raise Cancelled
        self.done_bytes, self.all_bytes, self.received = done, total, records

    def progress(self) -> dict[str, Any]:
        elapsed = self.clock() - self.started
        # The percent of the bytes read: the records' count is known only for some.
        pct = 100.0 * self.done_bytes / self.all_bytes if self.all_bytes else None
        return {
            "label": self.label,
            "received": self.received,
            "total": self.total,
            "pct": min(100.0, pct) if pct is not None else None,
            "rate": self.received / elapsed if elapsed > 0 else None,  # records/s
        }


def feed_monitors(
    chunks: Iterable[bytes], tick_hz: int | None, loading: Loading, listener: Any
) -> dict[str, Any]:
    """A stored QS stream through the live link's source into the QS monitors, as a
    replay fed them (the listener's ``on_qs_events`` gets every batch of events in
    stream order). Returns the source's counts (frames, bad frames, gaps, steps...) for
    the health panel."""
    each: Callable[[list[Any]], None] = listener.on_qs_events
    from ...sources.qs import QSSource

    source = QSSource(tick_hz or 0)  # events=True: what the live link decodes
    for chunk in chunks:
        if loading.cancelled:
            raise Cancelled
        batch = source.feed(chunk)
        if batch.events:
            each(batch.events)
    batch = source.close()
    if batch.events:
        each(batch.events)
    return source.stats()


class StoredCounts:
    """An opened session's counts where health_sections reads a link's (``stats``)."""

    def __init__(self, counts: dict[str, Any]) -> None:
        self.stats = types.SimpleNamespace(**counts)
