"""Keyed calls (profile/keyed.py) as rows that compare by value: the frame index of each
call depends on how its batch listed the frames, its key does not."""

from __future__ import annotations

from mcuprof.profile.keyed import KeyedCalls


def rows(parts: list[KeyedCalls]) -> list[tuple[int, int, int, object, str, str | None]]:
    """(entry, duration, depth, key, name, file) per call of ``parts``, in order."""
    out = []
    for p in parts:
        infos = [p.frames[i] for i in p.frame.tolist()]
        for e, d, dep, f in zip(
            p.entry.tolist(), p.dur.tolist(), p.depth.tolist(), infos, strict=True
        ):
            out.append((e, d, dep, f.key, f.name, f.file))
    return out
