"""One contract per export format (export.FORMATS): suffix, media type, whether it is
titled, and one ``write(profile, out, window, title)`` whose bytes are the format's
``render``; the page's Export menu is built from the same list (/api/export/formats)."""

from __future__ import annotations

import inspect

from fastapi.testclient import TestClient

from mcuprof import export
from mcuprof.profile import Profile
from mcuprof.web.app import create_app
from mcuprof.web.routes.exports import MENU
from mcuprof.web.settings import Settings

# The Export menu as index.html wrote it before the page took it from the API.
THE_MENU = [
    [("svg", "Flame graph SVG"), ("png", "Flame graph PNG"), ("html", "Standalone HTML")],
    [
        ("folded", "Folded stacks"),
        ("speedscope", "speedscope JSON"),
        ("chrome", "Chrome trace"),
        ("csv", "Functions CSV"),
        ("callgrind", "Callgrind"),
    ],
    [("raw", "Raw capture")],
]


def test_every_format_has_one_write_signature() -> None:
    assert tuple(export.FORMATS) == ("folded", "speedscope", "chrome", "csv", "svg", "callgrind")
    for name in export.FORMATS:
        module = export._module(name)
        params = list(inspect.signature(module.write).parameters)
        assert params == ["profile", "out", "window", "title"], name


def test_write_gives_the_bytes_of_render(profile: Profile) -> None:
    """Pieces copied as they come: the event formats reuse their buffers."""
    window = (profile.t0_us, profile.t0_us + 40)

    def written(fmt: export.Format, win: tuple[float, float] | None) -> bytes:
        parts: list[bytes] = []
        fmt.write(profile, lambda b: parts.append(bytes(b)), win)
        return b"".join(parts)

    for name, fmt in export.FORMATS.items():
        for win in (None, window):
            assert written(fmt, win) == export.render(name, profile, win).encode("utf-8"), name


def test_a_titled_format_carries_its_title(profile: Profile) -> None:
    titled = [f for f in export.FORMATS.values() if f.titled]
    assert [f.name for f in titled] == ["svg"]
    parts: list[bytes] = []
    titled[0].write(profile, parts.append, None, ("firmware v9", "captured then"))
    body = b"".join(parts)
    assert b"firmware v9" in body and b"captured then" in body


def test_the_page_gets_its_menu_from_the_api(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path, autoconnect=False)
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as client:
        r = client.get("/api/export/formats")
    assert r.status_code == 200
    groups = r.json()["groups"]
    assert [[(f["name"], f["label"]) for f in g] for g in groups] == THE_MENU
    assert [[f.name for f in g] for g in MENU] == [[n for n, _ in g] for g in THE_MENU]
    suffixes = {f["name"]: f["suffix"] for g in groups for f in g}
    assert suffixes["speedscope"] == ".speedscope.json" and suffixes["raw"] == ".bin"
