"""Both live links, DeviceSession (MiniProfiler) and QSLink (QS), on the simulated
targets: each offers the whole Link surface (link/base.py), exactly one optional part,
a capture header that decodes on its own, and a hold that stops the listener."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from mcuprof.link import DeviceSession, Link, LinkState
from mcuprof.link.qs_link import QSLink
from mcuprof.sources import new_source

from .conftest import Recorder

LINKS: dict[str, Callable[[Recorder], Any]] = {
    "miniprofiler": lambda rec: DeviceSession("sim://?rate=3000", 921_600, rec),
    "qs": lambda rec: QSLink("sim://?proto=qs", 921_600, rec, info_wait_s=3.0),
}
QUIET_S = 0.3  # how long a held link is watched for a call to its listener


def _members() -> set[str]:
    """The Link Protocol's members: its attributes and its methods."""
    names = set(Link.__annotations__)
    names |= {n for n, v in vars(Link).items() if not n.startswith("_") and callable(v)}
    names |= {n for n, v in vars(Link).items() if isinstance(v, property)}
    return names


@pytest.mark.parametrize("kind", sorted(LINKS))
def test_each_link_offers_the_link_surface(kind: str) -> None:
    rec = Recorder()
    link = LINKS[kind](rec)
    meta = link.connect()
    try:
        assert link.kind == kind
        assert sorted(n for n in _members() if not hasattr(link, n)) == []
        # Exactly one optional part: device commands (MiniProfiler) or QS-RX control.
        assert (link.device_control is None) != (link.control is None)
        source = new_source(link.kind)
        source.feed(link.capture_header())
        source.close()
        assert source.metadata is not None  # the header says what the target is
        assert source.metadata.timer_freq == meta.timer_freq
        link.start()
        rec.wait_for(lambda: rec.n_records > 0, "records")
        with link.hold():
            with rec.cond:
                held_at = len(rec.raw)
            threading.Event().wait(QUIET_S)
            with rec.cond:
                assert len(rec.raw) == held_at  # the reader waits while held
        rec.wait_for(lambda: len(rec.raw) > held_at, "bytes again after the hold")
        link.stop()
        assert link.state == LinkState.READY
    finally:
        link.close()
    assert link.state == LinkState.DISCONNECTED == "disconnected"
    assert rec.states[-1][0] == "disconnected"
