"""Golden captures and the hashes of every command's output on them.

The hashes in ``golden_outputs.json`` were taken before the performance work (issue
13); a change to any output must be deliberate, with the reason in the commit.
``python -m tests.export.golden --write`` records the current outputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import sys
from pathlib import Path

import numpy as np

from mcuprof.cli import main
from mcuprof.export import FORMATS
from mcuprof.paths import default_elf
from mcuprof.profile.synth import addresses, generate
from mcuprof.protocol import Metadata, encode_metadata, encode_profile_data
from mcuprof.symbols import SymbolTable

HASHES = Path(__file__).with_name("golden_outputs.json")
CAPTURED = 1_700_000_000  # the capture files' modification time (2023-11-14 22:13:20 UTC)


def _packets(recs: np.ndarray, size: int) -> bytes:
    return b"".join(encode_profile_data(recs[i : i + size]) for i in range(0, len(recs), size))


def captures(elf: Path) -> dict[str, bytes]:
    """name -> capture bytes: regular (wrapping timer, ISRs, recursion), a 3 MHz timer
    (fractional µs), a target that resets every packet, and one with corrupt bytes."""
    table = SymbolTable.from_elf(elf)
    ranges = [(f.start, f.end) for f in table.functions]
    bid = table.build_id or 0
    out: dict[str, bytes] = {}
    rng = random.Random(13)
    trace = generate(
        rng,
        len(ranges),
        3000,
        start_tick=(1 << 32) - 5000,
        isr_funcs=(1,),
        isr_rate=0.2,
        recursive_rate=0.1,
    )
    recs = trace.records(addresses(rng, trace, ranges, style="mixed", thumb=True))
    meta = encode_metadata(Metadata(168_000_000, 1_000_000, bid, "golden"))
    out["regular"] = meta + _packets(recs, 50)
    meta3 = encode_metadata(Metadata(48_000_000, 3_000_000, bid, "golden-3mhz"))
    out["timer3mhz"] = meta3 + _packets(recs, 200)
    trace = generate(random.Random(14), len(ranges), 20, max_depth=3)
    small = trace.records(addresses(random.Random(15), trace, ranges))
    out["reset"] = meta + b"".join(encode_profile_data(small) for _ in range(300))
    data = bytearray(out["regular"])
    noise = random.Random(16)
    for _ in range(40):
        at = noise.randrange(len(data))
        data[at] ^= 1 << noise.randrange(8)
    out["corrupt"] = bytes(data)
    return out


def commands(capture: Path, elf: Path) -> dict[str, list[str]]:
    cmds = {
        "info": ["info", str(capture), "--elf", str(elf)],
        "info-json": ["info", str(capture), "--json"],
    }
    for fmt in FORMATS:
        cmds[fmt] = ["export", str(capture), "--elf", str(elf), "-f", fmt]
    cmds["folded-noelf"] = ["export", str(capture), "-f", "folded"]
    cmds["speedscope-noelf"] = ["export", str(capture), "-f", "speedscope"]
    return cmds


def run(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        rc = main(argv)
    assert rc == 0, argv
    return buf.getvalue()


def outputs(tmp: Path) -> dict[str, dict[str, str]]:
    """case -> command -> sha256 of its standard output (paths replaced by the case name)."""
    elf = default_elf()
    result: dict[str, dict[str, str]] = {}
    for name, data in captures(elf).items():
        path = tmp / f"{name}.bin"
        path.write_bytes(data)
        # The SVG's subtitle gives the capture file's time: the same on every run.
        os.utime(path, (CAPTURED, CAPTURED))
        result[name] = {}
        for cmd, argv in commands(path, elf).items():
            text = run(argv).replace(str(path), name)
            result[name][cmd] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return result


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        HASHES.write_text(json.dumps(outputs(Path(d)), indent=1, sort_keys=True) + "\n")
