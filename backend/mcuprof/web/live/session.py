"""The one live session the dashboard shows: a link to a target, the profile it feeds,
and the capture being written to the session store.

LiveSession coordinates five parts, each with one job:

- ``Connection`` (connection.py): which link, on which port, in which state;
- ``LiveProfile`` (profile.py): the profile and the queue that feeds it;
- ``Recorder`` (recorder.py): the capture being written to the store;
- ``Health`` (health.py): counts, loss, rates and warnings;
- ``Publisher`` (publisher.py): the websocket updates, and what the page reports back;

plus the log (log.py). What differs between protocols is the link's and its
protocol object's (link/base.py, link/open.py): this module never branches on one.
Callers read a part's state from the part that owns it (``live.conn.link``,
``live.feed.profile``, ``live.recorder.capture_id``, the link opener's listeners).

Theory of operation: four kinds of threads, three locks.

- The link's reader thread calls the ``on_*`` listener methods. They only append to
  the profile's queue, write to the recording or store a value, and return: the reader
  never waits for the profile, a query or a browser.
- Commands (connect, Start, Stop, replay...) run in worker threads, one at a time
  under ``_command_lock``, since each may wait for the device for seconds. The link's
  ``hold()`` keeps the reader out while Start swaps the profile and opens the capture,
  so the capture's first byte and the profile's first record are the same moment.
- The ticker (``tick``, a worker thread at ``update_hz``) and the REST queries drain
  the queue into the profile under the profile's lock (``LiveProfile.lock``), which
  queries and exports hold while they read the profile. ``time_range`` and the health
  figures read without it: /api/state must not wait for an export.
- Any thread may log; the log has a lock of its own, held only to append or copy.

Values the reader thread sets (state, metadata, the last status) are single
assignments read whole by the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ...errors import UserError
from ...history.summary import keep_served
from ...link import DeviceSession
from ...link.base import LinkState
from ...link.open import (
    NO_CONTROL,
    REPLAYING_NO_CONTROL,
    LinkOpener,
    SimDefaults,
    close_quietly,
    sim_url,
)
from ...profile.columns import ColumnsFull
from ...profile.keyed import Records
from ...protocol import Metadata, Status
from ...store import Store
from ...symbols import SymbolTable
from ..elfs import ElfCatalog, ElfChoice
from ..filenames import file_stem
from ..settings import SIM_PORT, Settings
from .connection import Connection
from .decode_pool import submit_to_decode_pool
from .health import Health
from .log import LiveLog
from .open import Cancelled, Loading, StoredCounts, feed_monitors
from .profile import LiveProfile
from .publisher import Publisher
from .recorder import STORED_CHUNK, Recorder

__all__ = ["STORED_CHUNK", "LiveSession"]


class LiveSession:
    def __init__(
        self,
        settings: Settings,
        catalog: ElfCatalog,
        store: Store | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        session_factory: Callable[..., Any] = DeviceSession,
        links: LinkOpener | None = None,
    ) -> None:
        self.settings = settings
        self.catalog = catalog
        self.store = store
        self.clock = clock
        self.wall = wall
        self.links = links or LinkOpener.for_settings(settings, session_factory)
        self._listener = self.links.listener(self)
        self._command_lock = threading.Lock()
        self.log = LiveLog(wall)
        self.conn = Connection(self.links, settings.baud, clock)
        self.link_health = Health(clock, self._log)
        self.recorder = Recorder(store, self.links.new_source, self._log, wall, tags=settings.tags)
        self.elf: ElfChoice | None = catalog.default()
        self.symbols: SymbolTable = SymbolTable.empty()
        self.elf_error: str | None = None
        if self.elf is not None:
            try:
                self.symbols = catalog.load(self.elf)
            except UserError as exc:
                self.elf_error = str(exc)
                self._log("error", f"ELF {self.elf.label}: {exc}")
        self.feed = LiveProfile(settings.columns_dir, wall, self.symbols)
        self.publisher = Publisher(self.feed, clock, wall)
        self.capture_started: float | None = None  # wall clock of the last Start
        # The stored session the views show (opened or replayed from the Sessions tab):
        # id, name, captured_at, records. Exports and the banner follow it until a Start.
        self.opened: dict[str, Any] | None = None
        # An opened session's stream counts for the monitors, shown as a link's are
        # (open.py).
        self.opened_counts: Any = None
        # Whether records go into the profile: most devices send them only while
        # profiling; for a target that traces while idle the profile holds what came
        # between Start and Stop (the link's monitors see everything).
        self._taking = True
        self._restoring = False  # reconnecting after a replay: its trace stays shown

    # ------------------------------------------------------------- listener (reader thread)

    def on_raw(self, data: bytes) -> None:
        if not self.recorder.append(data):
            self._taking = False

    def on_metadata(self, meta: Metadata) -> None:
        self.conn.metadata = meta
        self.feed.put_metadata(meta)
        self.recorder.set_metadata(meta)

    def on_records(self, records: Records) -> None:
        if self._taking:  # else a stream between Connect and Start, or after Stop
            self.feed.put_records(records)

    def on_status(self, status: Status) -> None:
        self.link_health.on_status(status, self.conn.link)

    def on_state(self, state: str, reason: str | None) -> None:
        previous = self.conn.state
        self.conn.state = state
        self.conn.reason = reason
        if state == LinkState.DISCONNECTED and previous != LinkState.DISCONNECTED:
            if self.conn.link is None:
                return  # our own Disconnect (or a replay's end): disconnect() logs it
            self._log(
                "warning" if reason else "info", f"disconnected{': ' + reason if reason else ''}"
            )
            self._close_capture(interrupted=bool(reason))

    def on_log(self, level: str, message: str) -> None:
        self._log(level, message)

    # ------------------------------------------------------------- log

    def _log(self, level: str, message: str) -> None:
        self.log.add(level, message)

    def log_since(self, seq: int) -> list[dict[str, Any]]:
        return self.log.since(seq)

    # ------------------------------------------------------------- commands (worker threads)

    def connect(self, port: str | None, baud: int | None, proto: str | None = None) -> None:
        """``proto`` names the protocol spoken on a port that does not say it itself
        (link/open.py resolve); None on no port: the server's default."""
        text = (port or "").strip() or self.settings.device_port()
        if port is None and proto is None:
            proto = self.settings.proto
        endpoint = self.links.resolve(text, proto)
        baud = self.conn.baud if baud is None else int(baud)
        if not 300 <= baud <= 20_000_000:
            raise UserError(f"baud rate {baud} is out of range")
        with self._command_lock:
            self.conn.clear_dead()
            self._end_loading()  # the views follow this link, not a stored session loading
            url = sim_url(endpoint.port, self._sim_defaults())
            self.conn.reason = None
            self._log("info", f"connecting to {self.describe_port(endpoint.port)} at {baud} baud")
            link = self.links.open(endpoint, url, baud, self._listener)
            try:
                meta = self.conn.open(link, endpoint.port, None)
            except UserError as exc:
                self.conn.reason = str(exc)
                self._log("error", str(exc))
                raise
            self.conn.baud = baud
            self.link_health.last_status = None
            self._taking = not link.traces_while_idle
            if not self._restoring:  # after a replay its trace stays in the monitors
                self.conn.protocol.restarted(self._log)
            check = self.build_check()
            # A target that reports no build ID: connecting one is a normal action.
            doubtful = check.state == "mismatch" or (
                check.state != "match" and self.conn.protocol.checks_build_id
            )
            self._log(
                "warning" if doubtful else "info",
                f"connected: firmware {meta.fw_version or '?'}; {check.message}",
            )

    def _sim_defaults(self) -> SimDefaults:
        elf = self.elf
        return SimDefaults(
            elf_path=str(elf.path) if elf is not None and elf.kind != "upload" else None,
            cli_port=self.settings.port,
            rate=self.settings.sim_rate,
            baud=self.settings.sim_baud,
        )

    def replay(
        self,
        factory: Callable[..., Any],
        label: str,
        total: int | None = None,
        opened: dict[str, Any] | None = None,
    ) -> None:
        """Play a stored session into the live views (the store's replay link), without
        recording it again. With ``total`` (its record count) the replay shows progress
        and ends by itself, reconnecting the link that was connected before."""
        conn = self.conn
        if conn.port_label is None and conn.loading is None:  # (else it is remembered)
            port = conn.port if self.conn.connected else None
            conn.restore = (port, conn.baud, conn.proto) if port is not None else None
        self.disconnect()
        conn.replay_total = total
        conn.replay_ending = False
        conn.replay_started = self.clock()
        with self._command_lock:
            self._end_loading()  # an open still loading gives way to this replay
            link = factory(SIM_PORT, conn.baud, self._listener)
            try:
                conn.open(link, SIM_PORT, label)
                self._new_profile()
                self._taking = True
                self.capture_started = self.wall()
                self.opened, self.opened_counts = opened, None
                link.start()
            except UserError as exc:
                close_quietly(link)
                conn.drop()
                self._log("error", f"replay failed: {exc}")
                raise
            conn.state = link.state
            self._log("info", label)

    def replay_progress(self) -> dict[str, Any] | None:
        return self.conn.replay_progress()

    def _replay_done(self) -> bool:
        return self.conn.replay_done()

    def finish_replay(self) -> None:
        """The replay has played every record: leave its data in the views and put the
        connection back as it was before (the device reconnected, ready)."""
        conn = self.conn
        with self._command_lock:
            if conn.replay_ending:
                return
            conn.replay_ending = True
        progress = self.replay_progress()
        restore, conn.restore = conn.restore, None
        self.disconnect()
        conn.port_label = None
        conn.replay_total = None
        if progress is not None:
            self._log("info", f"replay finished: {progress['received']:,} records played")
        self._reconnect(restore, "the replay")

    def _reconnect(self, restore: tuple[str, int, str] | None, after: str) -> None:
        """The device connected before a replay or an open, connected again."""
        if restore is not None:
            self._restoring = True
            try:
                self.connect(*restore)
            except UserError as exc:
                self._log("error", f"could not reconnect after {after}: {exc}")
            finally:
                self._restoring = False

    # ------------------------------------------------------------- open (open.py)

    def open_stored(
        self,
        label: str,
        opened: dict[str, Any],
        kind: str,
        metadata: Any,
        total: int | None,
        first: Any = None,
    ) -> Loading:
        """Begin showing a stored session that ``load_opened`` then loads with the CLI's
        loader: the device is disconnected as for a replay (and reconnected at the end),
        the views emptied (or showing ``first``, the session's kept aggregate:
        profile/stored.py) meanwhile, the progress shown in place of a replay's."""
        conn = self.conn
        if conn.port_label is None and conn.loading is None:
            port = conn.port if self.conn.connected else None
            conn.restore = (port, conn.baud, conn.proto) if port is not None else None
        self.disconnect()
        with self._command_lock:
            self._end_loading()  # an open still loading gives way to this one
            conn.port_label, conn.replay_total = None, None
            conn.kind, conn.metadata, conn.own_names = kind, metadata, False
            self.link_health.last_status = None
            self.link_health.final_received = 0
            self._new_profile()
            if first is not None:
                self.feed.replace(first)  # the flame graph and Functions at once
            self.opened, self.opened_counts = opened, None
            self.capture_started = self.wall()
            loading = conn.loading = Loading(label, total, self.clock)
        self._log("info", label)
        return loading

    def load_opened(
        self,
        loading: Loading,
        load: Callable[..., Any],
        monitor_chunks: Callable[[], Any] | None,
        tick_hz: int | None = None,
    ) -> None:
        """``load(progress)`` (the kind's load_stored) into the views; with
        ``monitor_chunks`` (a kind whose link has monitors) the stored stream feeds them
        too. Runs on the decode pool."""
        profile = None
        try:
            profile = load(loading.update)
            if monitor_chunks is not None:
                counts = feed_monitors(monitor_chunks(), tick_hz, loading, self._listener)
                loading.counts = StoredCounts(counts)
        except Cancelled:
            profile = None
        except UserError as exc:
            profile = None
            self._log("error", f"open failed: {exc}")
        except Exception as exc:  # nobody awaits the pool's future: say it here
            self._log("error", f"open failed: internal error: {exc!r}")
            raise
        finally:
            restore = self._opened(loading, profile)
        self._reconnect(restore, "the open")

    def _opened(self, loading: Loading, profile: Any) -> tuple[str, int, str] | None:
        """The loaded profile shown (None: the open failed or was stopped); the device to
        reconnect, unless another open or a connect took over meanwhile."""
        conn = self.conn
        with self._command_lock:
            if conn.loading is not loading:
                return None
            # The results first, the end of the open last: health() reads without this
            # lock, and a reader that sees the open ended must also see its counts.
            if profile is None:
                self.opened = None
                # The kept aggregate shown meanwhile goes too: nothing was opened.
                self.feed.replace(self.feed.empty(self._frame_symbols()))
            else:
                self.feed.replace(profile)
                self.link_health.final_received = int(profile.n_records)
                self.opened_counts = loading.counts
            conn.loading = None
            if profile is not None:
                self._log("info", f"{loading.label}: {int(profile.n_records):,} records")
            restore, conn.restore = conn.restore, None
        return restore

    def _end_loading(self) -> None:
        if self.conn.loading is not None:
            self.conn.loading.cancelled = True
            self.conn.loading = None

    def cancel_open(self) -> bool:
        """Stop an open still loading (its loader ends at its next piece); False if none."""
        loading = self.conn.loading
        if loading is None:
            return False
        loading.cancelled = True
        return True

    def disconnect(self) -> None:
        with self._command_lock:
            link = self.conn.link
            if link is None:
                return
            if (
                self.conn.state == LinkState.PROFILING
                and self.conn.port_label is None
                and link.device_control is not None
            ):
                # Reconcile as Stop does: the device stops, its ring drains and its final
                # count arrives, so Captured = Received + Lost holds after a Disconnect too.
                try:
                    link.stop()
                except UserError as exc:
                    self._log("warning", f"Disconnect while profiling: no final count ({exc})")
            self.conn.drop()  # first: the link's own "disconnected" is then ours
            # Received stays what it was: the health panel reconciles against it.
            self.link_health.final_received = int(link.records_received_since_start)
            close_quietly(link)
            self.conn.state, self.conn.reason = LinkState.DISCONNECTED, None
            self._log("info", "disconnected")
            self._close_capture(interrupted=False)

    def start(self) -> None:
        with self._command_lock:
            link = self.conn.require()
            if self.conn.port_label is not None:
                raise UserError("a replay is playing: stop the replay before starting a capture")
            self._close_capture(interrupted=False)
            self.opened = None  # the views show this new capture from now on
            # Under the link's hold: the capture's first byte and the profile's first
            # record are the same moment (a target may stream before Start).
            with link.hold():
                self._new_profile()
                self._open_capture()
                self._taking = True
                self.link_health.forget_status()
            try:
                link.start()
            except UserError as exc:
                self._log("error", f"Start failed: {exc}")
                self.recorder.discard(self._span, STORED_CHUNK, self.profile_records)
                raise
            self.conn.state = link.state
            self._log("info", "profiling started")

    def stop(self) -> None:
        with self._command_lock:
            link = self.conn.require()
            try:
                link.stop()
            except UserError as exc:
                self._log("error", f"Stop failed: {exc}")
                raise
            self.conn.state = link.state
            sid = self.recorder.capture_id
            with link.hold():
                self._taking = not link.traces_while_idle
            stored = self._close_capture(interrupted=False)
            if stored is None:
                self._log("info", f"profiling stopped; {self.profile_records():,} records")
            else:
                self._log("info", f"profiling stopped; {stored:,} records stored in session {sid}")

    def _device_control(self, lacking: str) -> Any:
        """The link's device commands; ``lacking`` is why a link without them fails."""
        control = self.conn.require().device_control
        if control is None:
            raise UserError(lacking)
        return control

    def reset_buffers(self) -> None:
        with self._command_lock:
            try:
                self._device_control(self.conn.protocol.no_buffers).reset_buffers()
            except UserError as exc:
                self._log("error", f"Reset buffers failed: {exc}")
                raise
            self.link_health.buffers_reset()
            self._log("info", "device buffers reset")

    def refresh_status(self) -> Status:
        with self._command_lock:
            try:
                status = self._device_control(self.conn.protocol.no_status).get_status()
            except UserError as exc:
                self._log("error", f"Refresh status failed: {exc}")
                raise
            self.link_health.last_status = status
            return status

    def control(self) -> Any:
        """The connected link's control part (``command``, ``rx``, ``send_rx``; link/base.py)."""
        conn = self.conn
        link = conn.link if conn.state != LinkState.DISCONNECTED else None
        control = link.control if link is not None else None
        if control is None:
            raise UserError(NO_CONTROL)
        if conn.port_label is not None:  # a stored session replayed: its target is a recording
            raise UserError(REPLAYING_NO_CONTROL)
        return control

    def command(self, name: str) -> None:
        """A command to the connected target's control part (the link logs it)."""
        with self._command_lock:
            self.control().command(name)

    def close(self) -> None:
        self.disconnect()

    # ------------------------------------------------------------- captures

    def _open_capture(self) -> None:
        link = self.conn.link
        own_names = self.conn.own_names if link is not None else False
        opened = self.recorder.open(
            self.conn.kind,
            self.conn.metadata,
            None if own_names else self.elf,
            link.capture_header() if link is not None else None,
        )
        if opened:
            self.capture_started = self.wall()

    def _span(self) -> float:
        """The capture's own time span, records still queued included."""
        with self.feed.lock:
            self.ingest(flush=True)
            return float(self.feed.profile.duration_us)

    def _close_capture(self, interrupted: bool) -> int | None:
        stored = self.recorder.close(interrupted, self._span, STORED_CHUNK)
        sid = self.recorder.capture_id
        if stored and sid is not None and self.store is not None:
            # Its summary, for history and for an open to show at once: loaded as an
            # open loads it, on the decode pool (Stop does not wait for it).
            submit_to_decode_pool(self._keep_summary, sid)
        return stored

    def _keep_summary(self, sid: int) -> None:
        try:
            keep_served(self.store, sid, self.symbols, self.settings)
        except (UserError, OSError) as exc:
            self._log("error", f"session {sid}: its summary was not kept: {exc}")

    def _new_profile(self) -> None:
        self.feed.restart(self._frame_symbols(), self.conn.metadata)
        self.conn.protocol.restarted(self._log)

    def _frame_symbols(self) -> Any:
        """The ELF's names for the profile's frames, or None when the link names them
        itself (a target's dictionaries: keyed calls)."""
        own = self.conn.own_names if self.conn.link is not None else False
        return None if own else self.symbols

    def raw_capture(self) -> tuple[int, str] | None:
        """The session id of what is on view (an opened session, else the current or last
        capture, flushed), and a file-name stem."""
        if self.store is not None and self.opened is not None:
            return int(self.opened["id"]), self.file_stem()
        if self.store is None or self.recorder.capture_id is None:
            return None
        sid = self.recorder.flushed_id()
        return (sid, self.file_stem()) if sid is not None else None

    # ------------------------------------------------------------- ELF

    def select_elf(self, choice: ElfChoice) -> None:
        symbols = self.catalog.load(choice)  # UserError on a bad ELF; nothing changes
        with self.feed.lock:
            self.ingest()
            self.elf, self.symbols, self.elf_error = choice, symbols, None
            # The link's own names (if it has them) stay the profile's.
            self.feed.renamed(symbols if self._frame_symbols() is symbols else None)
        check = self.build_check()
        self._log(
            "info" if check.state != "mismatch" else "warning",
            f"ELF {choice.label} loaded: {len(symbols.functions)} functions; {check.message}",
        )
        for warning in getattr(symbols, "warnings", []) or []:
            self._log("warning", f"ELF {choice.label}: {warning}")

    def build_check(self) -> Any:
        device = self.conn.metadata.elf_build_id if self.conn.metadata is not None else None
        return self.conn.protocol.build_check(device, self.symbols.build_id if self.elf else None)

    # ------------------------------------------------------------- profile access

    def ingest(self, flush: bool = False) -> int:
        """Move queued records into the profile. Returns the number of records added.
        ``flush``: those a timer restart put behind too, now (profile.py)."""
        try:
            added = self.feed.ingest(flush)
            if added:
                self._follow_breaks()
            return added
        except ColumnsFull as exc:  # the disk (or mapping) holding the columns is full
            self.feed.drop_pending()  # what is queued would fail again on every tick
            self._recording_failed(str(exc))
            return 0

    def _follow_breaks(self) -> None:
        """Where the link's clock restarted (a target reset mid-stream): its source's
        clock is the profile's (keyed calls)."""
        breaks = getattr(getattr(self.conn.link, "source", None), "breaks", None)
        if breaks is not None:
            self.feed.profile.breaks = list(breaks)

    def _recording_failed(self, why: str) -> None:
        """Stop recording for good (a full disk): no more records are taken."""
        self._taking = False
        self.recorder.failed(why)

    def profile_records(self) -> int:
        return self.feed.records()

    def file_stem(self) -> str:
        meta = self.conn.metadata
        return file_stem(meta.fw_version if meta else None, self.capture_time(), self.opened)

    def capture_time(self) -> float:
        """Wall clock of the capture the views show: a stored session's own start."""
        if self.opened is not None and self.opened.get("captured_at") is not None:
            return float(self.opened["captured_at"])
        return self.capture_started if self.capture_started is not None else self.wall()

    # ------------------------------------------------------------- status for the page

    def device_info(self) -> dict[str, Any]:
        conn = self.conn
        meta = conn.metadata
        check = self.build_check()
        loading = conn.loading
        return {
            "port": conn.port,
            "baud": conn.baud,
            "simulated": bool(conn.port and conn.port.startswith(SIM_PORT) and not conn.port_label),
            # (an open loading is shown as the replay that did it before was)
            "replay": conn.port_label is not None or loading is not None,
            "kind": conn.kind,
            "listening_on": conn.listening_on,
            "label": conn.port_label or (loading.label if loading else conn.port_text()),
            "fw_version": meta.fw_version if meta else None,
            "mcu_clock_hz": meta.mcu_clock_hz if meta else None,
            "timer_freq": meta.timer_freq if meta else None,
            "device_build_id": meta.elf_build_id
            if meta and conn.protocol.checks_build_id
            else None,
            "elf_build_id": self.symbols.build_id if self.elf else None,
            "build_check": {"state": check.state, "message": check.message},
        }

    def describe_port(self, port: str | None) -> str:
        return self.links.describe_port(port)

    def health(self) -> dict[str, Any]:
        """Counters as they are now, plus the rates and warnings the ticker last computed
        (computing those advances the rate window, which only the ticker should do)."""
        # The progress before the counts: an open publishes its counts before it ends
        # (_opened), so a reply that shows it ended shows its counts too.
        replay = self.replay_progress()
        loading = self.conn.loading
        link = self.conn.link
        figures = self.link_health.figures(link, self.conn.state)
        counted, kind = link, self.conn.kind
        if self.opened is not None and loading is None and self.conn.port_label is None:
            # An opened session on view (not a replay, whose device counts): its own counts
            # and kind, also once the device connected before it is connected again.
            counted, kind = self.opened_counts, self.opened.get("kind", kind)
        return {
            "state": self.conn.state,
            "reason": self.conn.reason,
            **figures,
            "profile_records": self.profile_records(),
            "replay": replay,
            **self.links.health_sections(kind, counted),
            "capture_id": self.recorder.capture_id,
            "recording": self.recorder.recording,
            "opened": self.opened,
            **self.link_health.current_rates(link),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "connected": self.conn.connected,
            "device": self.device_info(),
            "health": self.health(),
            "elf": self.elf.as_dict() if self.elf else None,
            "elf_error": self.elf_error,
            "elf_warnings": list(getattr(self.symbols, "warnings", []) or []),
            "default_port": self.settings.device_port(),
            "default_port_label": self.describe_port(self.settings.device_port()),
            "version": self.feed.version,
            "file_stem": self.file_stem(),
            "capture_started": self.capture_started,
            "range": self.time_range(),
        }

    def time_range(self) -> list[float] | None:
        """The profile's span as of its last ingest (the ticker's, 60 a second). Read
        without the profile lock, and without ingesting: an export's snapshot or the merge
        of a replay's backlog holds that lock for seconds, and /api/state (which runs on
        the few worker threads every request shares) must not wait for them."""
        return self.feed.time_range()

    # ------------------------------------------------------------- live updates

    def tick(self, want_flame: bool) -> str | None:
        """One update for every tab, as JSON, or None when nothing changed. Runs in a
        worker thread at ``update_hz``."""
        self.ingest()
        if self._replay_done():
            threading.Thread(
                target=self.finish_replay, name="mcuprof-replay-end", daemon=True
            ).start()
        self.link_health.update(self.conn.link, self.conn.protocol.logged_counters)
        return self.publisher.message(self, want_flame, self.settings.flame_max_nodes)

    def on_client_message(self, text: str) -> None:
        """Frame-drawn reports from the page: latency from record received to drawn."""
        self.publisher.on_client_message(text)

    def metrics(self) -> dict[str, Any]:
        return {**self.publisher.metrics(), "profile_records": self.profile_records()}
