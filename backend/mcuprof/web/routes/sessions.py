"""/api/sessions: stored sessions for the dashboard: list, inspect, rename, annotate,
delete, import by upload, download, replay through the live path, and diff two sessions
(or a stored baseline against the live capture)."""

from __future__ import annotations

import asyncio
import collections
import itertools
import threading
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, Field

from ... import kinds
from ...capture import QS_CHUNK
from ...diff import diff_profiles
from ...diff.export import basis_text, render_folded2, render_svg
from ...diff.gate import GateSide, per_call
from ...diff.gated import gated_report
from ...diff.reduce import Reduced, reduce_profile
from ...diff.report import parse_confidence, parse_threshold, timebase_check
from ...errors import UserError
from ...history.summary import keep, kept_view
from ...link.replay import Stream, parse_speed
from ...loss import loss_of_chunks
from ...profile import Profile, TreeNode
from ...profile import flame as flame_columns
from ...store import RECORDING, SessionInfo, Store
from ...store.api import describe
from ...store.model import MAX_NAME, MAX_NOTES
from ...store.tags import MAX_TAGS
from ...symbols import SymbolTable
from .. import views
from ..deps import get_store
from ..filenames import disposition
from ..live.decode_pool import SingleFlight, in_decode_pool, submit_to_decode_pool
from ..uploads import received_capture
from .exports import Shown, attachment, check_format, export_title, render_profile

router = APIRouter(prefix="/api/sessions")

SessionId = Annotated[int, Path(ge=1, le=2**62)]
# What an import may name: auto, or a kind that decodes to a profile.
IMPORT_KINDS = "^(" + "|".join(("auto", *kinds.PROFILE_NAMES)) + ")$"


class EditBody(BaseModel):
    name: str | None = Field(default=None, max_length=MAX_NAME)
    notes: str | None = Field(default=None, max_length=MAX_NOTES)
    tags: dict[str, str] | None = Field(default=None, max_length=MAX_TAGS)  # replaces all


class ReplayBody(BaseModel):
    speed: str = Field(default="1x", max_length=16)
    # The Sessions tab's Open (a replay at full speed to show the session): its end is
    # not news, unlike a replay the user watches.
    open: bool = False


def _live(request: Request) -> Any:
    live = getattr(request.app.state, "live", None)
    if live is None:
        raise UserError("no live session in this server")
    return live


def _row(info: SessionInfo) -> dict[str, Any]:
    d = info.as_dict()
    stats = info.link_stats or {}
    d["records"] = stats.get("records")
    # The capture's own span when known (imports, or a caller that passed it), else the
    # wall-clock time the recording was open.
    if info.duration_us is not None:
        d["length_s"] = info.duration_us / 1e6
    elif info.started_at is not None and info.stopped_at is not None:
        d["length_s"] = info.stopped_at - info.started_at
    else:
        d["length_s"] = None
    return d


# ---------------------------------------------------------------- profiles for diffs


class _ProfileCache:
    """Decoded profiles of finished sessions (they never change); a few, most recent."""

    def __init__(self, size: int = 4) -> None:
        self._items: collections.OrderedDict[tuple[Any, ...], Profile] = collections.OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Profile | None:
        with self._lock:
            p = self._items.get(key)
            if p is not None:
                self._items.move_to_end(key)
            return p

    def put(self, key: tuple[Any, ...], profile: Profile) -> None:
        with self._lock:
            self._items[key] = profile
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_cache = _ProfileCache()
_decodes = SingleFlight()  # concurrent first requests for a session wait for one decode


def _session_profile(
    store: Store, sid: int, fallback: SymbolTable | None, tick_hz: int | None = None
) -> Profile:
    """The session's profile, named with its own ELF, else the dashboard's current one
    (QS sessions: with the target's dictionaries)."""
    info = store.get(sid)
    _only_profiles(info)
    tick_hz = session_tick_hz(info, tick_hz)
    key = (id(store), sid, info.elf_sha256, None if info.elf_sha256 else id(fallback), tick_hz)
    return _decodes.run(key, lambda: _decoded(store, info, key, fallback, tick_hz))


def _decoded(
    store: Store, info: SessionInfo, key: tuple[Any, ...], fallback: Any, tick_hz: Any
) -> Profile:
    sid = info.id
    if info.status != RECORDING:
        cached = _cache.get(key)
        if cached is not None:
            return cached
    elf = store.elf_bytes(sid)
    if elf is not None:
        symbols = SymbolTable.from_elf_bytes(elf, info.elf_name or f"session {sid}")
    else:
        symbols = fallback if fallback is not None else SymbolTable.empty()
    profile = kinds.get(info.kind).load_stored(store, sid, symbols, tick_hz)
    if info.status != RECORDING:
        _cache.put(key, profile)
    return profile


