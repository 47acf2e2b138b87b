"""The SVG flame graph in a real Chromium: hover, zoom, reset and search work offline."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from mcuprof.export import svg
from mcuprof.profile import Profile


@pytest.mark.browser
def test_svg_interaction(profile: Profile, tmp_path: Path, chromium: Browser) -> None:
    path = tmp_path / "flame.svg"
    path.write_text(svg.render(profile), encoding="utf-8")
    requests: list[str] = []
    with contextlib.closing(chromium.new_context()) as browser:
        try:
            page = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            clamp = page.locator('g.f[data-n="int app::clamp<int>(int, int, int)"]').first
            before = float(clamp.locator("rect").get_attribute("width"))
            assert before > 0
            # Hover: the details line names the frame with its time and share.
            clamp.dispatch_event("mouseover")
            details = page.locator("#details").text_content()
            # The display name first, the full signature after the figures.
            assert details.startswith("app::clamp<int> (")
            assert "µs" in details and details.endswith("%) · int app::clamp<int>(int, int, int)")
            # Click zooms: the frame fills the width, siblings elsewhere are hidden.
            clamp.dispatch_event("click")
            after = float(clamp.locator("rect").get_attribute("width"))
            assert after > before
            assert page.locator("#reset").get_attribute("visibility") == "visible"
            page.locator("#reset").dispatch_event("click")
            assert float(clamp.locator("rect").get_attribute("width")) == pytest.approx(before)
            # Search highlights every match and reports the matched share.
            page.fill("#q", "helper")
            hits = page.locator("g.f.hl")
            assert hits.count() == page.locator('g.f[data-n="helper"]').count() > 0
            matched = page.locator("#matched").text_content()
            assert matched.startswith("Matched: ") and matched.endswith("%")
            share = float(matched[len("Matched: ") : -1])
            assert 0 < share <= 100
            page.fill("#q", "")
            assert page.locator("g.f.hl").count() == 0
            assert errors == []
        finally:
            browser.close()
    assert all(u.startswith("file://") for u in requests)


@pytest.mark.browser
@pytest.mark.parametrize("width", [1440, 800])
def test_svg_fits_the_window(profile: Profile, tmp_path: Path, chromium: Browser, width) -> None:
    """Issue 34: the SVG scales to what shows it (viewBox, width 100%): in a window
    narrower than its 1,600 px drawing nothing is cut off on the right, and a click
    still zooms a frame to the drawing's whole width."""
    path = tmp_path / "flame.svg"
    path.write_text(svg.render(profile), encoding="utf-8")
    with contextlib.closing(chromium.new_context(viewport={"width": width, "height": 900})) as ctx:
        page = ctx.new_page()
        page.goto(path.as_uri())
        geo = page.evaluate(
            """() => {
                const s = document.documentElement.getBoundingClientRect();
                const root = document.querySelector('g.f[data-d="0"] rect').getBoundingClientRect();
                const vb = document.documentElement.viewBox.baseVal;
                return {svg: s.width, height: s.height, tall: s.width * vb.height / vb.width,
                        left: root.left, right: root.right,
                        scroll: document.scrollingElement.scrollWidth, inner: innerWidth};
            }"""
        )
        assert geo["svg"] == pytest.approx(width, abs=1)
        # Its height follows (a tall graph scrolls; it is not shrunk to the window's).
        assert geo["height"] == pytest.approx(geo["tall"], abs=1)
        assert geo["scroll"] <= geo["inner"]
        assert geo["left"] >= 0 and geo["right"] <= width
        clamp = page.locator('g.f[data-n="int app::clamp<int>(int, int, int)"]').first
        clamp.dispatch_event("click")
        zoomed = clamp.locator("rect").bounding_box()
        assert zoomed is not None and zoomed["x"] + zoomed["width"] <= width + 1
        assert zoomed["width"] > 0.9 * width - 30
