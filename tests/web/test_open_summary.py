"""Opening a stored session shows its flame graph and Functions at once from the
aggregate kept when it was stored (profile/stored.py, history/summary.py; issue 33,
item 2): those views equal the loaded profile's exactly, the calls still load behind
them, and the loaded profile takes their place."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import numpy as np
import pytest

from mcuprof import kinds
from mcuprof.history.summary import VERSION, keep, keep_summary, kept_view
from mcuprof.kinds.miniprofiler import MiniProfiler
from mcuprof.paths import default_elf
from mcuprof.profile.synth import generate
from mcuprof.protocol import encode_metadata, encode_profile_data
from mcuprof.sources.qs import DEFAULT_TICK_HZ
from mcuprof.store import open_store
from mcuprof.symbols import SymbolTable
from mcuprof.web import views
from tests.sources.conftest import sim_stream

from .conftest import capture, wait_for
from .test_open_stored import HEADERS, META, imported, opened, restarting_capture, shown


def named_capture(calls: int = 3000) -> bytes:
    """Nested calls (some recursive) of the sample ELF's functions, at their addresses."""
    starts = sorted({f.start for f in SymbolTable.from_elf(default_elf()).functions})[:20]
    trace = generate(random.Random(33), len(starts), calls, recursive_rate=0.05)
    recs = trace.records(np.array(starts, np.uint32)[trace.func])
    packets = [encode_profile_data(recs[i : i + 100]) for i in range(0, len(recs), 100)]
    return encode_metadata(META) + b"".join(packets)


CAPTURES = {
    "miniprofiler": lambda: (named_capture(), "miniprofiler"),
    "restarting": lambda: (restarting_capture(6, 500), "miniprofiler"),
    "qs": lambda: (sim_stream(1.0), "qs"),
}


def payloads(profile) -> str:
    """What the page's flame graph (both directions), call tree and Functions show of
    the whole capture, as the server sends them."""
    out = {mode: views.flame_graph(profile, None, 3000, mode) for mode in views.MODES}
    out["tree"] = views.call_tree(profile, "top-down", None, 3000)
    out["functions"] = views.functions(profile, None)
    return json.dumps(out, sort_keys=True)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_the_kept_aggregate_shows_what_the_loaded_profile_shows(tmp_path: Path, name) -> None:
    data, kind = CAPTURES[name]()
    symbols = SymbolTable.from_elf(default_elf())
    with open_store(tmp_path / "data") as store:
        info = store.import_capture("cap", data, default_elf(), kind=kind)
        keep_summary(store, info.id)  # as `sessions import` keeps it: the session's ELF
        first = kept_view(store, info.id, symbols, DEFAULT_TICK_HZ)
        assert first is not None and first.n_records > 0
        loaded = kinds.get(kind).load_stored(store, info.id, symbols, DEFAULT_TICK_HZ)
        assert payloads(first) == payloads(loaded)
        assert store.summary(info.id, VERSION)["functions"]  # history's figures too


def test_an_open_named_otherwise_loads_as_before(tmp_path: Path) -> None:
    """Kept with the session's ELF, opened by a dashboard without it (or another tick
    rate for QS): the frames would differ, so the open does not use the aggregate."""
    with open_store(tmp_path / "data") as store:
        info = store.import_capture("cap", named_capture(500), default_elf())
        keep_summary(store, info.id)
        assert kept_view(store, info.id, SymbolTable.from_elf(default_elf()), None) is not None
        assert kept_view(store, info.id, SymbolTable.empty(), None) is None
        qs = store.import_capture("qs", sim_stream(0.5), kind="qs")
        keep(store, qs.id, None, DEFAULT_TICK_HZ)
        assert kept_view(store, qs.id, None, DEFAULT_TICK_HZ) is not None
        assert kept_view(store, qs.id, None, 2 * DEFAULT_TICK_HZ) is None
        store.save_summary(qs.id, VERSION, {"functions": {}})  # an older summary
        assert kept_view(store, qs.id, None, DEFAULT_TICK_HZ) is None


def test_open_shows_the_summary_while_the_calls_load(make_client, monkeypatch) -> None:
    """The loader held: the flame graph and Functions already answer, equal to the loaded
    profile's; the timeline is empty and a window is refused with one line; once the
    calls are in, the same payloads come from them."""
    reached, release = threading.Event(), threading.Event()
    real = MiniProfiler.load_stored

    def held(self, *args, progress=None, **kw):  # type: ignore[no-untyped-def]
        if progress is not None:  # the open's load, not the import's summary
            reached.set()
            release.wait(20)
        return real(self, *args, progress=progress, **kw)

    monkeypatch.setattr(MiniProfiler, "load_stored", held)
    client = make_client(autoconnect=False)
    sid = imported(client, restarting_capture(3, 400), "miniprofiler")
    opened(client, sid)
    assert reached.wait(10)

    def seen() -> dict:
        return {
            "flame": client.get("/api/flame").json(),
            "bottom-up": client.get("/api/flame?mode=bottom-up").json(),
            "functions": client.get("/api/functions").json(),
        }

    early = seen()
    assert early["functions"]["functions"] and early["flame"]["functions"]
    assert client.get("/api/state").json()["health"]["replay"] is not None  # still loading
    assert client.get("/api/timeline?width=200").json()["records"] == 0
    r = client.get("/api/functions?t0=0&t1=1000")
    assert r.status_code == 400 and "still loading" in r.json()["error"]
    release.set()
    shown(client)
    assert seen() == early
    assert client.get("/api/timeline?width=200").json()["records"] > 0


def test_stop_keeps_the_summary_an_open_shows(client) -> None:
    """A capture recorded by the dashboard: Stop keeps its summary (on the decode pool),
    and it shows what the loaded session shows."""
    capture(client, 2000)
    live = client.app.state.live
    sid = live.recorder.capture_id
    assert client.post("/api/stop", headers=HEADERS).status_code == 200
    store = client.app.state.store
    wait_for(lambda: store.summary(sid, VERSION), "the summary kept at Stop")
    first = kept_view(store, sid, live.symbols, None)
    assert first is not None
    loaded = kinds.get("miniprofiler").load_stored(store, sid, live.symbols)
    assert payloads(first) == payloads(loaded)


def test_a_capture_past_the_kept_stacks_says_why_it_waits(tmp_path: Path, monkeypatch) -> None:
    """Past MAX_KEPT_STACKS the summary keeps only the count, and the open says so."""
    from mcuprof.profile import stored

    monkeypatch.setattr(stored, "MAX_KEPT_STACKS", 10)
    with open_store(tmp_path / "data") as store:
        info = store.import_capture("cap", named_capture(500), default_elf())
        keep_summary(store, info.id)
        why = kept_view(store, info.id, SymbolTable.from_elf(default_elf()), None)
        assert isinstance(why, str) and "MAX_KEPT_STACKS" in why and "call paths" in why


def test_sessions_import_keeps_the_summary(tmp_path: Path, capsys) -> None:
    from mcuprof.cli import main

    path = tmp_path / "cap.bin"
    path.write_bytes(named_capture(500))
    data = tmp_path / "data"
    assert main(["sessions", "import", "--data-dir", str(data), "--elf", str(default_elf()),
                 str(path)]) == 0  # fmt: skip
    with open_store(data) as store:
        (info,) = store.list()
        assert kept_view(store, info.id, SymbolTable.from_elf(default_elf()), None) is not None
