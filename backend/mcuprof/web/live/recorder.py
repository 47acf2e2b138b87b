"""The capture being written to the session store, from Start to Stop (or unplug).

``append`` runs on the link's reader thread and only writes bytes; ``open``, ``close``
and ``discard`` run under the live session's command lock. A failure to write (a full
disk) stops the recording for good with one line in the log: the records already
written stay in the session, and the server stays up.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from ... import kinds
from ...errors import UserError
from ...loss import LossChunks
from ...protocol import Metadata, encode_metadata
from ...store import Store

STORED_CHUNK = 1 << 22  # bytes of a stored capture decoded at a time


class Recorder:
    def __init__(
        self,
        store: Store | None,
        new_source: Callable[[str], Any],
        log: Callable[[str, str], None],
        wall: Callable[[], float],
        tags: dict[str, str] | None = None,
    ) -> None:
        self.store = store
        self.tags = dict(tags or {})  # serve --tag: every capture stored carries them
        self.new_source = new_source  # kind -> the decoder that counts a stored capture
        self.log = log
        self.wall = wall
        self.writer: Any = None  # the store's SessionWriter of the capture in progress
        self.capture_id: int | None = None
        self.kind = ""  # the recording's kind (its decoder)
        self.closing = False  # close() is finishing the session (see ``recording``)

    # ------------------------------------------------------------- reader thread

    def append(self, data: bytes) -> bool:
        """Write the link's bytes; False when the writing failed (see ``failed``)."""
        writer = self.writer
        if writer is None:
            return True
        try:
            writer.append(data)
        except UserError as exc:
            self.failed(str(exc))
            return False
        return True

    def set_metadata(self, meta: Metadata) -> None:
        writer = self.writer
        if writer is not None:
            with contextlib.suppress(UserError):
                writer.set_metadata(meta)

    # ------------------------------------------------------------- commands

    def open(self, kind: str, meta: Metadata | None, elf: Any, header: bytes | None) -> bool:
        """Start recording a capture of ``kind``; ``elf`` is the ELF choice to store
        with it (None: names come from the stream). ``header`` starts the raw bytes so
        that they decode on their own (None: the metadata's own packet)."""
        if self.store is None:
            return False
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.wall()))
        version = meta.fw_version if meta else ""
        name = f"{version or 'capture'} {stamp}".strip()
        elf_path = elf.path if elf is not None and elf.path.is_file() else None
        try:
            writer = self.store.create(
                name,
                elf_path,
                meta,
                elf_name=elf.label if elf else None,
                kind=kind,
                tags=self.tags,
            )
        except UserError as exc:
            self.log("error", f"cannot record this capture: {exc}")
            return False
        if header is None and meta is not None:
            header = encode_metadata(meta)
        if header:
            writer.append(header)
        self.writer = writer
        self.kind = kind
        self.capture_id = writer.id
        return True

    def close(self, interrupted: bool, span: Callable[[], float], chunk: int) -> int | None:
        """Finish the recording, ``span()`` its time span in µs. Returns its record
        count: the records decoded from the stored bytes (``chunk`` bytes at a time),
        the one number the session list, detail, CLI and log all show."""
        writer, self.writer = self.writer, None
        if writer is None:
            return None
        # Until the session is stored as finished, it still reads as recording: the page
        # refreshes its list when this flips, and must find the finished row then.
        self.closing = True
        try:
            return self._close(writer, interrupted, span, chunk)
        finally:
            self.closing = False

    @property
    def recording(self) -> bool:
        """A capture is being recorded, or its session is being finished."""
        return self.writer is not None or self.closing

    def _close(
        self, writer: Any, interrupted: bool, span: Callable[[], float], chunk: int
    ) -> int | None:
        duration_us = span()
        stats: dict[str, Any] | None = None
        loss = LossChunks(kinds.get(self.kind).counts_loss)
        try:
            writer.flush()
            stats = self._count_stored(writer.id, chunk, loss)
        except UserError as exc:
            self.log("error", f"could not count the recording: {exc}")
        try:
            if interrupted:
                writer.abort(stats, duration_us, loss.result())
            else:
                writer.finish(stats, duration_us, loss.result())
        except UserError as exc:
            self.log("error", f"could not finish the recording: {exc}")
        # Start then Stop (or a replay) before any record arrived: no empty session.
        if stats is not None and stats["records"] == 0 and self._delete(writer.id):
            self.log("info", f"nothing was captured; session {writer.id} not kept")
        return None if stats is None else int(stats["records"])

    def _count_stored(self, sid: int, chunk: int, loss: LossChunks) -> dict[str, Any]:
        """Decode the stored capture a few MB at a time: read whole, an hour at 50,000
        records/s (2.4 GiB) took 3.7 GB of RSS at Stop. ``loss`` reads the device's
        counters (its STATUS packets) from the same pieces."""
        if loss.on and self.store is not None:  # one decode gives the counts and the loss
            for piece in self.store.raw_chunks(sid, chunk):  # checked: regular files only
                loss.feed(piece)
            loss.result()
            return loss.decoder.stats.as_dict()
        source = self.new_source(self.kind)
        if self.store is not None:
            for piece in self.store.raw_chunks(sid, chunk):  # checked: regular files only
                source.feed(piece)
        source.close()
        return source.stats()

    def discard(self, span: Callable[[], float], chunk: int, kept: Callable[[], int]) -> None:
        """A Start the device refused (NACK, no answer) leaves no session behind,
        unless records arrived anyway (a START whose ACK was lost): those are kept."""
        writer = self.writer
        self.close(True, span, chunk)
        if writer is not None and not kept():
            self._delete(writer.id)

    def _delete(self, sid: int) -> bool:
        if self.store is None:
            return False
        try:
            self.store.delete(sid)
        except UserError:
            return False
        if self.capture_id == sid:
            self.capture_id = None
        return True

    def failed(self, why: str) -> None:
        """Stop recording for good (a full disk): the session is closed with what was
        written, one line goes to the log and the server's log."""
        writer, self.writer = self.writer, None
        if writer is None:
            return
        self.log("error", f"recording stopped: {why}")
        logging.getLogger("mcuprof.web").error("recording stopped: %s", why)
        with contextlib.suppress(UserError, OSError):
            writer.abort()

    def flushed_id(self) -> int | None:
        """The current or last capture's id, its bytes flushed to the file."""
        writer = self.writer
        if writer is not None:
            with contextlib.suppress(UserError):
                writer.flush()
        return self.capture_id
