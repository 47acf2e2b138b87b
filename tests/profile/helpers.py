"""Independent (slow, obvious) implementations to check the profile model against."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import numpy as np

from mcuprof.profile import Profile
from mcuprof.profile.aggregate import UNKNOWN_ID, Stacks, mark_nested
from mcuprof.profile.synth import Trace, addresses, generate
from mcuprof.protocol import (
    Metadata,
    ProfileData,
    ResponseDecoder,
    encode_metadata,
    encode_profile_data,
)
from mcuprof.symbols import Function, SymbolTable

CPP_NAMES = [
    "main",
    "int app::clamp<int>(int, int, int)",
    "std::vector<int, std::allocator<int> >::push_back(int const&)",
    "app::Filter::operator()(float) const",
    "bool operator< <app::Key>(app::Key const&, app::Key const&)",
    "uart_send",
    "SysTick_Handler",
    "TIM2_IRQHandler",
    "app::(anonymous namespace)::mix(unsigned int&, unsigned int)",
    "helper",
]


def symbol_table(names: Sequence[str] = CPP_NAMES, base: int = 0x0800_0100, size: int = 0x40):
    """A SymbolTable with one function per name, laid out back to back."""
    funcs = [
        Function(
            name=n,
            raw_name=f"_raw{i}",
            start=base + i * size,
            end=base + (i + 1) * size,
            file=f"src/f{i}.cpp",
            line=10 + i,
        )
        for i, n in enumerate(names)
    ]
    return SymbolTable.from_functions(funcs), [(f.start, f.end) for f in funcs]


def reference_parents(depth: np.ndarray, entry: np.ndarray, dur: np.ndarray) -> list[int]:
    """CLARIFICATIONS rule, literally: for each record at d > 0, among records at d - 1
    whose [entry, exit] contains it, the one entered last (later in the stream on ties)."""
    exit_ = entry + dur
    out = []
    for i in range(len(depth)):
        best = -1
        if depth[i] > 0:
            for j in range(len(depth)):
                if (
                    depth[j] == depth[i] - 1
                    and entry[j] <= entry[i]
                    and exit_[j] >= exit_[i]
                    and (best < 0 or (entry[j], j) > (entry[best], best))
                ):
                    best = j
        out.append(best)
    return out


def stream_parents(profile: Profile, n: int, depth: np.ndarray, entry: np.ndarray) -> list[int]:
    """Profile's reconstruction expressed as stream indices (table rows are depth-major,
    then entry, then stream order)."""
    t = profile.table()
    row_to_stream = np.lexsort((np.arange(n), entry, depth))
    assert np.array_equal(t["depth"], depth[row_to_stream])
    assert np.array_equal(t["entry"], entry[row_to_stream])
    out = [-1] * n
    for row, p in enumerate(t["parent"].tolist()):
        out[int(row_to_stream[row])] = -1 if p < 0 else int(row_to_stream[p])
    return out


def round_us(ticks: int, freq: int) -> int:
    return (ticks * 2_000_000 + freq) // (2 * freq)


def expected_folded(
    names: Sequence[str], parent: Sequence[int], dur: Sequence[int], freq: int
) -> dict[str, int]:
    """Folded output computed from a parent list (stream indices, -1 root)."""
    n = len(names)
    child_sum = [0] * n
    for i, p in enumerate(parent):
        if p >= 0:
            child_sum[p] += int(dur[i])
    stacks: dict[str, int] = {}
    for i in range(n):
        path = [names[i]]
        p = parent[i]
        while p >= 0:
            path.append(names[p])
            p = parent[p]
        key = ";".join(reversed(path))
        stacks[key] = stacks.get(key, 0) + max(int(dur[i]) - child_sum[i], 0)
    out = {k: round_us(v, freq) for k, v in stacks.items()}
    return {k: out[k] for k in sorted(out, key=str.encode) if out[k]}


def kept_truth(trace: Trace, keep: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Truth parents after losing records: a lost parent makes its children orphans."""
    new_index = np.cumsum(keep) - 1
    parent = []
    for i in np.flatnonzero(keep).tolist():
        p = int(trace.parent[i])
        parent.append(int(new_index[p]) if p >= 0 and keep[p] else -1)
    return parent, np.flatnonzero(keep)