def session_tick_hz(info: Any, fallback: int | None) -> int | None:
    """The rate a session's ticks are read with (kinds.session_tick_hz)."""
    return kinds.session_tick_hz(info, fallback)


def _only_profiles(info: SessionInfo) -> None:
    """Kinds that decode to a Profile through the sources seam (not S12Z traces)."""
    if not kinds.get(info.kind).profiles:
        raise UserError(
            f"session {info.id} is an {info.kind.upper()} trace, not a MiniProfiler or QS "
            "capture: open it in the S12Z tab"
        )


def _side_name(store: Store, which: str) -> str:
    if which == "live":
        return "live capture"
    info = store.get(int(which))
    return f"session {info.id} ({info.name})"


def _parse_side(text: str, allow_live: bool) -> str:
    text = text.strip().lower()
    if text == "live" and allow_live:
        return text
    # ASCII digits only: str.isdigit takes '²' (then int() fails: a 500) and int() reads
    # '٣' as 3 (another session than the one the link names).
    if text.isascii() and text.isdigit() and 0 < int(text) < 2**62:
        return str(int(text))
    raise UserError(
        f"bad session {text!r}: give a session id" + (" or 'live'" if allow_live else "")
    )


def _compute_diff(request: Request, base: str, new: str) -> tuple[Any, str, str]:
    store = get_store(request)
    live = getattr(request.app.state, "live", None)
    fallback = getattr(live, "symbols", None)
    tick_hz = getattr(getattr(live, "settings", None), "qs_tick_hz", None)
    if new == "live":
        live = _live(request)
    # As `mcuprof compare`: a pair timed by different timer frequencies is refused.
    new_meta = live.conn.metadata if new == "live" else store.get(int(new)).metadata
    timebase = timebase_check(store.get(int(base)).metadata, new_meta)
    if timebase["mismatch"]:
        names = f"{_side_name(store, base)} against {_side_name(store, new)}"
        raise UserError(f"cannot compare {names}: {timebase['message']}")
    base_profile = _session_profile(store, int(base), fallback, tick_hz)
    if new == "live":
        with live.feed.lock:
            live.ingest(flush=True)
            diff = diff_profiles(base_profile, live.feed.profile)
    else:
        diff = diff_profiles(base_profile, _session_profile(store, int(new), fallback, tick_hz))
    return diff, _side_name(store, base), _side_name(store, new)


def _session_loss(store: Store, sid: int) -> dict[str, Any] | None:
    """The session's stored loss; a session stored before loss was kept has its STATUS
    packets read again, so the page judges it as ``mcuprof compare`` does."""
    info = store.get(sid)
    if info.loss is not None or not kinds.get(info.kind).counts_loss:
        return info.loss
    return loss_of_chunks(store.raw_chunks(sid))


def _gate_sides(
    request: Request, sides: tuple[str, str], basis: str
) -> tuple[GateSide, GateSide, tuple[Reduced, Reduced] | None]:
    """What the gate needs of both sides (diff/gate.py): their stored loss (a live
    capture's is known at Stop only), and every call's times when a percentile or a
    side's loss asks for them."""
    store = get_store(request)
    losses = [None if s == "live" else _session_loss(store, int(s)) for s in sides]
    lossy = any(loss and (loss["stretches"] or loss["lost"]) for loss in losses)
    if not (lossy or basis.startswith("p")):
        return GateSide({}, losses[0]), GateSide({}, losses[1]), None
    live = getattr(request.app.state, "live", None)
    fallback = getattr(live, "symbols", None)
    tick_hz = getattr(getattr(live, "settings", None), "qs_tick_hz", None)
    out, reduced = [], []
    for side, loss in zip(sides, losses, strict=True):
        if side == "live":
            with _live(request)._profile_lock:
                profile = _live(request).profile
                out.append(GateSide(per_call(profile), loss))
                reduced.append(reduce_profile(profile, False) if lossy else None)
            continue
        profile = _session_profile(store, int(side), fallback, tick_hz)
        out.append(GateSide(per_call(profile), loss))
        reduced.append(reduce_profile(profile, False) if lossy else None)
    pair = (reduced[0], reduced[1]) if lossy else None
    return out[0], out[1], pair  # type: ignore[return-value]


