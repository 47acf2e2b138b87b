"""Timeline level of detail: only what is visible at pixel resolution."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .kernels import ranks
from .lod import visible

if TYPE_CHECKING:
    from .model import Profile


def timeline(profile: Profile, t0_us: float, t1_us: float, width_px: int) -> dict[str, Any]:
    """Rectangles for the visible range [t0_us, t1_us] drawn ``width_px`` wide.

    Calls at least one pixel wide come back one by one. Narrower calls of one depth
    row are merged per pixel column into one rectangle spanning them, with ``count`` > 1
    and the name of the longest; so the answer stays O(width x depth) for any capture,
    and precomputed levels (``lod.py``) keep the work near that too.
    Columns: depth, start_us, dur_us, frame (index into ``names``), count.
    """
    if t1_us < t0_us:
        t0_us, t1_us = t1_us, t0_us
    width = max(1, int(width_px))
    a, b = profile.ticks(t0_us), profile.ticks(t1_us)
    px = max((b - a) / width, 1e-12)
    boxes: list[tuple[np.ndarray, ...]] = []  # (depth, start, end, frame, count) per part
    total = 0
    frame_of = profile.frame_of
    for d in sorted(profile.levels):
        lv = profile.levels[d]
        entry, dur = lv.entry, lv.dur
        lo = lv.first_ending_at(math.floor(a))
        hi = int(np.searchsorted(entry, math.ceil(b), side="right"))
        if hi <= lo:
            continue
        # Only calls entered before the view can end before it.
        k0 = min(max(int(np.searchsorted(entry, math.ceil(a), side="left")), lo), hi)
        wide, nar = visible(entry, dur, lv.lod, lo, k0, hi, a, px, width)
        total += len(wide) + int(nar["count"].sum())
        if len(wide):
            we = entry[wide].astype(np.float64)
            one = np.ones(len(we), np.int64)
            boxes.append((np.full(len(we), d), we, we + dur[wide], frame_of[lv.addr[wide]], one))
        if len(nar["count"]):
            first = entry[nar["first"]].astype(np.float64)
            # Each merged box is named after its longest call (the first of equals), so
            # zoomed out the dominant function keeps its colour.
            frame = frame_of[lv.addr[nar["lpos"]]]
            boxes.append((np.full(len(first), d), first, nar["end"], frame, nar["count"]))
        if profile.spill is not None:
            # A whole-capture view reads around every pixel edge of each level, and
            # each read maps 64 KB (the kernel's fault-around): let one level's pages
            # go before the next is read.
            profile.spill.drop()
    cols = [np.concatenate(c) for c in zip(*boxes, strict=True)] if boxes else [np.empty(0)] * 5
    depth, start, end, frames, count = cols
    frames = frames.astype(np.int64)
    # Frame ids span a small range: ranked by a table, not np.unique's sort.
    lo = int(frames.min()) if len(frames) else 0
    span = int(frames.max()) - lo + 1 if len(frames) else 0
    used, idx = ranks(frames, lo, span)
    names = [profile.frames[f].name for f in used.tolist()]
    to_us = 1e6 / profile.timer_freq
    return {
        "t0_us": t0_us,
        "t1_us": t1_us,
        "width_px": width,
        "records": total,
        "names": names,
        "fids": used.tolist(),
        "depth": depth.astype(np.int64).tolist(),
        "start_us": (start * to_us).tolist(),
        "dur_us": ((end - start) * to_us).tolist(),
        "frame": idx.astype(np.int64).tolist(),
        "count": count.astype(np.int64).tolist(),
    }
