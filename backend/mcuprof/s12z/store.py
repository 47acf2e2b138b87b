"""S12Z captures as sessions of their own kind in the session store, and their analysis."""

from __future__ import annotations

import collections
import os
import threading
from pathlib import Path
from typing import Any

from ..capture import CHUNK
from ..errors import UserError
from ..protocol.s12z import LineDecoder, LineEvent, Lines
from ..store import SessionInfo, Store
from .digest import TRACE_CHUNK, analyse_chunks
from .elf import Firmware, load_firmware
from .measures import carried_cycles

KIND = "s12z"


def import_trace(
    store: Store,
    name: str,
    data: bytes | str | os.PathLike[str],
    elf: str | os.PathLike[str] | bytes | None = None,
    *,
    elf_name: str | None = None,
    bus_hz: float | None = None,
    vector_base: int | None = None,
    notes: str = "",
) -> SessionInfo:
    """Store a PDO capture (bytes or a file, read in chunks) as a finished S12Z session. The
    ELF is checked first, so a bad one is refused before anything is stored."""
    if elf is not None:
        load_firmware(elf, vector_base, name=elf_name)
    decoder = LineDecoder()
    cycles = 0

    def take(events: list[LineEvent]) -> None:
        nonlocal cycles
        for e in events:
            if isinstance(e, Lines):
                cycles += int(carried_cycles(e.lines).sum())

    writer = store.create(
        name, elf, None, elf_name=elf_name, source="import", notes=notes, kind=KIND
    )
    try:
        for chunk in _chunks(data):
            for at in range(0, len(chunk), TRACE_CHUNK):
                take(decoder.feed(chunk[at : at + TRACE_CHUNK]))
            writer.append(chunk)
        take(decoder.close())
    except BaseException:
        writer.abort()
        store.delete(writer.id)
        raise
    st = decoder.stats
    stats: dict[str, Any] = {
        "kind": KIND,
        "records": st.good,  # the sessions table's "Records" column: lines, for S12Z
        **st.as_dict(),
        "bus_hz": bus_hz,
        "vector_base": vector_base,
        "cycles": cycles,
    }
    # The trace's own span is known in time only with the bus clock.
    return writer.finish(stats, duration_us=cycles * 1e6 / bus_hz if bus_hz else None)


def _chunks(data: bytes | str | os.PathLike[str]) -> Any:
    if isinstance(data, bytes | bytearray | memoryview):
        view = memoryview(data)
        for i in range(0, len(view), CHUNK):
            yield bytes(view[i : i + CHUNK])
        return
    path = Path(data)
    try:
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                yield chunk
    except OSError as exc:
        raise UserError(f"{path.name}: cannot read the capture ({exc.strerror or exc})") from None


class _Cache:
    """Analyses of finished sessions (they never change): a few, most recent first."""

    def __init__(self, size: int = 4) -> None:
        self._items: collections.OrderedDict[tuple[Any, ...], dict[str, Any]] = (
            collections.OrderedDict()
        )
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> dict[str, Any] | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            return None

    def put(self, key: tuple[Any, ...], value: dict[str, Any]) -> None:
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_cache = _Cache()
TIMELINE_POINTS = 5000


def session_analysis(
    store: Store, sid: int, bus_hz: float | None = None
) -> tuple[SessionInfo, dict[str, Any]]:
    """The session and its analysis, with the interrupt timeline. ``bus_hz`` overrides the
    clock given at import."""
    info = store.get(sid)
    if info.kind != KIND:
        raise UserError(f"session {sid} is a {info.kind} capture, not an S12Z trace")
    saved = info.link_stats or {}
    hz = bus_hz if bus_hz is not None else saved.get("bus_hz")
    vector_base = saved.get("vector_base")
    key = (id(store), sid, info.raw_bytes, info.elf_sha256, hz)
    cached = _cache.get(key)
    if cached is not None:
        return info, cached
    elf = store.elf_bytes(sid)
    firmware = (
        load_firmware(elf, vector_base, name=info.elf_name or f"session {sid}")
        if elf is not None
        else Firmware.none()
    )
    # Read, decoded and analysed a piece at a time (digest.Analysis): memory bounded
    # whatever the trace's length. The timeline's step needs the interrupt count first.
    interrupts = (saved.get("lines") or {}).get("PTVB")
    if not isinstance(interrupts, int):
        interrupts = _count_interrupts(store, sid)
    chunks = store.raw_chunks(sid, TRACE_CHUNK)
    result = analyse_chunks(chunks, firmware, hz, (interrupts, TIMELINE_POINTS))
    if elf is None:
        result["elf"] = None
    result["warnings"] = firmware.warnings
    _cache.put(key, result)
    return info, result


def _count_interrupts(store: Store, sid: int) -> int:
    """PTVB lines of a stored trace (for a session whose import did not count them)."""
    decoder = LineDecoder()
    for chunk in store.raw_chunks(sid, TRACE_CHUNK):
        decoder.feed(chunk)
    decoder.close()
    return decoder.stats.lines["PTVB"]
