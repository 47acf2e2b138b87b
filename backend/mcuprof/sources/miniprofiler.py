"""MiniProfiler: PROFILE_DATA records are the Profile's records as they come."""

from __future__ import annotations

from typing import Any

from ..profile.timebase import concat_records
from ..protocol import Metadata, ProfileData, ResponseDecoder
from .base import Batch

KIND = "miniprofiler"


class MiniProfilerSource:
    kind = KIND
    own_names = False  # addresses, named with the firmware's ELF

    def __init__(self) -> None:
        self.decoder = ResponseDecoder(batch=True)  # back-to-back packets as one array
        self.metadata: Metadata | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> Batch:
        return self._batch(self.decoder.feed(data))

    def close(self) -> Batch:
        return self._batch(self.decoder.close())

    def _batch(self, events: list[Any]) -> Batch:
        records = []
        others = []
        for event in events:
            if isinstance(event, ProfileData):
                records.append(event.records)
            else:
                if isinstance(event, Metadata):
                    self.metadata = event
                others.append(event)
        out = Batch(events=others)
        if records:
            out.records = concat_records(records)
        return out

    def stats(self) -> dict[str, Any]:
        return self.decoder.stats.as_dict()

    @staticmethod
    def looks_like(data: bytes) -> int:
        """Good packets in a sample of the stream (for telling captures apart)."""
        decoder = ResponseDecoder()
        decoder.feed(data)
        decoder.close()
        return sum(decoder.stats.packets.values())
