"""compare's reduction of a capture (diff/reduce.py): it reads the capture through the
loader every command uses (no reducer of its own), so it answers what a Profile of the
same records answers."""

from __future__ import annotations

import numpy as np

from mcuprof.diff.reduce import reduce_profile
from mcuprof.diff.sources import CompareInput, reduce_source
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.symbols import Function, SymbolTable

FUNCS = [
    Function(f"f{i}", f"f{i}", 0x1000 + 0x100 * i, 0x10FF + 0x100 * i, "a.c", None, False)
    for i in range(6)
]
SYMS = SymbolTable.from_functions(FUNCS)


def _rec(rows):
    rec = np.zeros(len(rows), RECORD_DTYPE)
    arr = np.array(rows, np.int64)
    rec["func_addr"], rec["entry_time"] = arr[:, 0], arr[:, 1]
    rec["duration"], rec["depth"] = arr[:, 2], arr[:, 3]
    return rec


def test_equal_entries_keep_stream_order():
    # The target reset: two roots entered at the same tick, both containing the child
    # sent after them; its parent is the one entered last, i.e. streamed last.
    f0, f1, f2, f3 = (f.start for f in FUNCS[:4])
    rec = _rec([(f3, 200, 5, 0), (f0, 100, 50, 0), (f1, 100, 40, 0), (f2, 110, 10, 1)])
    profile = Profile(SYMS)
    profile.add(rec)
    meta = encode_metadata(Metadata(1_000_000, 1_000_000, 0, "t"))
    data = meta + encode_profile_data(rec[:2]) + encode_profile_data(rec[2:])
    got, _ = reduce_source(CompareInput("t", data=data, size=len(data)), SYMS)
    assert got.stats == reduce_profile(profile, folded=False).stats
    self_us = {s.name: s.self_us for s in got.stats}
    assert self_us["f1"] == 30 and self_us["f0"] == 50  # f2 counted under f1


def test_a_resolved_file_holds_no_bytes_until_reduced(tmp_path):
    """compare resolves both captures first (errors before any work) and reduces one at
    a time: a resolved file keeps neither an open file nor its first chunk (4 MB), which
    would sit on the first capture's memory peak. Its bytes are read when reduced."""
    import os

    from mcuprof.diff.sources import StoreOpener, resolve_source

    f0, f1 = FUNCS[0].start, FUNCS[1].start
    rec = _rec([(f1, 110, 10, 1), (f0, 100, 50, 0)])
    path = tmp_path / "cap.bin"
    path.write_bytes(
        encode_metadata(Metadata(1_000_000, 1_000_000, 0, "t")) + encode_profile_data(rec)
    )
    fds = len(os.listdir("/proc/self/fd"))
    src = resolve_source(str(path), StoreOpener(tmp_path / "data"))
    assert len(os.listdir("/proc/self/fd")) == fds
    assert src.data is None and src.size == path.stat().st_size
    got, _ = reduce_source(src, SYMS)
    assert got.n_records == 2 and [s.name for s in got.stats] == ["f0", "f1"]
