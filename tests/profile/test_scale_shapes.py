"""Linear at any depth and fan-out (issue 14, item 1): a chain 32,768 calls deep and
50,000 siblings go through reconstruction, aggregation and every export in seconds.
Nothing here is timed (speed lives in bench/): before the change these shapes took hours
(depth) and tens of seconds (siblings), so a return of the quadratic walk shows as the suite's
per-test timeout, not as a flaky budget.

Depth costs a fixed ~0.5 ms per level (each level is a few array passes), so 32,768 levels
(past any signed 16-bit depth) run once, through aggregation; the exports and the other
shapes use a few thousand levels, where a quadratic walk would still take minutes."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from mcuprof import export
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE

DEEP = 32_768  # past int16: a signed 16-bit depth anywhere would wrap here
DEEP_EXPORT = 8_192
WIDE = 50_000
LEAF = f"0x{0x0800_0000 + 4 * (DEEP - 1):08x}"
EXPORT_LEAF = f"0x{0x0800_0000 + 4 * (DEEP_EXPORT - 1):08x}"


def chain(depth: int, *, leaf_self_only: bool, recursive: bool = False) -> np.ndarray:
    """One valid chain of nested calls, deepest first as the device sends them. Every
    frame has self time unless ``leaf_self_only`` (then the folded output is one line)."""
    d = np.arange(depth)[::-1]
    r = np.empty(depth, RECORD_DTYPE)
    r["depth"] = d
    r["func_addr"] = 0x0800_0000 if recursive else 0x0800_0000 + 4 * d
    if leaf_self_only:
        r["entry_time"], r["duration"] = 100, 10
    else:
        r["entry_time"], r["duration"] = 100 + d, 2 * (depth - d) + 1
    return r


def siblings(n: int) -> np.ndarray:
    """One root that calls ``n`` distinct functions, each once."""
    r = np.empty(n + 1, RECORD_DTYPE)
    r["depth"][:n] = 1
    r["func_addr"][:n] = 0x0800_0000 + 4 * np.arange(n)
    r["entry_time"][:n] = 10 + 3 * np.arange(n)
    r["duration"][:n] = 2
    r[n] = (0x0700_0000, 0, 10 + 3 * n, 0)
    return r


@pytest.fixture(scope="module")
def deep() -> Profile:
    """Only the leaf has self time, so folded (which repeats the whole stack on every
    line) is one line of 8,192 frames and every export stays linear in its output."""
    p = Profile()
    p.add(chain(DEEP_EXPORT, leaf_self_only=True))
    return p


def test_deep_chain_aggregates() -> None:
    p = Profile()
    p.add(chain(DEEP, leaf_self_only=True))
    stats = p.function_stats()
    assert len(stats) == DEEP
    assert {(s.calls, s.total_us) for s in stats} == {(1, 10.0)}
    assert [s.name for s in stats if s.self_us] == [LEAF]


@pytest.mark.parametrize("fmt", ["csv", "callgrind", "speedscope", "chrome"])
def test_deep_chain_exports(deep: Profile, fmt: str) -> None:
    text = export.render(fmt, deep)
    assert EXPORT_LEAF in text and "0x08000000" in text


def test_deep_chain_folded_and_svg(deep: Profile) -> None:
    folded = export.render("folded", deep)
    assert folded.count("\n") == 1
    assert folded.count(";") == DEEP_EXPORT - 1
    assert folded.startswith("0x08000000;0x08000004;") and folded.endswith(f"{EXPORT_LEAF} 10\n")
    svg = export.render("svg", deep)
    assert 1000 < svg.count('class="f"') <= 3000  # pruned to the node budget
    assert 'data-n="0x08000000"' in svg


@pytest.mark.parametrize("recursive", [False, True])
def test_self_time_at_every_level(recursive: bool) -> None:
    depth = 4_096
    p = Profile()
    p.add(chain(depth, leaf_self_only=False, recursive=recursive))
    stats = p.function_stats()
    if recursive:  # the outermost call counts once in the total
        assert [(s.calls, s.total_us, s.self_us) for s in stats] == [
            (depth, 2 * depth + 1, 2 * depth + 1)
        ]
    else:
        assert sorted({s.self_us for s in stats}) == [2.0, 3.0]
        assert max(s.total_us for s in stats) == 2 * depth + 1


def test_wide_fan_out() -> None:
    p = Profile()
    p.add(siblings(WIDE))
    assert len(p.function_stats()) == WIDE + 1
    last_child = f"0x{0x0800_0000 + 4 * (WIDE - 1):08x}"
    for fmt in export.FORMATS:
        text = export.render(fmt, p)
        # SVG prunes frames narrower than a pixel; every other format keeps every function.
        assert (last_child in text) == (fmt != "svg"), fmt
    folded = export.render("folded", p)
    assert folded.count("\n") == WIDE + 1  # each child, and the root's own time


def test_export_of_a_snapshot_leaves_the_live_lock_free() -> None:
    """The snapshot is taken under the lock; its export then never asks for the lock again:
    it completes while another thread (the live link, here the test) holds it throughout."""
    p = Profile()
    p.add(chain(2_000, leaf_self_only=False))
    with p.lock:
        snap = p.snapshot()
    out: list[str] = []
    with p.lock:
        worker = threading.Thread(target=lambda: out.append(export.render("speedscope", snap)))
        worker.start()
        worker.join(timeout=120)
        assert not worker.is_alive(), "the export waited for the live lock"
    assert out == [export.render("speedscope", p)]
