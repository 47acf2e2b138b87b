"""What every source gives the shared model, whatever protocol it speaks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..profile.keyed import KeyedCalls
from ..protocol import RECORD_DTYPE, Metadata


def no_records() -> np.ndarray:
    return np.empty(0, RECORD_DTYPE)


@dataclass
class Batch:
    """What one ``feed`` decoded: the Profile's records (RECORD_DTYPE, or a source's
    KeyedCalls; stream order) and
    the protocol's other events in stream order (METADATA, STATUS, ACK; QS records)."""

    records: np.ndarray | KeyedCalls = field(default_factory=no_records)
    events: list[Any] = field(default_factory=list)


class Source(Protocol):
    """A sans-IO protocol decoder plus what turns its events into Profile records.

    ``feed`` takes bytes in any split and ``close`` ends the stream; both return a
    Batch. ``own_names``: the source names its frames itself (QS: the target's
    dictionaries) and its records are keyed calls (profile/keyed.py); else they are
    firmware addresses, named with an ELF. ``metadata`` is what the stream said about
    the target so far; its
    ``timer_freq`` converts record ticks to µs. ``stats`` counts what was seen, with
    the link-health keys every source has (bytes, records, crc_errors, malformed,
    skipped_bytes) plus its own."""

    kind: str
    own_names: bool
    metadata: Metadata | None

    def feed(self, data: bytes | bytearray | memoryview) -> Batch: ...
    def close(self) -> Batch: ...
    def stats(self) -> dict[str, Any]: ...
