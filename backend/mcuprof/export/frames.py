"""Frame metadata shared by the exports."""

from __future__ import annotations

from ..profile import UNKNOWN, Profile
from ..profile.aggregate import UNKNOWN_ID


def frame_name(profile: Profile, fid: int) -> str:
    return UNKNOWN if fid == UNKNOWN_ID else profile.frames[fid].name


def frame_label(profile: Profile, fid: int) -> str:
    return UNKNOWN if fid == UNKNOWN_ID else profile.frames[fid].label


def frame_file_line(profile: Profile, fid: int) -> tuple[str | None, int | None]:
    if fid == UNKNOWN_ID:
        return None, None
    f = profile.frames[fid]
    return f.file, f.line