def _with_columns(flame: dict[str, Any]) -> dict[str, Any]:
    """The differential tree also as the main flame graph's columns, made by the same
    code (profile/flame.py), so the page draws both with one canvas component. A row's
    frame id is its node's index; ``diff`` per row: [base µs, base self µs, new self µs,
    delta of self share]."""
    nodes: list[dict[str, Any]] = []

    def node(src: dict[str, Any]) -> TreeNode:
        nodes.append(src)  # the frame id is the node's index: it maps a row back
        name = src["name"]
        return TreeNode(name, name, len(nodes) - 1, src["value"], src["self"])

    root = node(flame["tree"])
    stack = [(flame["tree"], root)]
    while stack:  # iterative: the tree may be MAX_DEPTH deep
        src, dst = stack.pop()
        for child in src["children"]:
            made = node(child)
            dst.children.append(made)
            stack.append((child, made))
    # The tree is already pruned: room for every node, so none is merged into "other".
    cols = flame_columns.tree(root, 2 * len(nodes) + 2, _width, _own)
    cols["diff"] = [
        None if fid < 0 else [nodes[fid][k] for k in ("base", "base_self", "self", "delta")]
        for fid in cols["fid"]
    ]
    return flame | {"columns": cols}


def _width(node: TreeNode) -> float:
    return node.total_us


def _own(node: TreeNode) -> float:
    return node.self_us


# ---------------------------------------------------------------- routes (static first)


@router.get("")
async def list_sessions(request: Request) -> dict[str, Any]:
    store = get_store(request)
    sessions = await asyncio.to_thread(store.list)
    live = getattr(request.app.state, "live", None)
    recorder = getattr(live, "recorder", None)
    recording = recorder.capture_id if recorder is not None and recorder.writer else None
    return {
        "sessions": [_row(s) for s in sessions],
        "recording": recording,
        "replay": _replay_state(request),
        "data_dir": describe(store),
    }


@router.post("/import")
async def import_capture(
    request: Request,
    name: Annotated[str, Query(max_length=MAX_NAME)] = "imported capture",
    elf: Annotated[str | None, Query(max_length=300)] = None,
    kind: Annotated[str, Query(pattern=IMPORT_KINDS)] = "auto",
) -> dict[str, Any]:
    """The raw capture is the request body, streamed to disk under a size cap (the same
    helper that caps ELF uploads), then stored as a session. ``elf`` is an ELF id from
    /api/elfs to keep with it. ``kind`` is told from the bytes unless given."""
    store = get_store(request)
    async with received_capture(request, elf, store.data_dir) as (path, elf_path, elf_name):
        info = await asyncio.to_thread(
            store.import_capture,
            name,
            path,
            elf_path,
            elf_name=elf_name,
            kind=None if kind == "auto" else kind,
        )
    live = getattr(request.app.state, "live", None)
    symbols, tick_hz = (live.symbols, live.settings.qs_tick_hz) if live else (None, None)
    # Its summary kept now, named as an open from this page names it (history/summary.py).
    await asyncio.to_thread(keep, store, info.id, symbols, tick_hz)
    return {"session": _row(info)}


@router.get("/diff")
async def diff(
    request: Request,
    base: Annotated[str, Query(max_length=20)],
    new: Annotated[str, Query(max_length=20)],
    max_nodes: Annotated[int, Query(ge=10, le=50_000)] = 5000,
    threshold: Annotated[str, Query(max_length=20)] = "10%",
    confidence: Annotated[str, Query(max_length=20)] = "95%",
    metric: Literal["self", "total"] = "self",
    basis: Literal["mean", "p50", "p90", "p99"] = "mean",
) -> dict[str, Any]:
    """Per-function deltas and differential flame data; ``new`` may be 'live'. The
    verdict is `mcuprof compare`'s report on the same pair (same defaults, same code),
    each function with its verdict (regressed, unchanged, inconclusive)."""
    b, n = _parse_side(base, False), _parse_side(new, True)
    gate = {"threshold": parse_threshold(threshold), "confidence": parse_confidence(confidence)}

    def work() -> dict[str, Any]:
        d, base_name, new_name = _compute_diff(request, b, n)
        verdict = _gate_report(request, d, (b, n), metric, basis, gate)
        for key in ("base_summary", "new_summary"):  # already in base / new below
            verdict.pop(key, None)
        return {
            "base": {"id": int(b), "name": base_name, **d.base_summary},
            "new": {"id": None if n == "live" else int(n), "name": new_name, **d.new_summary},
            "functions": d.table(),
            "flame": _with_columns(d.flame(max_nodes)),
            "verdict": verdict,
        }

    return await in_decode_pool(work)


