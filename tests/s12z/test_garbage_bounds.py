"""Issue 26 F8/F9: S12Z garbage and hostile ELFs cost bounded memory in the server."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.protocol.s12z import BadLine, LineDecoder, Lines
from mcuprof.protocol.s12z.decoder import MAX_BAD_EVENTS
from mcuprof.s12z.store import import_trace, session_analysis
from mcuprof.store import SessionStore

PTS = bytes([0x00, 0x11, 0x22, 0x33])


def _split(events: list) -> tuple[np.ndarray, list[BadLine]]:
    good = [e.lines for e in events if isinstance(e, Lines)]
    bad = [e for e in events if isinstance(e, BadLine)]
    return (np.concatenate(good) if good else np.empty(0)), bad


def test_bad_lines_past_the_cap_are_counted_not_kept() -> None:
    n = MAX_BAD_EVENTS + 5000
    data = bytes([0x04]) * n + PTS  # reserved format 4: one bad line per byte
    dec = LineDecoder()
    events = dec.feed(data) + dec.close()
    good, bad = _split(events)
    assert len(bad) == MAX_BAD_EVENTS
    assert [b.offset for b in bad] == list(range(MAX_BAD_EVENTS))
    assert dec.stats.reserved == n and dec.stats.unlisted == n - MAX_BAD_EVENTS
    assert good["offset"].tolist() == [n] and good["address"].tolist() == [0x332211]


@settings(max_examples=150)
@given(st.binary(max_size=4000), st.integers(0, 8), st.lists(st.integers(1, 4000), max_size=6))
def test_capped_decoder_keeps_every_good_line_and_count(data: bytes, cap: int, cuts) -> None:
    """Whatever the cap and the feed split, the good lines and the counts are those of a
    decoder that keeps every bad line; only the events past the cap are missing."""
    full, capped = LineDecoder(max_bad=1 << 30), LineDecoder(max_bad=cap)
    whole = full.feed(data) + full.close()
    got: list = []
    at = 0
    for c in [*sorted(cuts), len(data)]:
        got += capped.feed(data[at:c])
        at = max(at, c)
    got += capped.close()
    good_full, bad_full = _split(whole)
    good, bad = _split(got)
    assert good.tobytes() == good_full.tobytes()
    listed = [b for b in bad if b.kind != "truncated"]
    assert bad_full[: len(listed)] == listed and len(listed) <= cap
    expect = full.stats.as_dict()
    expect["unlisted"] = len(bad_full) - len(bad)
    assert capped.stats.as_dict() == expect


def test_garbage_session_is_analysed_in_bounded_memory(tmp_path) -> None:
    """1 MiB of reserved bytes: before, one BadLine object per byte (~300 bytes each)."""
    size = 1 << 20
    with SessionStore(tmp_path / "data", autoflush=False) as store:
        info = import_trace(store, "garbage", bytes([0x04]) * size)
        assert info.link_stats["reserved"] == size
        assert info.link_stats["unlisted"] == size - MAX_BAD_EVENTS
        tracemalloc.start()
        try:
            _, result = session_analysis(store, info.id)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result["reserved"] == size and len(result["bad_lines"]) == 20
    assert peak < 64 * size, f"analysis peaked at {peak / size:.0f} bytes per input byte"


def _with_compressed(section_name: str, inflated: int, claim: int | None = None) -> bytes:
    """The demo ELF with one section zlib-compressed (SHF_COMPRESSED, as ld's
    --compress-debug-sections writes them), its contents padded with zeros to
    ``inflated`` bytes; ``claim`` overrides the size its header says."""
    from elftools.elf.elffile import ELFFile

    from mcuprof.s12z.elfwrite import Section, Symbol, write_elf
    from mcuprof.s12z.sample import demo_elf

    plain = ELFFile(io.BytesIO(demo_elf()))
    sections, symbols = [], []
    for s in plain.iter_sections():
        if s["sh_flags"] & 0x2:
            body = s.data()
            if s.name == section_name:
                full = body + bytes(inflated - len(body))
                header = struct.pack(">III", 1, claim or len(full), 1)  # ELFCOMPRESS_ZLIB
                body = header + zlib.compress(full, 1)
            sections.append(Section(s.name, s["sh_addr"], body, bool(s["sh_flags"] & 0x4)))
    for sym in plain.get_section_by_name(".symtab").iter_symbols():
        if sym.name:
            kind = "func" if sym["st_info"]["type"] == "STT_FUNC" else "object"
            symbols.append(Symbol(sym.name, sym["st_value"], sym["st_size"], kind))
    image = bytearray(write_elf(sections, symbols))
    index = [s.name for s in sections].index(section_name) + 1
    new = ELFFile(io.BytesIO(bytes(image)))
    flags_at = new["e_shoff"] + index * new["e_shentsize"] + 8
    flags = struct.unpack_from(">I", image, flags_at)[0]
    struct.pack_into(">I", image, flags_at, flags | 0x800)  # SHF_COMPRESSED
    return bytes(image)


def test_compressed_vector_table_is_read_in_the_child_and_only_its_table() -> None:
    """F9: a .vectors section that inflates to 64 MiB; the server process used to inflate
    it whole (2 GB from a 1.9 MB ELF as filed)."""
    from mcuprof.s12z import load_firmware
    from mcuprof.s12z.sample import demo_elf

    want = load_firmware(demo_elf())
    elf = _with_compressed(".vectors", 64 << 20)
    assert len(elf) < 1 << 20
    tracemalloc.start()
    try:
        fw = load_firmware(elf)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"the server process held {peak:,} bytes"
    assert fw.vectors == want.vectors and len(fw.vectors) == 128
    assert fw.vector_base == want.vector_base and fw.warnings == want.warnings


def test_section_claiming_more_than_the_cap_is_refused_with_one_line() -> None:
    from mcuprof.errors import UserError
    from mcuprof.s12z import load_firmware
    from mcuprof.symbols.elfparse import MAX_SECTION_BYTES

    elf = _with_compressed(".text", 4096, claim=MAX_SECTION_BYTES + 1)
    with pytest.raises(UserError) as err:
        load_firmware(elf, name="big.elf")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("big.elf: not a readable ELF")
    assert f"{MAX_SECTION_BYTES + 1:,} bytes uncompressed" in msg
