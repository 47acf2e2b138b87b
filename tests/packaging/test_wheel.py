"""The installed wheel, not the checkout, must serve the dashboard: page, modules,
Plotly.js and the sample ELF all travel inside the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

from tests.helpers import running_serve

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_serves_the_dashboard_outside_the_checkout(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    (wheel,) = dist.glob("mcuprof-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "mcuprof/_frontend/index.html" in names
    assert "mcuprof/_sample_elfs/mcuprof-demo.elf" in names
    assert any(n.startswith("mcuprof/_frontend/js/") for n in names)

    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    # PYTHONPATH comes before the editable install's path entry, so this imports the
    # wheel's copy; the working directory is outside the checkout.
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import mcuprof.paths as p; print(p.__file__, p.frontend_dir())"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(site)) and str(ROOT) not in where

    with running_serve(tmp_path / "data", env=env, cwd=tmp_path, ready=bool) as served:
        with urllib.request.urlopen(f"{served.url}api/state", timeout=5) as r:
            state = json.loads(r.read())
        with urllib.request.urlopen(served.url, timeout=5) as r:
            page = r.read().decode()
        assert '<script type="module" src="/static/js/main.js">' in page
        # The views' modules and the flame component came inside the wheel.
        with urllib.request.urlopen(f"{served.url}static/js/flamecanvas.js", timeout=5) as r:
            assert b"class FlameCanvas" in r.read()
        # The default device runs the sample ELF that came inside the wheel.
        assert "mcuprof-demo.elf" in json.dumps(state)
