"""The one live session the dashboard shows: a DeviceSession, the Profile it feeds, and
the capture being written to the session store.

Threads: the link's reader thread calls the ``on_*`` listener methods. They only append to
a queue or a file and return, so the reader never waits for the profile, a query or a
browser. The 10 Hz ticker (``tick``, run in a worker thread) and the REST queries drain
that queue into the profile under ``_profile_lock``. Device commands are serialised by
``_command_lock`` and run in worker threads, since each one waits for the device.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UserError
from ..link import DeviceSession, validate_port
from ..link.qs_link import LISTEN_SCHEME, QSLink, is_qs_port, validate_listen
from ..link.simulator import SimOptions
from ..profile import Profile
from ..profile.columns import ColumnsFull, Spill
from ..profile.timebase import concat_records
from ..protocol import Metadata, Status, encode_metadata
from ..sources import new_source
from ..store import SessionStore
from ..symbols import SymbolTable, check_build_id
from ..symbols.buildid import BuildIdCheck
from . import views
from .elfs import ElfCatalog, ElfChoice
from .settings import SIM_PORT, Settings

LOG_LIMIT = 1000
RATE_WINDOW_S = 2.0
OVERFLOW_WARN_S = 10.0
INGEST_CHUNK = 1 << 18  # records per Profile.add when a backlog is drained
STORED_CHUNK = 1 << 22  # bytes of a stored capture decoded at a time


@dataclass
class LogEntry:
    seq: int
    t: float  # wall clock, seconds
    level: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "t": self.t, "level": self.level, "message": self.message}


class LiveSession:
    def __init__(
        self,
        settings: Settings,
        catalog: ElfCatalog,
        store: SessionStore | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        session_factory: Callable[..., DeviceSession] = DeviceSession,
        qs_factory: Callable[..., Any] = QSLink,
    ) -> None:
        self.settings = settings
        self.catalog = catalog
        self.store = store
        self.clock = clock
        self.wall = wall
        self.session_factory = session_factory
        self.qs_factory = qs_factory
        # QS monitors (trace log, margins...): each gets ``qs_events(events)`` for every
        # batch of decoded QS events in stream order, and ``qs_reset()`` whenever the
        # profile starts again (connect, Start, replay). qs_events runs on the link's
        # reader thread, like the on_* methods: it must be quick and must not block.
        self.qs_listeners: list[Any] = []
        self._command_lock = threading.Lock()
        self._profile_lock = threading.RLock()
        self._state_lock = threading.Lock()
        self._pending: collections.deque[tuple[str, Any, float]] = collections.deque()
        self.session: DeviceSession | None = None
        self.port: str | None = None
        self.port_label: str | None = None  # shown instead of the port (replays)
        self.baud = settings.baud
        self.state = "disconnected"
        self.reason: str | None = None
        self.metadata: Metadata | None = None
        self.last_status: Status | None = None
        self.log: collections.deque[LogEntry] = collections.deque(maxlen=LOG_LIMIT)
        self._log_seq = 0
        self.elf: ElfChoice | None = catalog.default()
        self.symbols: SymbolTable = SymbolTable.empty()
        self.elf_error: str | None = None
        self.profile = self._empty_profile()
        self.capture_started: float | None = None  # wall clock of the last Start
        # The stored session the views show (opened or replayed from the Sessions tab):
        # id, name, captured_at, records. Exports and the banner follow it until a Start.
        self.opened: dict[str, Any] | None = None
        self.writer: Any = None  # the store's SessionWriter of the capture in progress
        self.capture_id: int | None = None
        self.version = 0  # bumped whenever the profile gains data or is replaced
        self._published_version = -1
        self._rates: collections.deque[tuple[float, int, int]] = collections.deque()
        self._overflow_seen: int | None = None
        self._overflow_grew_at: float | None = None
        self._errors_seen = (0, 0)
        self._oldest_unpublished: float | None = None
        self._next_icicle_at = 0.0
        self.latencies_ms: collections.deque[float] = collections.deque(maxlen=20000)
        self.frame_ms: collections.deque[float] = collections.deque(maxlen=20000)
        self.seq = 0
        self.replay_total: int | None = None
        self._replay_started = 0.0
        self._replay_restore: tuple[str, int, str | None] | None = None
        self._replay_ending = False
        self._received_at_status = 0
        self._final_received = 0  # Received of the link last closed (health after Disconnect)
        self._status_at: float | None = None
        self._last_health: str = ""
        self._last_health_at = 0.0
        if self.elf is not None:
            try:
                self.symbols = catalog.load(self.elf)
                self.profile = self._empty_profile()
            except UserError as exc:
                self.elf_error = str(exc)
                self._log("error", f"ELF {self.elf.label}: {exc}")

    # ------------------------------------------------------------- listener (reader thread)

    def on_raw(self, data: bytes) -> None:
        writer = self.writer
        if writer is not None:
            try:
                writer.append(data)
            except UserError as exc:
                self._recording_failed(str(exc))

    def on_metadata(self, meta: Metadata) -> None:
        self.metadata = meta
        self._pending.append(("meta", meta, self.wall()))
        writer = self.writer
        if writer is not None:
            with contextlib.suppress(UserError):
                writer.set_metadata(meta)

    def on_records(self, records: np.ndarray) -> None:
        if not self._taking:
            return  # a QS target's stream between Connect and Start, or after Stop
        now = self.wall()
        if self._oldest_unpublished is None:
            self._oldest_unpublished = now
        self._pending.append(("records", records, now))

    def on_status(self, status: Status) -> None:
        # What had arrived when the device sent this: records before it in the stream
        # were decoded first (one reader thread), so this is its own moment's count.
        session = self.session
        if session is not None:
            self._received_at_status = int(session.records_received_since_start)
        self._status_at = self.clock()
        self.last_status = status

    def on_state(self, state: str, reason: str | None) -> None:
        previous = self.state
        self.state = state
        self.reason = reason
        if state == "disconnected" and previous != "disconnected":
            if self.session is None:
                return  # our own Disconnect (or a replay's end): disconnect() logs it
            self._log(
                "warning" if reason else "info", f"disconnected{': ' + reason if reason else ''}"
            )
            self._close_capture(interrupted=bool(reason))

    def on_log(self, level: str, message: str) -> None:
        self._log(level, message)

    def on_qs_events(self, events: list[Any]) -> None:
        for listener in list(self.qs_listeners):
            try:
                listener.qs_events(events)
            except Exception as exc:  # a monitor must not cost the capture
                self._log("error", f"QS monitor failed: {exc!r}")

    def _qs_reset(self) -> None:
        for listener in list(self.qs_listeners):
            try:
                listener.qs_reset()
            except Exception as exc:
                self._log("error", f"QS monitor failed: {exc!r}")

    @staticmethod
    def _held(session: Any) -> Any:
        hold = getattr(session, "hold", None)
        return hold() if hold is not None else contextlib.nullcontext()

    @property
    def kind(self) -> str:
        """The protocol of the connected source: 'miniprofiler' or 'qs'."""
        if self.session is not None:
            self._last_kind = str(getattr(self.session, "kind", "miniprofiler"))
        return self._last_kind

    _last_kind = "miniprofiler"
    # Whether records go into the profile: a MiniProfiler device sends them only while
    # profiling; a QS target traces whenever its filters are on, and the profile holds
    # what came between Start and Stop (QS monitors see everything).
    _taking = True
    _restoring = False
    _capture_kind = "miniprofiler"

    # ------------------------------------------------------------- log

    def _log(self, level: str, message: str) -> None:
        with self._state_lock:
            self._log_seq += 1
            self.log.append(LogEntry(self._log_seq, self.wall(), level, message))

    def log_since(self, seq: int) -> list[dict[str, Any]]:
        with self._state_lock:
            return [e.as_dict() for e in self.log if e.seq > seq]

    # ------------------------------------------------------------- commands (worker threads)

    def connect(self, port: str | None, baud: int | None, proto: str | None = None) -> None:
        """``proto`` 'qs' makes a serial or socket:// port a QS target; listen:// and
        sim://?proto=qs ports are QS targets anyway."""
        text = (port or "").strip() or self.settings.device_port()
        if proto not in (None, "", "mp", "qs"):
            raise UserError(f"unknown protocol {proto!r}: mp (MiniProfiler) or qs (QS target)")
        if port is None and proto is None:
            proto = self.settings.proto
        qs = proto == "qs" or is_qs_port(text)
        if text.lower().startswith(LISTEN_SCHEME):
            if proto == "mp":
                raise UserError("listen:// ports are for QS targets")
            validate_listen(text, self.settings.allow_remote)
            port_ok = text
        else:
            port_ok = validate_port(text)
        if qs and port_ok.startswith(SIM_PORT) and not is_qs_port(port_ok):
            port_ok = validate_port(port_ok + ("&" if "?" in port_ok else "?") + "proto=qs")
        baud = self.baud if baud is None else int(baud)
        if not 300 <= baud <= 20_000_000:
            raise UserError(f"baud rate {baud} is out of range")
        with self._command_lock:
            if self.session is not None and self.state == "disconnected":
                # The link died on its own (unplugged): clear it away before reconnecting.
                with contextlib.suppress(Exception):
                    self.session.close()
                self.session = None
            if self.session is not None:
                raise UserError("already connected: disconnect first")
            try:
                url = self._with_sim_options(port_ok)
            except ValueError as exc:
                raise UserError(f"{port_ok}: {exc}") from None
            self.state = "connecting"
            self.reason = None
            self._log("info", f"connecting to {self.describe_port(port_ok)} at {baud} baud")
            if qs:
                session = self.qs_factory(
                    url,
                    baud,
                    self,
                    tick_hz=self.settings.qs_tick_hz,
                    allow_remote=self.settings.allow_remote,
                )
            else:
                session = self.session_factory(url, baud, self)
            try:
                meta = session.connect()
            except UserError as exc:
                with contextlib.suppress(Exception):
                    session.close()
                self.state = "disconnected"
                self.reason = str(exc)
                self._log("error", str(exc))
                raise
            self.session = session
            self.port = port_ok
            self.port_label = None
            self.baud = baud
            self.metadata = meta
            self.last_status = None
            self.state = session.state
            if qs:
                self._taking = False
                if not self._restoring:  # after a replay its trace stays in the monitors
                    self._qs_reset()
            else:
                self._taking = True
            check = self.build_check()
            # A QS target has no build ID to check: connecting one is a normal action.
            doubtful = check.state == "mismatch" or (check.state != "match" and not qs)
            self._log(
                "warning" if doubtful else "info",
                f"connected: firmware {meta.fw_version or '?'}; {check.message}",
            )

    def _with_sim_options(self, port: str) -> str:
        """Fill in the simulator's defaults, and keep file paths from the browser out."""
        if not port.startswith(SIM_PORT):
            return port
        query = port.partition("?")[2]
        options = SimOptions.from_query(query)
        if options.proto == "qs":
            return port  # the simulated QP target runs no ELF
        if options.elf not in (None, "default", "none") and port != self.settings.port:
            raise UserError("sim:// elf= paths can only be given on the command line")
        if options.elf is None and self.elf is not None and self.elf.kind != "upload":
            # The simulated firmware runs the ELF the page resolves symbols with.
            options.elf = str(self.elf.path)
        if self.settings.sim_rate and "rate=" not in query:
            options.rate = float(self.settings.sim_rate)
        if options.baud is None and self.settings.sim_baud:
            # A paced 115200-baud link would overflow at the default rate: the demo
            # link runs fast unless the URL says otherwise.
            options.baud = self.settings.sim_baud
        text = options.to_query()
        return SIM_PORT + ("?" + text if text else "")

    def replay(
        self,
        factory: Callable[..., DeviceSession],
        label: str,
        total: int | None = None,
        opened: dict[str, Any] | None = None,
    ) -> None:
        """Play a stored session into the live views (the store's replay device), without
        recording it again. With ``total`` (its record count) the replay shows progress
        and ends by itself, reconnecting the device that was connected before."""
        if self.port_label is None:
            self._replay_restore = (
                (self.port, self.baud, "qs" if self.kind == "qs" else None)
                if self.connected and self.port is not None
                else None
            )
        self.disconnect()
        self.replay_total = total
        self._replay_ending = False
        self._replay_started = self.clock()
        with self._command_lock:
            self.state = "connecting"
            session = factory(SIM_PORT, self.baud, self)
            try:
                meta = session.connect()
                self.session = session
                self.port = SIM_PORT
                self.port_label = label
                self.metadata = meta
                self.last_status = None
                self._new_profile()
                self._taking = True
                self.capture_started = self.wall()
                self.opened = opened
                session.start()
            except UserError as exc:
                with contextlib.suppress(Exception):
                    session.close()
                self.session = None
                self.state = "disconnected"
                self._log("error", f"replay failed: {exc}")
                raise
            self.state = session.state
            self._log("info", label)

    def replay_progress(self) -> dict[str, Any] | None:
        if self.port_label is None or self.session is None:
            return None
        received = int(self.session.records_received_since_start)
        total = self.replay_total
        elapsed = self.clock() - self._replay_started
        return {
            "label": self.port_label,
            "received": received,
            "total": total,
            "pct": min(100.0, 100.0 * received / total) if total else None,
            "rate": received / elapsed if elapsed > 0 else None,  # records/s since it began
        }

    def _replay_done(self) -> bool:
        progress = self.replay_progress()
        if progress is None or not progress["total"] or self._replay_ending:
            return False
        return bool(progress["received"] >= progress["total"])

    def finish_replay(self) -> None:
        """The replay has played every record: leave its data in the views and put the
        connection back as it was before (the device reconnected, ready)."""
        with self._state_lock:
            if self._replay_ending:
                return
            self._replay_ending = True
        progress = self.replay_progress()
        restore, self._replay_restore = self._replay_restore, None
        self.disconnect()
        self.port_label = None
        self.replay_total = None
        if progress is not None:
            self._log("info", f"replay finished: {progress['received']:,} records played")
        if restore is not None:
            self._restoring = True
            try:
                self.connect(*restore)
            except UserError as exc:
                self._log("error", f"could not reconnect after the replay: {exc}")
            finally:
                self._restoring = False

    def disconnect(self) -> None:
        with self._command_lock:
            session = self.session
            if session is None:
                return
            if self.state == "profiling" and self.port_label is None and self.kind != "qs":
                # Reconcile as Stop does: the device stops, its ring drains and its final
                # count arrives, so Captured = Received + Lost holds after a Disconnect too.
                try:
                    session.stop()
                except UserError as exc:
                    self._log("warning", f"Disconnect while profiling: no final count ({exc})")
            self.session = None
            # Received stays what it was: the health panel reconciles against it.
            self._final_received = int(session.records_received_since_start)
            with contextlib.suppress(Exception):
                session.close()
            self.state = "disconnected"
            self.reason = None
            self._log("info", "disconnected")
            self._close_capture(interrupted=False)

    @property
    def connected(self) -> bool:
        return self.session is not None and self.state != "disconnected"

    def _require(self) -> DeviceSession:
        if self.session is None or self.state == "disconnected":
            raise UserError("not connected: choose a port and click Connect")
        return self.session

    def start(self) -> None:
        with self._command_lock:
            session = self._require()
            if self.port_label is not None:
                raise UserError("a replay is playing: stop the replay before starting a capture")
            self._close_capture(interrupted=False)
            self.opened = None  # the views show this new capture from now on
            # Under the link's feed lock: the capture's first byte and the profile's
            # first record are the same moment (QS targets stream before Start).
            with self._held(session):
                self._new_profile()
                self._open_capture()
                self._taking = True
                # The previous capture's device count is not this one's.
                self.last_status = None
                self._status_at = None
                self._received_at_status = 0
            try:
                session.start()
            except UserError as exc:
                self._log("error", f"Start failed: {exc}")
                self._discard_capture()
                raise
            self.state = session.state
            self._log("info", "profiling started")

    def stop(self) -> None:
        with self._command_lock:
            session = self._require()
            try:
                session.stop()
            except UserError as exc:
                self._log("error", f"Stop failed: {exc}")
                raise
            self.state = session.state
            sid = self.capture_id
            with self._held(session):
                self._taking = self.kind != "qs"
            stored = self._close_capture(interrupted=False)
            if stored is None:
                self._log("info", f"profiling stopped; {self.profile_records():,} records")
            else:
                self._log("info", f"profiling stopped; {stored:,} records stored in session {sid}")

    def reset_buffers(self) -> None:
        with self._command_lock:
            session = self._require()
            try:
                session.reset_buffers()
            except UserError as exc:
                self._log("error", f"Reset buffers failed: {exc}")
                raise
            self._overflow_seen = None
            self._overflow_grew_at = None
            self._log("info", "device buffers reset")

    def control(self) -> Any:
        """The connected QS target's control object: ``rx`` (qs.rx.RxCommands) builds
        checked commands, ``send_rx(cmd)`` sends one (qs_control.py, the QS panel)."""
        session = self.session
        if session is None or self.state == "disconnected" or not hasattr(session, "send_rx"):
            raise UserError("QS commands need a QS target: connect one first")
        if self.port_label is not None:  # a stored QS session replayed through a QSLink
            raise UserError("a replay is playing: QS commands need a live QS target")
        return session

    def qs_command(self, name: str) -> None:
        """A QS-RX command to the connected QS target: reset, info or tick."""
        with self._command_lock:
            session = self._require()
            self.control()
            try:
                session.command(name)
            except UserError as exc:
                self._log("error", f"QS {name} failed: {exc}")
                raise
            self._log("info", f"QS-RX {name} sent")

    def refresh_status(self) -> Status:
        with self._command_lock:
            session = self._require()
            try:
                status = session.get_status()
            except UserError as exc:
                self._log("error", f"Refresh status failed: {exc}")
                raise
            self.last_status = status
            return status

    def close(self) -> None:
        self.disconnect()

    # ------------------------------------------------------------- captures

    def _open_capture(self) -> None:
        if self.store is None:
            return
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.wall()))
        version = self.metadata.fw_version if self.metadata else ""
        name = f"{version or 'capture'} {stamp}".strip()
        elf_path = self.elf.path if self.elf is not None and self.elf.path.is_file() else None
        try:
            writer = self.store.create(
                name,
                None if self.kind == "qs" else elf_path,
                self.metadata,
                elf_name=self.elf.label if self.elf and self.kind != "qs" else None,
                kind=self.kind,
            )
        except UserError as exc:
            self._log("error", f"cannot record this capture: {exc}")
            return
        # A raw capture on its own must know its timer frequency and build ID (QS: the
        # target info and dictionaries seen before Start).
        header = getattr(self.session, "capture_header", None)
        if header is not None:
            writer.append(header())
        elif self.metadata is not None:
            writer.append(encode_metadata(self.metadata))
        self.writer = writer
        self._capture_kind = self.kind
        self.capture_id = writer.id
        self.capture_started = self.wall()

    def _close_capture(self, interrupted: bool) -> int | None:
        """Finish the recording. Returns its record count: the records decoded from the
        stored bytes, the one number the session list, detail, CLI and log all show."""
        writer, self.writer = self.writer, None
        if writer is None:
            return None
        with self._profile_lock:
            # The capture's own time span, not how long the recording stayed open,
            # including records still queued for the profile.
            self.ingest()
            duration_us = self.profile.duration_us
        stats: dict[str, Any] | None = None
        try:
            writer.flush()
            stats = self._count_stored(writer.id)
        except UserError as exc:
            self._log("error", f"could not count the recording: {exc}")
        try:
            if interrupted:
                writer.abort(stats, duration_us)
            else:
                writer.finish(stats, duration_us)
        except UserError as exc:
            self._log("error", f"could not finish the recording: {exc}")
        if stats is not None and stats["records"] == 0 and self.store is not None:
            # Start then Stop (or a replay) before any record arrived: no empty session.
            with contextlib.suppress(UserError):
                self.store.delete(writer.id)
                self._log("info", f"nothing was captured; session {writer.id} not kept")
                if self.capture_id == writer.id:
                    self.capture_id = None
        return None if stats is None else int(stats["records"])

    def _count_stored(self, sid: int) -> dict[str, Any]:
        """Decode the stored capture a few MB at a time: read whole, an hour at 50,000
        records/s (2.4 GiB) took 3.7 GB of RSS at Stop."""
        source = new_source(self._capture_kind, self.settings.qs_tick_hz)
        if self.store is not None:
            for chunk in self.store.raw_chunks(sid, STORED_CHUNK):  # checked: regular files only
                source.feed(chunk)
        source.close()
        return source.stats()

    def _discard_capture(self) -> None:
        """A Start the device refused (NACK, no answer) leaves no session behind,
        unless records arrived anyway (a START whose ACK was lost): those are kept."""
        writer = self.writer
        self._close_capture(interrupted=True)
        if writer is None or self.store is None or self.profile_records():
            return
        with contextlib.suppress(UserError):
            self.store.delete(writer.id)
        if self.capture_id == writer.id:
            self.capture_id = None

    def _new_profile(self) -> None:
        with self._profile_lock:
            self._pending.clear()
            self._oldest_unpublished = None
            self.profile = self._empty_profile()
            if self.metadata is not None:
                self.profile.set_timer_freq(self.metadata.timer_freq or 1_000_000)
            self.version += 1
        if self.kind == "qs":
            self._qs_reset()

    def _frame_symbols(self) -> Any:
        """The names of the profile's frames: the source's own (QS dictionaries), else
        the ELF's."""
        own = getattr(self.session, "symbols", None)
        return own if own is not None else self.symbols

    def _empty_profile(self) -> Profile:
        # Records on disk, memory-mapped: an hour of capture fits in bounded RSS.
        return Profile(self._frame_symbols(), spill=Spill(self.settings.columns_dir))

    def raw_capture(self) -> tuple[int, str] | None:
        """The session id of what is on view (an opened session, else the current or last
        capture, flushed), and a file-name stem."""
        if self.store is not None and self.opened is not None:
            return int(self.opened["id"]), self.file_stem()
        if self.store is None or self.capture_id is None:
            return None
        writer = self.writer
        if writer is not None:
            with contextlib.suppress(UserError):
                writer.flush()
        return self.capture_id, self.file_stem()

    # ------------------------------------------------------------- ELF

    def select_elf(self, choice: ElfChoice) -> None:
        symbols = self.catalog.load(choice)  # UserError on a bad ELF; nothing changes
        with self._profile_lock:
            self.ingest()
            self.elf = choice
            self.symbols = symbols
            self.elf_error = None
            if getattr(self.session, "symbols", None) is None:
                self.profile.set_symbols(symbols)
            self.version += 1
        check = self.build_check()
        self._log(
            "info" if check.state != "mismatch" else "warning",
            f"ELF {choice.label} loaded: {len(symbols.functions)} functions; {check.message}",
        )
        for warning in getattr(symbols, "warnings", []) or []:
            self._log("warning", f"ELF {choice.label}: {warning}")

    def build_check(self) -> Any:
        if self.kind == "qs":
            return BuildIdCheck("unknown", None, None, "QS target: names from its dictionaries")
        device = self.metadata.elf_build_id if self.metadata is not None else None
        return check_build_id(device, self.symbols.build_id if self.elf else None)

    # ------------------------------------------------------------- profile access

    def ingest(self) -> int:
        """Move queued records into the profile. Returns the number of records added."""
        try:
            return self._ingest()
        except ColumnsFull as exc:  # the disk (or mapping) holding the columns is full
            with self._profile_lock:  # what is queued would fail again on every tick
                self._pending.clear()
            self._recording_failed(str(exc))
            return 0

    def _recording_failed(self, why: str) -> None:
        """Stop recording for good (a full disk): no more records are taken, the session
        is closed with what was written, one line goes to the log; the server stays up."""
        self._taking = False
        writer, self.writer = self.writer, None
        if writer is None:
            return
        self._log("error", f"recording stopped: {why}")
        logging.getLogger("mcuprof.web").error("recording stopped: %s", why)  # the server's log
        with contextlib.suppress(UserError, OSError):
            writer.abort()

    def _ingest(self) -> int:
        added = 0
        with self._profile_lock:
            batch: list[np.ndarray] = []
            held = 0
            # What is queued now, not what the reader adds meanwhile: a fast source
            # (a max-speed replay) would otherwise keep this loop, and the lock, forever.
            for _ in range(len(self._pending)):
                kind, item, _ = self._pending.popleft()
                if kind == "meta":
                    if batch:
                        self.profile.add(concat_records(batch))
                        batch, held = [], 0
                    self.profile.set_timer_freq(item.timer_freq or 1_000_000)
                else:
                    batch.append(item)
                    added += len(item)
                    held += len(item)
                    if held >= INGEST_CHUNK:  # bounds an add's temporaries after a backlog
                        self.profile.add(concat_records(batch))
                        batch, held = [], 0
            if batch:
                self.profile.add(concat_records(batch))
            if added:
                self.version += 1
        return added

    def profile_records(self) -> int:
        return int(getattr(self.profile, "n_records", 0))

    def file_stem(self) -> str:
        version = self.metadata.fw_version if self.metadata and self.metadata.fw_version else ""
        safe = _file_safe(version) or "unknown"
        when = self.capture_time()
        stem = f"mcuprof-{safe}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(when))}"
        if self.opened is not None:  # a stored session: its own name, not when it was opened
            name = _file_safe(self.opened["name"])
            stem += f"-session{self.opened['id']}-{name[:60]}".rstrip("-_")
        return stem

    def capture_time(self) -> float:
        """Wall clock of the capture the views show: a stored session's own start."""
        if self.opened is not None and self.opened.get("captured_at") is not None:
            return float(self.opened["captured_at"])
        return self.capture_started if self.capture_started is not None else self.wall()

    # ------------------------------------------------------------- status for the page

    def device_info(self) -> dict[str, Any]:
        meta = self.metadata
        check = self.build_check()
        return {
            "port": self.port,
            "baud": self.baud,
            "simulated": bool(self.port and self.port.startswith(SIM_PORT) and not self.port_label),
            "replay": self.port_label is not None,
            "kind": self.kind,
            "listening_on": getattr(self.session, "listening_on", None),
            "label": self.port_label or self._port_text(),
            "fw_version": meta.fw_version if meta else None,
            "mcu_clock_hz": meta.mcu_clock_hz if meta else None,
            "timer_freq": meta.timer_freq if meta else None,
            "device_build_id": meta.elf_build_id if meta and self.kind != "qs" else None,
            "elf_build_id": self.symbols.build_id if self.elf else None,
            "build_check": {"state": check.state, "message": check.message},
        }

    def _port_text(self) -> str | None:
        listening = getattr(self.session, "listening_on", None)
        if listening:
            return f"QS target via listen://{listening}"  # the port actually bound
        return self.describe_port(self.port) if self.port else None

    @staticmethod
    def describe_port(port: str | None) -> str:
        if port is None:
            return ""
        if port.startswith(SIM_PORT):
            return "Simulated QS target" if is_qs_port(port) else "Simulated device"
        return port

    def health(self) -> dict[str, Any]:
        """Counters as they are now, plus the rates and warnings the ticker last computed
        (computing those advances the rate window, which only the ticker should do)."""
        rates = self._rates_cache if self._rates_cache is not None else self._compute_rates()
        session = self.session
        stats = session.stats if session is not None else None
        status = self.last_status
        received = (
            int(session.records_received_since_start)
            if session is not None
            else self._final_received
        )
        captured = status.records_captured if status is not None else None
        # Captured is the device's counter as of its last status; Received counts what
        # arrived since Start. While profiling, records the device still holds or has on
        # the wire are "in flight" (captured, neither dropped nor received when that
        # status was sent); what the device dropped (overflows) is lost. After Stop the
        # link drains and asks again, so Captured = Received + Lost exactly.
        profiling = self.state == "profiling"
        in_flight = 0
        if captured is not None:
            at_status = self._received_at_status if profiling else received
            overflows = status.buffer_overflows if status is not None else 0
            if profiling:
                in_flight = max(0, captured - overflows - at_status)
                loss = min(overflows, captured)
            else:
                loss = max(0, captured - received)
        else:
            loss = 0
        if captured is not None and profiling:
            # The device's count is as of its last status; what arrived since was captured
            # too, so the count shown is never below Received (its age is shown beside it).
            captured = max(captured, received)
        status_age = (
            self.clock() - self._status_at
            if self._status_at is not None and status is not None
            else None
        )
        return {
            "state": self.state,
            "reason": self.reason,
            "profiling": self.state == "profiling",
            "buffer_usage": status.buffer_usage_percent if status is not None else None,
            "overflows": status.buffer_overflows if status is not None else None,
            "captured": captured,
            "received": received,
            "in_flight": in_flight,
            "status_age_s": status_age,
            "loss": max(0, loss),
            "loss_pct": (100.0 * max(0, loss) / captured) if captured else 0.0,
            "crc_errors": stats.crc_errors if stats is not None else 0,
            "malformed": stats.malformed if stats is not None else 0,
            "skipped_bytes": stats.skipped_bytes if stats is not None else 0,
            "unsupported_version": stats.unsupported_version if stats is not None else 0,
            "profile_records": self.profile_records(),
            "replay": self.replay_progress(),
            "qs": self._qs_health(stats),
            "capture_id": self.capture_id,
            "recording": self.writer is not None,
            "opened": self.opened,
            **rates,
        }

    _rates_cache: dict[str, Any] | None = None

    _qs_seen = (0, 0)

    def _log_qs_growth(self, stats: Any) -> None:
        bad, gaps = int(stats.bad_frames), int(stats.discontinuities)
        seen_bad, seen_gaps = self._qs_seen
        if bad < seen_bad or gaps < seen_gaps:
            seen_bad = seen_gaps = 0  # a new link: counters restarted
        if bad > seen_bad:
            self._log("warning", f"{bad - seen_bad} bad QS frame(s) dropped, {bad} in all")
        if gaps > seen_gaps:
            self._log(
                "warning",
                f"{gaps - seen_gaps} QS sequence discontinuity(ies): frames lost on the target "
                f"or the link ({gaps} in all)",
            )
        self._qs_seen = (bad, gaps)

    def _qs_health(self, stats: Any) -> dict[str, Any] | None:
        """QS link health: frames, bad frames, sequence discontinuities (lost frames)."""
        if stats is None or self.kind != "qs":
            return None
        keys = ("frames", "bad_frames", "discontinuities", "rtc_steps", "unfinished_steps")
        keys += ("names_lumped", "dictionary_overflow")
        out = {k: int(getattr(stats, k, 0)) for k in keys}
        # The other bounded losses (docs/limits.md): the log's cut texts, idle drops.
        out["idle_dropped"] = int(getattr(self.session, "idle_dropped", 0))
        for monitor in self.qs_listeners:
            out |= getattr(monitor, "bounded_losses", dict)()
        return out

    def _compute_rates(self) -> dict[str, Any]:
        now = self.clock()
        session = self.session
        stats = session.stats if session is not None else None
        status = self.last_status
        bytes_total = stats.bytes if stats is not None else 0
        records_total = stats.records if stats is not None else 0
        if self._rates and (bytes_total < self._rates[-1][1] or records_total < self._rates[-1][2]):
            self._rates.clear()  # a new session: counters restarted
        self._rates.append((now, bytes_total, records_total))
        while len(self._rates) > 2 and now - self._rates[0][0] > RATE_WINDOW_S:
            self._rates.popleft()
        t0, b0, r0 = self._rates[0]
        dt = now - t0
        overflows = status.buffer_overflows if status is not None else None
        if overflows is not None:
            # The link logs each growth; here it only lights the warning for a while.
            if self._overflow_seen is not None and overflows > self._overflow_seen:
                self._overflow_grew_at = now
            self._overflow_seen = overflows
        if stats is not None:
            # CRC errors are logged by the link's status poller; malformed packets are not.
            if stats.malformed > self._errors_seen[1]:
                grown = stats.malformed - self._errors_seen[1]
                self._log(
                    "warning", f"{grown} malformed packet(s) dropped, {stats.malformed} in all"
                )
            self._errors_seen = (stats.crc_errors, stats.malformed)
            if self.kind == "qs":
                self._log_qs_growth(stats)
        return {
            "bytes_per_s": (bytes_total - b0) / dt if dt > 0 else 0.0,
            "records_per_s": (records_total - r0) / dt if dt > 0 else 0.0,
            "overflow_warning": self._overflow_grew_at is not None
            and now - self._overflow_grew_at < OVERFLOW_WARN_S,
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "connected": self.connected,
            "device": self.device_info(),
            "health": self.health(),
            "elf": self.elf.as_dict() if self.elf else None,
            "elf_error": self.elf_error,
            "elf_warnings": list(getattr(self.symbols, "warnings", []) or []),
            "default_port": self.settings.device_port(),
            "default_port_label": self.describe_port(self.settings.device_port()),
            "version": self.version,
            "file_stem": self.file_stem(),
            "capture_started": self.capture_started,
            "range": self.time_range(),
        }

    def time_range(self) -> list[float] | None:
        """The profile's span as of its last ingest (the ticker's, 10 a second). Read
        without the profile lock, and without ingesting: an export's snapshot or the merge
        of a replay's backlog holds that lock for seconds, and /api/state (which runs on
        the few worker threads every request shares) must not wait for them."""
        profile = self.profile  # (one read: a Reset may put a new one in its place)
        if int(getattr(profile, "n_records", 0)) == 0:
            return None
        return [float(profile.t0_us), float(profile.t1_us)]

    # ------------------------------------------------------------- live updates

    def tick(self, want_icicle: bool) -> str | None:
        """One update for every tab, as JSON, or None when nothing changed. Runs in a
        worker thread at ``update_hz``."""
        self.ingest()
        if self._replay_done():
            threading.Thread(
                target=self.finish_replay, name="mcuprof-replay-end", daemon=True
            ).start()
        now = self.clock()
        self._rates_cache = self._compute_rates()
        health = self.health()
        health_text = json.dumps(health, sort_keys=True)
        log = self.log_since(self._published_log_seq())
        changed = self.version != self._published_version
        message: dict[str, Any] = {"type": "update"}
        if want_icicle and changed and now >= self._next_icicle_at:
            started = self.clock()
            with self._profile_lock:
                message["icicle"] = views.icicle(self.profile, None, self.settings.icicle_max_nodes)
                message["range"] = self.time_range()
                message["version"] = self.version
                recv = self._oldest_unpublished
                self._oldest_unpublished = None
            self._published_version = self.version
            spent = self.clock() - started
            # Keep the icicle from eating the server: never more than ~1/3 of a core.
            self._next_icicle_at = self.clock() + 2 * spent
            if recv is not None:
                message["recv_ts"] = recv * 1000.0
        if (
            "icicle" not in message
            and not log
            and health_text == self._last_health
            and (now - self._last_health_at < 1.0)
        ):
            return None
        self._last_health = health_text
        self._last_health_at = now
        self.seq += 1
        message["seq"] = self.seq
        message["health"] = health
        message["log"] = log
        if log:
            self._published_log = log[-1]["seq"]
        message["device"] = self.device_info()
        message["connected"] = self.connected
        message["server_ts"] = self.wall() * 1000.0
        return json.dumps(message)

    _published_log = 0

    def _published_log_seq(self) -> int:
        return self._published_log

    def on_client_message(self, text: str) -> None:
        """Frame-drawn reports from the page: latency from record received to drawn."""
        try:
            msg = json.loads(text)
        except ValueError:
            return
        if not isinstance(msg, dict) or msg.get("type") != "drawn":
            return
        recv = msg.get("recv_ts")
        if isinstance(recv, int | float):
            self.latencies_ms.append(self.wall() * 1000.0 - float(recv))
        frame = msg.get("frame_ms")
        if isinstance(frame, int | float):
            self.frame_ms.append(float(frame))

    def metrics(self) -> dict[str, Any]:
        def pct(values: collections.deque[float], q: float) -> float | None:
            if not values:
                return None
            return float(np.percentile(np.fromiter(values, float), q))

        return {
            "updates": self.seq,
            "latency_samples": len(self.latencies_ms),
            "latency_p50_ms": pct(self.latencies_ms, 50),
            "latency_p95_ms": pct(self.latencies_ms, 95),
            "frame_samples": len(self.frame_ms),
            "frame_p50_ms": pct(self.frame_ms, 50),
            "frame_p95_ms": pct(self.frame_ms, 95),
            "profile_records": self.profile_records(),
        }


def _file_safe(text: str) -> str:
    """``text`` for a file name: letters, digits and ``.-_`` kept, anything else ``_``."""
    return "".join(ch if ch.isalnum() or ch in ".-_" else "_" for ch in text)
