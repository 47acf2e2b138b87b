"""What every live link offers the live session: the ``Link`` Protocol and its states.

A link is one conversation with one target on one port: ``DeviceSession`` (a
MiniProfiler device) and ``QSLink`` (a QP target speaking QS) are the two. Both
implement every member below; a capability that only one protocol has is an optional
*part*, an attribute that is None on the links without it:

- ``device_control``: buffer reset, status poll and SET_CONFIG (a MiniProfiler device);
- ``control``: QS-RX commands (a QS target).

The link calls its listener (``SessionListener``) from its own threads; ``hold()`` stops
those calls between two chunks, so a caller can begin a capture at a chunk boundary of
what the listener was given.
"""

from __future__ import annotations

import enum
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..protocol import Metadata, Status


class LinkState(enum.StrEnum):
    """A link's state, and the live session's: JSON and logs show the plain strings."""

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    READY = "ready"
    PROFILING = "profiling"


class DeviceControl(Protocol):
    """The device commands a MiniProfiler device answers (each waits for its answer)."""

    def reset_buffers(self) -> None: ...
    def get_status(self) -> Status: ...
    def set_config(self, payload: bytes) -> None: ...


class Link(Protocol):
    #: The stored session's kind and the decoder's name (``sources.new_source``).
    kind: str
    port: str
    state: str
    metadata: Metadata | None
    #: The stream names its frames itself (QS dictionaries); False: the ELF names them.
    own_names: bool
    #: Records arrive whenever the target traces, not only between Start and Stop.
    traces_while_idle: bool
    #: ``host:port`` a listening link bound, else None.
    listening_on: str | None
    device_control: DeviceControl | None
    control: Any

    @property
    def stats(self) -> Any:
        """Decoder counters (``bytes``, ``records``, ``crc_errors``, ``malformed``...)."""
        ...

    @property
    def records_received_since_start(self) -> int: ...

    def connect(self) -> Metadata: ...
    def start(self, reset: bool = True) -> None: ...
    def stop(self, drain: bool = True) -> Status | None: ...
    def close(self) -> None: ...
    def hold(self) -> AbstractContextManager[Any]: ...

    def capture_header(self) -> bytes:
        """What a stored capture of this link starts with, so that it decodes alone."""
        ...