def orphan_names(names: list[str], parent: list[int], depth: Sequence[int]) -> list[str]:
    """Prefix "[unknown]" to orphan roots, as the folded stacks show them."""
    return [
        f"[unknown];{n}" if p < 0 and d > 0 else n
        for n, p, d in zip(names, parent, depth, strict=True)
    ]


def packets(records: np.ndarray, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted(set(cuts)), len(records)]
    return [encode_profile_data(records[a:b]) for a, b in itertools.pairwise(bounds)]


def feed_stream(
    profile: Profile, stream: bytes, chunks: Sequence[int] = ()
) -> tuple[ResponseDecoder, Metadata | None]:
    dec = ResponseDecoder()
    meta = None
    bounds = [0, *sorted(set(chunks)), len(stream)]
    for a, b in itertools.pairwise(bounds):
        for ev in dec.feed(stream[a:b]):
            if isinstance(ev, Metadata):
                meta = ev
                profile.set_timer_freq(ev.timer_freq)
            elif isinstance(ev, ProfileData):
                profile.add(ev.records)
    return dec, meta


def scenario(seed: int, n: int = 400, **kw) -> tuple[Trace, np.ndarray, SymbolTable, list[str]]:
    rng = random.Random(seed)
    table, ranges = symbol_table()
    isr = kw.pop("isr", False)
    style = kw.pop("style", "entry")
    thumb = kw.pop("thumb", False)
    trace = generate(
        rng,
        len(CPP_NAMES),
        n,
        isr_funcs=(6, 7) if isr else (),
        isr_rate=0.4 if isr else 0.0,
        **kw,
    )
    addrs = addresses(rng, trace, ranges, style=style, thumb=thumb)
    names = [CPP_NAMES[f] for f in trace.func.tolist()]
    return trace, trace.records(addrs), table, names


def metadata_packet(timer_freq: int) -> bytes:
    return encode_metadata(Metadata(168_000_000, timer_freq, 0x1234, "test"))


def build_stacks(profile: Profile) -> Stacks:
    """Stacks from scratch, one np.unique per depth (the reference for the
    incremental aggregator)."""
    parents: list[np.ndarray] = [np.array([-1], np.int64)]
    frames: list[np.ndarray] = [np.array([UNKNOWN_ID], np.int64)]
    depths: list[np.ndarray] = [np.array([-1], np.int64)]
    per_level: dict[int, np.ndarray] = {}
    count = 1
    for d in sorted(profile.levels):
        lv = profile.levels[d]
        frame = profile.frame_ids(lv).astype(np.int64)
        if d == 0:
            pst = np.full(lv.n, -1, np.int64)
        else:
            p = lv.parent
            up = per_level.get(d - 1)
            pst = np.zeros(lv.n, np.int64)  # orphans hang under stack 0, "[unknown]"
            if up is not None:
                has = p >= 0
                pst[has] = up[p[has]]
        keys, inv = np.unique((pst << 32) | frame, return_inverse=True)
        per_level[d] = (inv + count).astype(np.int32)
        parents.append(keys >> 32)
        frames.append(keys & ((1 << 32) - 1))
        depths.append(np.full(len(keys), d, np.int64))
        count += len(keys)
    parent = np.concatenate(parents).astype(np.int32)
    frame = np.concatenate(frames).astype(np.int32)
    nested = np.zeros(count, bool)
    mark_nested(parent, frame, nested, 0)
    return Stacks(parent, frame, np.concatenate(depths).astype(np.int32), nested, per_level)
