"""Byte-identical outputs against another checkout (issue 23: "every output must stay").

For the three shapes of ``bench/scale.py`` (its capture makers) at ``--records N``, runs
every export format, ``info --json`` and ``compare --json`` (the capture with itself, and
with the next shape's capture, writing ``--diff-folded`` and ``--diff-svg`` too) with this
checkout and with ``--before DIR`` (another checkout's ``backend/`` first on the path, e.g.
``git worktree add /tmp/before-core main``), and compares the outputs byte for byte
(stdout, the written files and the exit status). Prints one line per cell:
``identical`` or ``DIFFERENT`` (with the first differing byte offset); exits 1 if any
cell differs. ``--qs`` adds the QS captures at hand as shapes (QS_CAPTURES: the reference
DPP capture and tests/qs/seq's real and synthetic ones), each taken whole.

Run: .venv/bin/python bench/identical.py --before /tmp/before-core [--records 200k]
     [--shapes regular,reset,unique] [--only compare] [--qs]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcuprof.export import FORMATS
from scale import _count, make_capture

ROOT = Path(__file__).resolve().parents[1]
HERE = str(ROOT / "backend")
QS_CAPTURES = {
    "qs-dpp64": ROOT.parent / "shared/reference/qs/dpp-posix64.bin",
    "qs-dpp32": ROOT / "tests/qs/seq/dpp-posix32.bin",
    "qs-synth": ROOT / "tests/qs/seq/synth.bin",
}


def _run(argv: list[str], backend: str, out_dir: Path) -> dict[str, bytes]:
    """stdout, exit status and every file written into ``out_dir`` by one command."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():
        old.unlink()
    env = dict(os.environ, PYTHONPATH=backend)
    argv = [a.replace("@OUT@", str(out_dir)) for a in argv]
    proc = subprocess.run(
        [sys.executable, "-m", "mcuprof", *argv], capture_output=True, env=env, check=False
    )
    got = {"stdout": proc.stdout, "status": str(proc.returncode).encode()}
    if proc.returncode not in (0, 1):  # 1: compare's gate failed, a real output
        got["stderr"] = proc.stderr
    for f in sorted(out_dir.iterdir()):
        got[f.name] = f.read_bytes()
    return got


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(0, n, 4096):
        if a[i : i + 4096] != b[i : i + 4096]:
            return i + next(j for j in range(4096) if a[i + j] != b[i + j])
    return n


def cells(caps: dict[str, Path]) -> list[tuple[str, str, list[str]]]:
    """(shape, command name, argv) of every cell."""
    shapes = list(caps)
    out = []
    for k, shape in enumerate(shapes):
        cap = str(caps[shape])
        for fmt in FORMATS:
            out.append((shape, f"export {fmt}", ["export", cap, "-f", fmt, "-o", "@OUT@/out"]))
        out.append((shape, "info --json", ["info", cap, "--json"]))
        out.append((shape, "compare --json (itself)", ["compare", cap, cap, "--json"]))
        other = shapes[(k + 1) % len(shapes)]
        if other != shape:
            diff = ["--diff-folded", "@OUT@/d.folded", "--diff-svg", "@OUT@/d.svg"]
            argv = ["compare", cap, str(caps[other]), "--json", *diff]
            out.append((shape, f"compare --json (vs {other})", argv))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="a checkout to compare with (its backend/)")
    ap.add_argument("--records", default="200k", help="records per capture (200k, 1.5M...)")
    ap.add_argument("--shapes", default="regular,reset,unique")
    ap.add_argument("--only", default="", help="run the cells whose name contains this")
    ap.add_argument("--qs", action="store_true", help="add the QS captures (QS_CAPTURES)")
    args = ap.parse_args()
    n = _count(args.records)
    before = str(Path(args.before, "backend").resolve())
    differ = 0
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        caps = {}
        for shape in args.shapes.split(","):
            caps[shape] = tmp / f"{shape}-{n}.bin"
            make_capture(caps[shape], shape, n)
        if args.qs:
            caps.update((k, p) for k, p in QS_CAPTURES.items() if p.exists())
        todo = [c for c in cells(caps) if args.only in c[1]]
        for shape, name, argv in todo:
            old = _run(argv, before, tmp / "before")
            new = _run(argv, HERE, tmp / "after")
            bad = [
                f"{k} at byte {_first_difference(old.get(k, b''), new.get(k, b''))}"
                for k in sorted(set(old) | set(new))
                if old.get(k) != new.get(k)
            ]
            differ += bool(bad)
            size = sum(len(v) for v in new.values())
            verdict = f"DIFFERENT ({'; '.join(bad)})" if bad else "identical"
            count = "whole" if shape in QS_CAPTURES else f"{n:,}"
            print(f"{count} {shape:8} {name:28} {size:>12,} B  {verdict}", flush=True)
    print(f"{differ} of {len(todo)} cells differ")
    raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
