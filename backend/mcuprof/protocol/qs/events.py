"""The QS decoder's events. All are immutable tuples (cheap to build per frame)."""

from __future__ import annotations

from typing import Any, NamedTuple

from .config import QSConfig
from .dictionaries import Dictionaries
from .framing import BadFrame, Discontinuity
from .records import record_group, record_name


class Record(NamedTuple):
    """One decoded QS record. ``values`` line up with ``names`` (the layout's field
    names); ``config`` and ``dicts`` are the sizes and dictionaries in force when it
    arrived, so it can be rendered later exactly as at that moment."""

    index: int
    seq: int
    rec: int
    timestamp: int | None
    names: tuple[str, ...]
    values: tuple[Any, ...]
    config: QSConfig
    dicts: Dictionaries
    raw: bytes

    @property
    def name(self) -> str:
        return record_name(self.rec)

    @property
    def group(self) -> str:
        return record_group(self.rec)

    @property
    def fields(self) -> dict[str, Any]:
        return dict(zip(self.names, self.values, strict=True))

    def __getattr__(self, item: str) -> Any:
        # Field access by name, e.g. record.obj; NamedTuple's own attributes win.
        try:
            return self.values[self.names.index(item)]
        except ValueError:
            raise AttributeError(item) from None


class Malformed(NamedTuple):
    """A good frame whose data does not fit its record's layout (QSPY: "bytes unused"
    or "bytes needed"), or whose sizes the configuration cannot express."""

    index: int
    seq: int
    rec: int
    message: str
    raw: bytes

    @property
    def name(self) -> str:
        return record_name(self.rec)


QSEvent = Record | Malformed | BadFrame | Discontinuity
