"""The committed sample is what scripts/make-s12z-sample.py writes, and pyelftools and the
symbol reader see an S12Z ELF in it."""

from __future__ import annotations

import io

from elftools.elf.elffile import ELFFile

from mcuprof.paths import sample_elfs_dir
from mcuprof.protocol.s12z import decode_trace
from mcuprof.s12z import load_firmware
from mcuprof.s12z.elfwrite import EM_S12Z
from mcuprof.s12z.flow import encode_flow, flow_of
from mcuprof.s12z.sample import FUNCTIONS, VECTORS, demo_elf, demo_flow, layout


def test_committed_sample_matches_its_generator() -> None:
    folder = sample_elfs_dir()
    assert (folder / "s12z-demo.elf").read_bytes() == demo_elf()
    assert (folder / "s12z-demo.trace").read_bytes() == encode_flow(demo_flow())


def test_sample_elf_is_s12z_with_symbols_and_vectors() -> None:
    data = demo_elf()
    elf = ELFFile(io.BytesIO(data))
    assert elf.header["e_machine"] in (EM_S12Z, "EM_OPENRISC")  # 92 is shared in tool tables
    assert not elf.little_endian and elf.elfclass == 32
    assert {s.name for s in elf.iter_sections()} >= {".text", ".vectors", ".symtab"}
    fw = load_firmware(data)
    demo = layout()
    assert [f.name for f in fw.symbols.functions] == [name for name, _ in FUNCTIONS]
    assert fw.vector_base == 0xFFFE00
    for offset, name in VECTORS.items():
        assert fw.vectors[offset] == demo[name]
        assert fw.function_name(fw.isr_of(offset // 2)) == name
    # 24-bit addresses resolve by range, like return addresses inside a body.
    assert fw.function_name(demo["main"] + 0x17) == "main"
    assert fw.function_name(0x123456) == "0x123456"


def test_sample_trace_round_trips() -> None:
    steps = demo_flow()
    events, stats = decode_trace(encode_flow(steps))
    assert flow_of(events) == steps and stats.tbovf == 1
