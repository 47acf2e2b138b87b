"""Frame metadata shared by the exports."""

from __future__ import annotations

import numpy as np

from ..names import short_label
from ..profile import Profile
from ..profile.aggregate import frame_info

# Calls (or callgrind's edges) handled per step by the streamed exports and by
# ``appearance``: bounded temporaries, each step's text written before the next.
CALLS_PER_STEP = 1 << 14


def frame_name(profile: Profile, fid: int) -> str:
    """The function's one display name, the page's: the short demangled name (no
    return type nor parameters). The folded export alone keeps the full name, as
    CLARIFICATIONS.md defines its frames."""
    return short_label(frame_info(profile, fid).name)


def frame_signature(profile: Profile, fid: int) -> str:
    """The full demangled name (``int app::clamp<int>(int, int, int)``), a field of its
    own next to the display name."""
    return frame_info(profile, fid).name


def frame_file_line(profile: Profile, fid: int) -> tuple[str | None, int | None]:
    f = frame_info(profile, fid)
    return f.file, f.line


def appearance(frame: np.ndarray, n_ids: int) -> np.ndarray:
    """The frame ids of ``frame`` (-1 .. n_ids - 1) in order of first appearance: per
    chunk, only the calls of frames not seen yet are looked at (usually none)."""
    seen = np.zeros(n_ids + 1, bool)  # -1 ("[unknown]") is the last slot, as it wraps
    found: list[np.ndarray] = []
    for k in range(0, len(frame), CALLS_PER_STEP):
        part = frame[k : k + CALLS_PER_STEP]
        hit = seen.take(part, mode="wrap")
        if hit.all():
            continue
        new = np.flatnonzero(~hit)
        ids, first = np.unique(part[new], return_index=True)
        ids = ids[np.argsort(first, kind="stable")]
        seen[ids] = True
        found.append(ids)
    return np.concatenate(found) if found else np.zeros(0, np.int64)