def _gate_report(
    request: Request,
    d: Any,
    sides: tuple[str, str],
    metric: str,
    basis: str,
    gate: dict[str, float],
) -> dict[str, Any]:
    """`mcuprof compare`'s report on the pair (the same code): each function's verdict."""
    bs, ns, reduced = _gate_sides(request, sides, basis)
    return gated_report(
        d, bs, ns, reduced=reduced,
        metric=metric, basis=basis, globs=None, min_delta_us=0.0, **gate,
    )  # fmt: skip


@router.get("/diff/export")
async def diff_export(
    request: Request,
    base: Annotated[str, Query(max_length=20)],
    new: Annotated[str, Query(max_length=20)],
    format: Annotated[str, Query(pattern="^(folded|svg)$")] = "svg",
    threshold: Annotated[str, Query(max_length=20)] = "10%",
    confidence: Annotated[str, Query(max_length=20)] = "95%",
    metric: Literal["self", "total"] = "self",
    basis: Literal["mean", "p50", "p90", "p99"] = "mean",
) -> Response:
    """Two-column folded stacks, or the differential SVG coloured by the gate's verdicts
    on the pair (the same options as /diff, so the download is what the tab shows)."""
    b, n = _parse_side(base, False), _parse_side(new, True)
    gate = {"threshold": parse_threshold(threshold), "confidence": parse_confidence(confidence)}

    def work() -> tuple[str, str]:
        d, base_name, new_name = _compute_diff(request, b, n)
        if format == "folded":
            return render_folded2(d.base_folded, d.new_folded), "text/plain; charset=utf-8"
        report = _gate_report(request, d, (b, n), metric, basis, gate)
        subtitle = (
            f"{base_name} -> {new_name}: widths from the newer; colour: the verdict on the "
            f"{basis_text(report)} - red regressed, blue shrank, amber inconclusive"
        )
        svg = render_svg(d.base_folded, d.new_folded, subtitle=subtitle, report=report)
        return svg, "image/svg+xml"

    body, media = await in_decode_pool(work)
    suffix = "diff.folded" if format == "folded" else "diff.svg"
    filename = f"mcuprof-{b}-vs-{n}.{suffix}"
    return attachment(body, filename, media)


@router.post("/replay/stop")
async def stop_replay(request: Request) -> dict[str, Any]:
    live = _live(request)
    if _replaying.get(id(live)) is not None and getattr(live, "cancel_open", bool)():
        _replaying.pop(id(live), None)  # an open still loading: its loader stops
    elif _replaying.get(id(live)) is not None:
        # Back to the state before the replay (the device reconnected), as when it ends.
        await asyncio.to_thread(getattr(live, "finish_replay", live.disconnect))
        _replaying.pop(id(live), None)
    return {"replay": None}


@router.get("/{sid}")
async def get_session(request: Request, sid: SessionId) -> dict[str, Any]:
    store = get_store(request)

    def work() -> dict[str, Any]:
        info = store.get(sid)
        out = _row(info)
        # An S12Z trace is not a MiniProfiler stream: its counts were taken at import.
        counted = kinds.get(info.kind).count_stored(store, sid)
        out["capture"] = counted if counted is not None else info.link_stats
        return out

    return {"session": await in_decode_pool(work)}


@router.patch("/{sid}")
async def edit_session(request: Request, sid: SessionId, body: EditBody) -> dict[str, Any]:
    store = get_store(request)
    if body.name is None and body.notes is None and body.tags is None:
        raise UserError("nothing to change: give a name, notes or tags")

    def work() -> SessionInfo:
        info = store.get(sid)
        if body.name is not None:
            info = store.rename(sid, body.name)
        if body.notes is not None:
            info = store.set_notes(sid, body.notes)
        if body.tags is not None:
            info = store.set_tags(sid, body.tags)
        return info

    return {"session": _row(await asyncio.to_thread(work))}


@router.delete("/{sid}")
async def delete_session(request: Request, sid: SessionId) -> dict[str, Any]:
    store = get_store(request)
    await asyncio.to_thread(store.delete, sid)
    return {"deleted": sid}


