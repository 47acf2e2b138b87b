"""The live session's shape (issue 23, point 4): links behind one ``Link`` Protocol, a
coordinator that never branches on a protocol, and parts with one job each."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import mcuprof
from mcuprof.errors import UserError
from mcuprof.link import DeviceSession
from mcuprof.link.open import NO_CONTROL
from mcuprof.link.qs_link import QSLink
from mcuprof.protocol import LinkStats
from mcuprof.web.elfs import ElfCatalog
from mcuprof.web.live.session import LiveSession
from mcuprof.web.settings import Settings

PACKAGE = Path(mcuprof.__file__).parent
# The live-session code: the coordinator, its parts, and the link side it relies on.
LIVE_CODE = (
    "web/live/session.py",
    "web/live/connection.py",
    "web/live/profile.py",
    "web/live/log.py",
    "web/live/health.py",
    "web/live/recorder.py",
    "web/live/publisher.py",
    "link/base.py",
    "link/open.py",
)
MAX_FUNCTION_LINES = 80  # the bound for the live-session code


@pytest.fixture
def live(tmp_path: Path):
    settings = Settings(data_dir=tmp_path, autoconnect=False)
    session = LiveSession(settings, ElfCatalog(settings), None)
    yield session
    session.close()


def test_live_py_does_not_mention_a_protocol() -> None:
    text = (PACKAGE / "web/live/session.py").read_text()
    found = [m.group(0) for m in re.finditer(r"(?i)\w*(qs|miniprof)\w*", text)]
    assert found == []


def test_no_function_of_the_live_session_is_over_80_lines() -> None:
    long = []
    for name in LIVE_CODE:
        tree = ast.parse((PACKAGE / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}:{node.name} ({lines} lines)")
    assert long == []


def test_no_link_method_only_raises() -> None:
    """A capability one protocol lacks is an optional part (None), not a method that
    raises: QSLink had reset_buffers and get_status that only raised."""
    for cls in (DeviceSession, QSLink):
        for name, fn in vars(cls).items():
            if not callable(fn) or name.startswith("__"):
                continue
            body = ast.parse(_dedent(fn)).body[0].body  # type: ignore[attr-defined]
            body = [s for s in body if not isinstance(s, ast.Expr)]  # docstrings
            assert not (len(body) == 1 and isinstance(body[0], ast.Raise)), f"{cls}.{name}"


def _dedent(fn: object) -> str:
    import inspect
    import textwrap

    return textwrap.dedent(inspect.getsource(fn))  # type: ignore[arg-type]


def test_control_is_the_connected_qs_targets_own(live: LiveSession) -> None:
    with pytest.raises(UserError) as caught:
        live.control()  # nothing connected: the same one line as a MiniProfiler link's
    assert str(caught.value) == NO_CONTROL
    live.connect("sim://", None, "qs")
    control = live.control()
    assert control is live.conn.link  # the QS link is its own control part
    live.command("tick")
    assert any(e["message"] == "QS-RX tick sent" for e in live.log_since(0))
    with pytest.raises(UserError, match="no buffers to reset"):
        live.reset_buffers()  # a QS target has no device_control part
    live.disconnect()
    live.connect("sim://?rate=100", None, "mp")
    with pytest.raises(UserError) as caught:
        live.control()
    assert str(caught.value) == NO_CONTROL
    live.reset_buffers()  # a MiniProfiler device's own part
    assert live.log_since(0)[-1]["message"] == "device buffers reset"


class FakeLink:
    """Only what the health figures read."""

    def __init__(self, malformed: int) -> None:
        self.stats = LinkStats()
        self.stats.malformed = malformed
        self.records_received_since_start = 0
        self.state = "ready"


def test_counter_growth_is_logged_on_a_new_link_too(live: LiveSession) -> None:
    """The malformed count restarts with a new link: its growth from zero is logged,
    not only what exceeds the old link's count."""
    live.conn.link = FakeLink(5)  # type: ignore[assignment]
    live.tick(False)
    live.conn.link = FakeLink(2)  # type: ignore[assignment]
    live.tick(False)
    lines = [e["message"] for e in live.log_since(0) if "malformed" in e["message"]]
    assert lines == [
        "5 malformed packet(s) dropped, 5 in all",
        "2 malformed packet(s) dropped, 2 in all",
    ]
