"""Downloads: every export format of mcuprof.export, a standalone HTML flame graph and the
raw capture. File names carry the firmware version and the capture time."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import Response

from ..errors import UserError
from ..export import render as render_format
from . import views
from .deps import LiveDep, SettingsDep, WindowDep
from .static import plotly_js_path

router = APIRouter(prefix="/api/export")

# format -> (file name suffix, media type)
FORMATS: dict[str, tuple[str, str]] = {
    "svg": (".svg", "image/svg+xml"),
    "folded": (".folded", "text/plain; charset=utf-8"),
    "speedscope": (".speedscope.json", "application/json"),
    "chrome": (".trace.json", "application/json"),
    "csv": (".csv", "text/csv; charset=utf-8"),
    "callgrind": (".callgrind", "text/plain; charset=utf-8"),
    "html": (".html", "text/html; charset=utf-8"),
    "raw": (".bin", "application/octet-stream"),
}


def _attachment(body: bytes | str, filename: str, media: str) -> Response:
    data = body.encode("utf-8") if isinstance(body, str) else body
    return Response(
        content=data,
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def _render(live: Any, fmt: str, window: tuple[float, float] | None, max_nodes: int) -> bytes | str:
    # The live lock is held only to copy the records: the state endpoint and the
    # WebSocket keep answering while a large capture renders.
    with live._profile_lock:
        live.ingest()
        if live.profile_records() == 0:
            raise UserError("nothing to export yet: click Start and capture some data")
        profile = live.profile.snapshot()
    if fmt == "html":
        payload = views.icicle(profile, window, max_nodes)
        title = f"mcuprof flame graph — {live.file_stem()}"
        return standalone_html(payload, title)
    return render_format(fmt, profile, window)


@router.get("/{fmt}")
async def export(
    fmt: Annotated[str, Path(pattern="^[a-z]+$")],
    live: LiveDep,
    settings: SettingsDep,
    window: WindowDep,
) -> Response:
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    suffix, media = FORMATS[fmt]
    if fmt == "raw":
        found = await asyncio.to_thread(live.raw_capture)
        if found is None:
            raise UserError("no capture recorded yet: click Start first")
        data, stem = found
        return _attachment(data, f"{stem}{suffix}", media)
    body = await asyncio.to_thread(_render, live, fmt, window, settings.icicle_max_nodes)
    stem = live.file_stem()
    if window is not None:
        stem += f"-{window[0]:.0f}-{window[1]:.0f}us"
    return _attachment(body, f"{stem}{suffix}", media)


_STANDALONE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>@TITLE@</title>
<style>
html, body { margin: 0; height: 100%; background: #161a20; color: #d6dbe2;
  font: 13px system-ui, sans-serif; }
h1 { font-size: 14px; font-weight: 600; margin: 0; padding: 8px 12px; }
#g { height: calc(100% - 36px); }
</style>
<script>@PLOTLY@</script></head>
<body><h1>@TITLE@</h1><div id="g"></div>
<script>
const d = @DATA@;
function color(name, i) {
  if (i === 0) return "#3b4350";
  if (name === "other") return "#4a525e";
  let h = 2166136261;
  for (let k = 0; k < name.length; k++) { h ^= name.charCodeAt(k); h = Math.imul(h, 16777619); }
  const u = (h >>> 0) / 4294967295;
  return `hsl(${8 + Math.round(u * 42)}, 78%, ${46 + Math.round(((h >>> 8) & 0xff) / 255 * 14)}%)`;
}
const trace = {
  type: "icicle", ids: d.ids, labels: d.labels, parents: d.parents, values: d.values,
  customdata: d.customdata, branchvalues: "total", sort: false, maxdepth: -1,
  tiling: { orientation: "v", flip: "y", pad: 0 }, pathbar: { visible: false },
  textinfo: "label", textfont: { size: 11, color: "#111" },
  marker: { colors: d.names.map(color), line: { width: 0.6, color: "#0f1216" } },
  hovertemplate: "<b>%{customdata[0]}</b><br>total %{customdata[1]:,.1f} µs"
    + " · %{customdata[4]:.2f}%<br>self %{customdata[2]:,.1f} µs · calls %{customdata[3]:,}"
    + "<extra></extra>",
};
Plotly.newPlot("g", [trace], { margin: { t: 4, l: 4, r: 4, b: 4 }, paper_bgcolor: "#161a20",
  font: { color: "#d6dbe2" } }, { displaylogo: false, responsive: true });
</script></body></html>
"""


def standalone_html(payload: dict[str, Any], title: str) -> str:
    """One file that opens anywhere, offline: Plotly inlined, the icicle data embedded."""
    plotly = plotly_js_path().read_text(encoding="utf-8")
    data = json.dumps(payload).replace("</", "<\\/")
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;")
    # Plotly's source is inserted last so no placeholder inside it is ever replaced.
    html = _STANDALONE.replace("@TITLE@", safe_title).replace("@DATA@", data)
    head, tail = html.split("@PLOTLY@", 1)
    return head + plotly.replace("</script", "<\\/script") + tail