@router.get("/{sid}/raw")
async def download_raw(request: Request, sid: SessionId) -> Response:
    store = get_store(request)
    return await asyncio.to_thread(stream_raw, store, sid, f"mcuprof-session-{sid}.bin")


@router.get("/{sid}/export/{fmt}")
async def export_session(
    request: Request, sid: SessionId, fmt: Annotated[str, Path(pattern="^[a-z]+$")]
) -> Response:
    """Any export of a stored session from its row, as the Export menu gives it once the
    session is opened: the same bytes, titles and file name."""
    store = get_store(request)
    suffix, media = check_format(fmt)
    shown = Shown.stored(await asyncio.to_thread(store.get, sid))
    if fmt == "raw":
        return await asyncio.to_thread(stream_raw, store, sid, f"{shown.stem}{suffix}")
    max_nodes = request.app.state.settings.flame_max_nodes

    def work() -> bytes | str:
        return render_profile(shown, _exported_profile(request, sid), fmt, None, max_nodes)

    body = await in_decode_pool(work)
    return attachment(body, f"{shown.stem}{suffix}", media)


@router.get("/{sid}/flame")
async def session_flame(request: Request, sid: SessionId) -> dict[str, Any]:
    """A stored session's flame graph data with its export titles and file name: what the
    page draws its PNG export from (the PNG is drawn in the page, as for the live view)."""
    store = get_store(request)
    shown = Shown.stored(await asyncio.to_thread(store.get, sid))
    max_nodes = request.app.state.settings.flame_max_nodes

    def work() -> dict[str, Any]:
        profile = _exported_profile(request, sid)
        payload = views.flame_graph(profile, None, max_nodes)
        title, subtitle = export_title(shown, profile, payload)
        return {
            "flame": payload,
            "title": title,
            "subtitle": subtitle,
            "file_stem": shown.stem,
        }

    return await in_decode_pool(work)


def _exported_profile(request: Request, sid: int) -> Profile:
    """A stored session's profile for an export, named as the Compare tab names it."""
    live = getattr(request.app.state, "live", None)
    tick_hz = getattr(getattr(live, "settings", None), "qs_tick_hz", None)
    profile = _session_profile(get_store(request), sid, getattr(live, "symbols", None), tick_hz)
    if profile.n_records == 0:
        raise UserError(f"session {sid} holds no profile records to export")
    return profile


RAW_CHUNK = 1 << 20  # bytes read per piece of a raw download


def stream_raw(store: Store, sid: int, filename: str) -> Response:
    """A session's stream as a download, read a piece at a time (a session of GBs was
    held whole): the bytes as the device sent them, whatever the store keeps. The bytes
    stored when asked: for a session still recording, what was written so far, with the
    length known up front."""
    size = store.raw_size(sid)  # before reading: a recording only grows
    chunks = store.raw_chunks(sid, RAW_CHUNK)
    # The first piece is read here, so a file the store refuses is a 4xx, not a cut body.
    first = next(chunks, b"")

    def pieces() -> Any:
        left = size
        for data in itertools.chain((first,), chunks):
            if left <= 0:
                break
            yield data if len(data) <= left else data[:left]
            left -= len(data)
        chunks.close()

    return StreamingResponse(
        pieces(),
        media_type="application/octet-stream",
        headers={
            **disposition(filename),
            "Content-Length": str(size),
        },
    )


# ---------------------------------------------------------------- replay

_replaying: dict[int, dict[str, Any]] = {}


def _replay_state(request: Request) -> dict[str, Any] | None:
    live = getattr(request.app.state, "live", None)
    if live is None:
        return None
    state = _replaying.get(id(live))
    if state is None:
        return None
    conn = live.conn
    if conn.loading is not None:
        return state  # an open still loading
    if (
        conn.link is None
        or conn.state == "disconnected"
        or conn.port_label is None  # ended: the device is back
    ):
        _replaying.pop(id(live), None)
        return None
    return state


