"""MiniProfiler: the device's PROFILE_DATA records are the profile's records; frames are
addresses, named with the firmware's ELF. Its protocol: protocol/ (top level),
sources/miniprofiler.py, link/session.py (DeviceSession), link/replay.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .base import DEVICE_CONTROL, PROFILE, Kind

if TYPE_CHECKING:
    from pathlib import Path


class MiniProfiler(Kind):
    name = "miniprofiler"
    label = "MiniProfiler"
    views = (PROFILE,)
    controls = (DEVICE_CONTROL,)
    live = True
    names_from_elf = True
    counts_loss = True
    detectable = True
    nothing_found = "MiniProfiler capture: no valid packet"

    def new_source(self, tick_hz: int | None = None) -> Any:
        from ..sources import new_source

        return new_source(self.name, tick_hz)

    def link_factory(self) -> Callable[..., Any]:
        from ..link import DeviceSession

        return DeviceSession

    def load_stored(
        self,
        store: Any,
        sid: int,
        symbols: Any,
        tick_hz: int | None = None,
        progress: Callable[[int, int, int], None] | None = None,
    ) -> Any:
        """The session decoded into a profile whose records live on disk, read from its
        file a few MB at a time: a session larger than RAM can be compared."""
        import mmap
        import os

        from ..capture import CHUNK
        from ..profile import load_capture
        from ..profile.columns import Spill

        spill = Spill(store.data_dir / "columns")
        f = store.open_raw(sid)  # a regular file, or a one-line UserError (a 4xx)
        if f is None:
            return load_capture(b"", symbols, spill=spill).profile
        f = _as_file(f, store.data_dir / "columns")
        with f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return load_capture(b"", symbols, spill=spill).profile
            with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mm:

                def read_pages_leave(done: int, total: int, records: int) -> None:
                    mm.madvise(mmap.MADV_DONTNEED)  # what was decoded leaves RSS
                    if progress is not None:
                        progress(done, total, records)

                try:
                    with memoryview(mm) as view:  # CHUNK bytes (~300k records) per add
                        return load_capture(
                            view, symbols, progress=read_pages_leave, chunk=CHUNK, spill=spill
                        ).profile
                finally:
                    mm.madvise(mmap.MADV_DONTNEED)

    def count_stored(self, store: Any, sid: int) -> dict[str, Any] | None:
        from ..summary import summarize_chunks

        return summarize_chunks(store.raw_chunks(sid), 0)

    def simulated(self, firmware: Any, device: Any, rate: float) -> str:
        return (
            f"{firmware.source} ({len(firmware.functions)} functions, "
            f"build id 0x{device.metadata.elf_build_id:08x}) at {rate:g} records/s"
        )

    def replay(
        self,
        path: Path,
        speed: float | None,
        *,
        metadata: Any = None,
        tick_hz: int | None = None,
        throttle: Callable[[], bool] | None = None,
    ) -> tuple[Any, Callable[..., Any]]:
        from ..link.replay import ReplayDevice, replay_factory

        device = ReplayDevice(path, speed, metadata=metadata)
        if throttle is not None:
            device.throttle = throttle
        return device, replay_factory(device, speed, metadata)


KIND = MiniProfiler()


def _as_file(f: Any, spool_dir: Any) -> Any:
    """A stream that is a file as it is; one that is not (a PostgreSQL store's chunk rows)
    copied, a chunk at a time, to an unnamed temporary file to be mapped like one."""
    import shutil
    import tempfile

    from ..capture import CHUNK

    try:
        f.fileno()
        return f
    except OSError:  # io.UnsupportedOperation
        pass
    spool_dir.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.TemporaryFile(dir=spool_dir)  # noqa: SIM115 - the caller closes it
    with f:
        shutil.copyfileobj(f, tmp, CHUNK)
    tmp.seek(0)
    return tmp
