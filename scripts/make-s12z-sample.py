"""Regenerate the S12Z sample: sample_elfs/s12z-demo.elf and sample_elfs/s12z-demo.trace.

Run: .venv/bin/python scripts/make-s12z-sample.py
Both files are deterministic; tests/s12z/test_sample.py checks they match this script.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcuprof.s12z.flow import encode_flow
from mcuprof.s12z.sample import demo_elf, demo_flow

OUT = Path(__file__).resolve().parents[1] / "sample_elfs"


def main() -> int:
    (OUT / "s12z-demo.elf").write_bytes(demo_elf())
    (OUT / "s12z-demo.trace").write_bytes(encode_flow(demo_flow()))
    print(f"wrote {OUT / 's12z-demo.elf'} and {OUT / 's12z-demo.trace'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
