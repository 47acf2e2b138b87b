"""Indirect-COF destinations and the functions they lie in, from counts per 24-bit
address (digest.Analysis keeps them), a slice of addresses at a time: rows are made only
for the first MAX_ROWS of each list, so a trace with millions of destinations costs its
counts, not a row each."""

from __future__ import annotations

from typing import Any

import numpy as np

from .elf import Firmware
from .measures import pct

# Rows listed for start PCs, destinations and functions; past these the rest are counted
# in "starts_more", "destinations_more", "functions_more" (keys present only then).
MAX_ROWS = 10_000
_ADDRESSES = 1 << 24
_SLICE = 1 << 20


def destination_rows(counts: np.ndarray | None, total: int, fw: Firmware) -> dict[str, Any]:
    """Indirect-COF destinations and the functions they lie in, from the counts per
    address, a slice of addresses at a time; the first MAX_ROWS rows of each listed."""
    starts = np.array([f.start for f in fw.symbols.functions] or [0], dtype=np.int64)
    known: dict[int, list[int]] = {}  # function index: [entries, calls, destinations]
    top = _Top()  # destinations, by (-count, address)
    unknown = _Top()  # addresses in no function: a function row each
    n_rows = n_unknown = 0
    for lo in range(0, _ADDRESSES if counts is not None else 0, _SLICE):
        part = counts[lo : lo + _SLICE]  # type: ignore[index]
        nz = np.flatnonzero(part)
        if not len(nz):
            continue
        addrs = nz + lo
        cnt = part[nz].astype(np.int64)
        n_rows += len(addrs)
        top.add(addrs, cnt)
        index = fw.symbols.lookup(addrs.astype(np.uint32))
        outside = index < 0
        n_unknown += int(outside.sum())
        unknown.add(addrs[outside], cnt[outside])
        inside = ~outside
        calls = np.where(addrs[inside] == starts[index[inside]], cnt[inside], 0)
        for i, e, c in zip(
            index[inside].tolist(), cnt[inside].tolist(), calls.tolist(), strict=True
        ):
            row = known.setdefault(i, [0, 0, 0])
            row[0] += e
            row[1] += c
            row[2] += 1
    functions = _function_rows(known, unknown, fw, total)
    listed = top.rows()
    found = fw.symbols.lookup(np.array([a for a, _ in listed], dtype=np.uint32)).tolist()
    rows = [
        _destination_row(a, c, fw.symbols.functions[i] if i >= 0 else None, total)
        for (a, c), i in zip(listed, found, strict=True)
    ]
    out: dict[str, Any] = {
        "indirect": total,
        "functions": functions[:MAX_ROWS],
        "destinations": rows,
    }
    n_functions = len(functions) - len(unknown.rows()) + n_unknown
    if n_functions > MAX_ROWS:
        out["functions_more"] = n_functions - MAX_ROWS
    if n_rows > len(rows):
        out["destinations_more"] = n_rows - len(rows)
    return out


def _function_rows(
    known: dict[int, list[int]], unknown: _Top, fw: Firmware, total: int
) -> list[dict[str, Any]]:
    per_label: dict[str, dict[str, Any]] = {}
    for i in sorted(known, key=lambda i: fw.symbols.functions[i].start):
        func = fw.symbols.functions[i]
        entries, calls, dests = known[i]
        row = per_label.setdefault(
            func.label,
            {"function": func.label, "start": f"0x{func.start:06x}", "entries": 0, "calls": 0,
             "returns": 0, "destinations": 0},
        )  # fmt: skip
        row["entries"] += entries
        row["calls"] += calls
        row["returns"] += entries - calls
        row["destinations"] += dests
    for addr, count in unknown.rows():
        label = f"0x{addr:06x}"
        per_label[label] = {"function": label, "start": None, "entries": count, "calls": 0,
                            "returns": 0, "destinations": 1}  # fmt: skip
    functions = sorted(per_label.values(), key=lambda r: (-r["entries"], r["function"]))
    for row in functions:
        row["share"] = pct(row["entries"], total)
    return functions


def _destination_row(addr: int, count: int, func: Any, total: int) -> dict[str, Any]:
    kind = "unknown" if func is None else "call" if addr == func.start else "return"
    return {
        "address": f"0x{addr:06x}",
        "function": func.label if func is not None else f"0x{addr:06x}",
        "offset": None if func is None else addr - func.start,
        "kind": kind,
        "count": count,
        "share": pct(count, total),
    }


class _Top:
    """The MAX_ROWS (address, count) pairs first by (-count, address), kept as they come."""

    def __init__(self) -> None:
        self.addrs = np.empty(0, np.int64)
        self.counts = np.empty(0, np.int64)

    def add(self, addrs: np.ndarray, counts: np.ndarray) -> None:
        a = np.concatenate((self.addrs, addrs.astype(np.int64)))
        c = np.concatenate((self.counts, counts))
        if len(a) > MAX_ROWS:
            keep = np.lexsort((a, -c))[:MAX_ROWS]
            a, c = a[keep], c[keep]
        self.addrs, self.counts = a, c

    def rows(self) -> list[tuple[int, int]]:
        order = np.lexsort((self.addrs, -self.counts))
        return list(zip(self.addrs[order].tolist(), self.counts[order].tolist(), strict=True))
