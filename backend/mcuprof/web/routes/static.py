"""The page, its modules, and Plotly.js from the installed plotly package (no CDN)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from ...errors import UserError
from ...paths import frontend_dir

router = APIRouter()

NO_CACHE = {"Cache-Control": "no-cache"}


def plotly_js_path() -> Path:
    import plotly

    path = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise UserError("plotly.min.js is missing from the plotly package; reinstall plotly")
    return path


@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    return FileResponse(frontend_dir() / "index.html", headers=NO_CACHE)


@router.get("/vendor/plotly.min.js", include_in_schema=False)
async def plotly_js() -> FileResponse:
    return FileResponse(
        plotly_js_path(),
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )
