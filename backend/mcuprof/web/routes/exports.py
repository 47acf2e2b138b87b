"""Downloads: every export format of mcuprof.export, a standalone HTML flame graph and the
raw capture. File names carry the firmware version and the capture time. The page's
Export menu is built from ``MENU`` (/api/export/formats)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import Response

from ...errors import UserError
from ...export import FORMATS as PROFILE_FORMATS
from ...export import Format
from ...export.titles import flame_titles
from .. import views
from ..deps import LiveDep, SettingsDep, WindowDep
from ..filenames import disposition, stored_stem, stored_time

router = APIRouter(prefix="/api/export")

# The page's own downloads beside mcuprof.export's: the flame graph drawn by the page
# (PNG), the page's flame component with its data (HTML), the capture as received.
PNG = Format("png", "Flame graph PNG", ".png", "image/png", titled=True)
HTML = Format("html", "Standalone HTML", ".html", "text/html; charset=utf-8", titled=True)
RAW = Format("raw", "Raw capture", ".bin", "application/octet-stream")
# The Export menu (and each session row's), in its groups.
MENU: tuple[tuple[Format, ...], ...] = (
    (PROFILE_FORMATS["svg"], PNG, HTML),
    tuple(f for f in PROFILE_FORMATS.values() if f.name != "svg"),
    (RAW,),
)
# What the server makes (the PNG is drawn in the page).
FORMATS: dict[str, Format] = {f.name: f for f in (*PROFILE_FORMATS.values(), HTML, RAW)}


def attachment(body: bytes | str, filename: str, media: str) -> Response:
    data = body.encode("utf-8") if isinstance(body, str) else body
    return Response(
        content=data,
        media_type=media,
        headers=disposition(filename),
    )


def _render(live: Any, fmt: str, window: tuple[float, float] | None, max_nodes: int) -> bytes | str:
    # The live lock is held only to copy the records: the state endpoint and the
    # WebSocket keep answering while a large capture renders.
    with live.feed.lock:
        live.ingest(flush=True)
        if live.profile_records() == 0:
            raise UserError("nothing to export yet: click Start and capture some data")
        profile = live.feed.profile.snapshot()
    return render_profile(Shown.live(live), profile, fmt, window, max_nodes)


def render_profile(
    shown: Shown, profile: Any, fmt: str, window: tuple[float, float] | None, max_nodes: int
) -> bytes | str:
    """One export of ``profile``; ``shown`` names the capture on view (live or stored)
    for the titles of the flame exports."""
    made = FORMATS[fmt]
    title = None
    if made.titled:
        payload = views.icicle(profile, window, max_nodes)
        title = export_title(shown, profile, payload)
        if made is HTML:
            return standalone_html(payload, *title)
    parts: list[bytes] = []
    # (bytes(): the event formats hand over views of buffers they reuse)
    made.write(profile, lambda b: parts.append(bytes(b)), window, title)
    return b"".join(parts)


@dataclass(frozen=True)
class Shown:
    """What the export titles and file names say of the capture on view: the live
    session's, or a stored session's exported from its row without opening it (the same
    title, subtitle and file name as when it is opened)."""

    metadata: Any
    when: float | None  # the capture time the subtitle gives
    opened: dict[str, Any] | None  # the stored session on view, if one is
    stem: str  # the file name, without its suffix

    @classmethod
    def live(cls, live: Any) -> Shown:
        opened = live.opened
        when = live.capture_time() if opened is not None else live.capture_started
        return cls(live.conn.metadata, when, opened, live.file_stem())

    @classmethod
    def stored(cls, info: Any) -> Shown:
        when = stored_time(info)
        opened = {"id": info.id, "name": info.name, "captured_at": when}
        return cls(info.metadata, when, opened, stored_stem(info))


def check_format(fmt: str) -> tuple[str, str]:
    """(file name suffix, media type) of an export format, or a one-line error."""
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return FORMATS[fmt].suffix, FORMATS[fmt].media


def export_title(shown: Shown, profile: Any, payload: dict[str, Any]) -> tuple[str, str]:
    """Title lines of the flame exports: firmware version, capture time, window, total."""
    meta = shown.metadata
    version = meta.fw_version if meta is not None else None
    opened = shown.opened
    title, subtitle = flame_titles(
        version, shown.when, payload.get("window"), profile.t0_us, payload
    )
    if opened is not None:  # a stored session: say which, after its capture time
        head, _, rest = subtitle.partition(" · ")
        subtitle = f"{head} · session {opened['id']} ({opened['name']}) · {rest}"
    return title, subtitle


@router.get("/formats")
async def formats() -> dict[str, Any]:
    """The Export menu's items, in groups: what the page builds its menus from."""
    return {"groups": [[f.as_dict() for f in group] for group in MENU]}


@router.get("/{fmt}")
async def export(
    fmt: Annotated[str, Path(pattern="^[a-z]+$")],
    live: LiveDep,
    settings: SettingsDep,
    window: WindowDep,
) -> Response:
    suffix, media = check_format(fmt)
    if fmt == "raw":
        from .sessions import stream_raw

        found = await asyncio.to_thread(live.raw_capture)
        if found is None:
            raise UserError("no capture recorded yet: click Start first")
        sid, stem = found
        return await asyncio.to_thread(stream_raw, live.store, sid, f"{stem}{suffix}")
    body = await asyncio.to_thread(_render, live, fmt, window, settings.icicle_max_nodes)
    stem = live.file_stem()
    if window is not None:
        stem += f"-{window[0]:.0f}-{window[1]:.0f}us"
    return attachment(body, f"{stem}{suffix}", media)


def _inline_modules() -> str:
    """The page's own flame component and formatting, as one classic script."""
    from ...paths import frontend_dir

    js = frontend_dir() / "js"
    parts = []
    for name in ("format.js", "flamecanvas.js"):
        text = (js / name).read_text(encoding="utf-8")
        lines = [ln for ln in text.splitlines() if not ln.startswith("import ")]
        parts.append(
            "\n".join(
                ln.replace("export ", "", 1) if ln.startswith("export ") else ln for ln in lines
            )
        )
    return "\n".join(parts)


def standalone_html(payload: dict[str, Any], title: str, subtitle: str = "") -> str:
    """One file that opens anywhere, offline: the dashboard's flame component inlined,
    the icicle data embedded, a title saying what it shows."""
    data = json.dumps(payload).replace("</", "<\\/")

    def safe(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    code = _inline_modules().replace("</script", "<\\/script")
    from ...paths import frontend_dir

    template = (frontend_dir() / "export.html").read_text(encoding="utf-8")
    html = template.replace("@TITLE@", safe(title)).replace("@SUB@", safe(subtitle))
    head, tail = html.split("@CODE@", 1)
    tail = tail.replace("@DATA@", data)
    # The modules go in last so no placeholder inside them is ever replaced.
    return head + code + tail
