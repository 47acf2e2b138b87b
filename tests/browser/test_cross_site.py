"""Another site in the same browser: its <img> tags and fetches aimed at the dashboard's
/api/ get 403 and start nothing (issue 35, finding 4: six such tags froze the server),
while a link from it still opens the page, which then works as usual."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, Request, Response, expect

from tests.helpers import free_port

from .conftest import Server

API = ["api/sessions/1/raw", "api/qs/flow?session=1", "api/state", "api/export/folded"]


@pytest.fixture
def foreign(server: Server) -> Iterator[str]:
    """A page on another site (localhost is not 127.0.0.1) pointing at the dashboard."""
    tags = "".join(f'<img src="{server.url}{path}">' for path in API)
    # Chromium blocks an <img>'s JSON answer before Playwright sees it (ORB): the same
    # requests by fetch show the status.
    fetches = "".join(f'fetch("{server.url}{path}", {{mode: "no-cors"}});' for path in API)
    body = (
        f"<!doctype html><html><body>{tags}<script>{fetches}</script>"
        f'<a id="open" href="{server.url}">open the profiler</a></body></html>'
    ).encode()

    class ForeignPage(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), ForeignPage)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{port}/"
    httpd.shutdown()
    thread.join(10)


def answer(page: Page, answers: list[Response], url: str) -> Response:
    """The response to ``url``, arrived already or awaited (Playwright hands events over
    only inside its own calls: none is missed between the look and the wait)."""
    for response in answers:
        if response.url == url:
            return response
    return page.wait_for_event("response", lambda r: r.url == url)


def test_another_site_gets_403_and_its_link_opens_the_page(
    chromium: Browser, server: Server, foreign: str
) -> None:
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    answers: list[Response] = []
    sent: list[Request] = []
    page.on("response", lambda r: answers.append(r) if "/api/" in r.url else None)
    page.on("request", lambda r: sent.append(r) if "/api/" in r.url else None)
    page.goto(foreign)
    page.wait_for_function(f"() => performance.getEntriesByType('resource').length >= {len(API)}")
    for path in API:
        url = server.url + path
        assert any(r.url == url and r.resource_type == "image" for r in sent), path
        fetched = answer(page, answers, url)
        assert fetched.status == 403, (path, fetched.status)  # (Playwright does not show
        # the Sec-Fetch-* headers Chromium adds; without them and an Origin it was 200)
    answers.clear()
    page.click("#open")  # a navigation from the other site: the page itself opens
    page.wait_for_url(server.url)
    expect(page.locator("#conn-state")).to_contain_text("Ready")
    own = [r for r in answers if r.url.startswith(server.url)]
    assert own and all(r.status != 403 for r in own), [(r.url, r.status) for r in own]
    context.close()