@router.post("/{sid}/replay")
async def replay(request: Request, sid: SessionId, body: ReplayBody) -> dict[str, Any]:
    """Play the session into the live views as if the device were sending it now, paced
    by its own timestamps (1x, 10x) or as fast as the reader takes it (max)."""
    try:
        speed = parse_speed(body.speed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    store = get_store(request)
    live = _live(request)
    info = await asyncio.to_thread(store.get, sid)
    _only_profiles(info)
    if body.open and speed is None and hasattr(live, "open_stored"):
        return await _open(request, store, live, info)
    label = f"Replay of session {sid} ({info.name}) at {body.speed.strip().lower()}"
    size = await asyncio.to_thread(store.raw_size, sid)
    if size == 0:
        raise UserError(f"session {sid} holds no data to replay")
    # The recording is read from the store in chunks as it plays, never held whole.
    recording = Stream(lambda n: store.raw_chunks(sid, n), size)
    device, factory = await asyncio.to_thread(
        kinds.get(info.kind).replay,
        recording,
        speed,
        metadata=info.metadata,
        tick_hz=session_tick_hz(info, live.settings.qs_tick_hz),
        throttle=lambda: _backlog(live) > REPLAY_BACKLOG,
    )
    total = device.total_records
    opened = _opened(info, body.speed, body.open)
    await asyncio.to_thread(_attach_replay, live, factory, label, total, opened)
    if total is None:  # counted aside, the percent follows
        threading.Thread(
            target=_count_aside,
            args=(live, device, label),
            name="mcuprof-replay-count",
            daemon=True,
        ).start()
    state = {"session": sid, "speed": body.speed.strip().lower(), "label": label}
    _replaying[id(live)] = state
    return {"replay": state}


def _opened(info: SessionInfo, speed: str, open_: bool) -> dict[str, Any]:
    """What the page shows of the stored session in place of the device's."""
    stats = info.link_stats or {}
    return {
        "id": info.id,
        "name": info.name,
        "captured_at": info.started_at if info.started_at is not None else info.created_at,
        "records": stats.get("records"),
        "crc_errors": stats.get("crc_errors"),
        "malformed": stats.get("malformed"),
        "loss": info.loss,  # the device's counters as of Stop (None: not recorded)
        "metadata": info.as_dict()["metadata"],
        "speed": speed.strip().lower(),
        "kind": info.kind,  # the page shows the health rows of the session's protocol
        "open": open_,
    }


async def _open(request: Request, store: Store, live: Any, info: SessionInfo) -> dict[str, Any]:
    """The Sessions tab's Open: the session loaded by the CLI's loader (the kind's
    load_stored, as `mcuprof info` and `compare` read it) straight into the live views,
    on the decode pool; the page follows its progress (web/live/open.py)."""
    sid = info.id
    kind = kinds.get(info.kind)
    label = f"Opening session {sid} ({info.name})"
    total = (info.link_stats or {}).get("records")
    opened = _opened(info, "max", True)
    # Named as a replay shows them: the dashboard's ELF (QS: the stream's dictionaries).
    symbols = live.symbols
    tick_hz = session_tick_hz(info, live.settings.qs_tick_hz)
    # The summary kept when it was stored shows the flame graph and Functions at once.
    first = await asyncio.to_thread(kept_view, store, sid, symbols, tick_hz)
    if isinstance(first, str):  # a bound kept the aggregate out: said, then loaded
        live.on_log("info", first)
        first = None
    loading = await asyncio.to_thread(
        live.open_stored, label, opened, info.kind, info.metadata, total, first
    )

    def load(progress: Any) -> Any:
        return kind.load_stored(store, sid, symbols, tick_hz, progress=progress)

    monitors = (lambda: store.raw_chunks(sid, QS_CHUNK)) if kind.offers(kinds.QS_MONITOR) else None
    submit_to_decode_pool(live.load_opened, loading, load, monitors, tick_hz)
    state = {"session": sid, "speed": "max", "label": label}
    _replaying[id(live)] = state
    return {"replay": state}


def _count_aside(live: Any, device: Any, label: str) -> None:
    total = device.count_records()
    if live.conn.port_label == label:  # still this replay
        live.conn.replay_total = total


REPLAY_BACKLOG = 1 << 19  # records decoded but not yet in the profile, at most


def _backlog(live: Any) -> int:
    link = live.conn.link
    if link is None:
        return 0
    # Records a timer restart put behind are held back on purpose (web/live/profile.py): the
    # replay reads on, so they are joined in steps that grow with the profile.
    held = int(live.feed.n_held)
    return int(link.records_received_since_start) - int(live.profile_records()) - held


def _attach_replay(
    live: Any, factory: Any, label: str, total: int | None = None, opened: Any = None
) -> None:
    """Hand the replay device to the live session: it connects, starts and shows it like a
    device, without recording it as a new session."""
    hook = getattr(live, "replay", None)
    if not callable(hook):
        raise UserError("this server's live session cannot replay")
    hook(factory, label, total, opened)
