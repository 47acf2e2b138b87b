"""What can be checked of the Docker files without a Docker engine: their shape, the
paths they copy, and that their commands parse and pass mcuprof's own checks."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from mcuprof.cli import build_parser
from mcuprof.commands.serve import build_settings

ROOT = Path(__file__).resolve().parents[2]


def _defaults(text: str) -> str:
    """Compose interpolation with every variable unset: ${VAR:-default} -> default."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", text)


def test_compose_serves_on_loopback_with_the_serial_device(tmp_path) -> None:
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    svc = doc["services"]["mcuprof"]
    assert svc["build"] == "."
    assert svc["network_mode"] == "host"
    assert "ports" not in svc  # host networking; the server itself binds 127.0.0.1
    devices = [_defaults(d) for d in svc["devices"]]
    assert devices == ["/dev/ttyACM0:/dev/ttyACM0"]
    assert [_defaults(g) for g in svc["group_add"]] == ["dialout"]
    assert "mcuprof-data" in doc["volumes"]
    assert svc["volumes"] == ["mcuprof-data:/data"]
    command = [_defaults(str(c)) for c in svc["command"]]
    assert command[:2] == ["mcuprof", "serve"]
    args = build_parser().parse_args(command[1:])
    assert args.host == "127.0.0.1" and args.http_port == 8000 and args.port == "/dev/ttyACM0"
    assert not args.allow_remote


def test_dockerfile_copies_what_exists_and_runs_serve(tmp_path) -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert text.startswith("#") and "\nFROM python:3.11" in text
    for line in text.splitlines():
        if line.startswith("COPY "):
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), src
    cmd = re.search(r"^CMD (\[.*\])$", text, re.M)
    assert cmd
    argv = yaml.safe_load(cmd.group(1))  # a JSON array is YAML too
    assert argv[:2] == ["mcuprof", "serve"]
    args = build_parser().parse_args([*argv[1:], "--data-dir", str(tmp_path)])
    settings = build_settings(args)
    assert settings.host == "127.0.0.1" and settings.http_port == 8000
    assert settings.simulated and settings.token is None
    assert "USER mcuprof" in text and "dialout" in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored
    assert "RUN pip install . " in text  # a wheel install, as users get it, not editable


def test_compose_team_profile_uses_a_loopback_postgres(tmp_path) -> None:
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    pg, team = doc["services"]["postgres"], doc["services"]["mcuprof-team"]
    assert pg["profiles"] == team["profiles"] == ["team"]
    assert "profiles" not in doc["services"]["mcuprof"]  # the default stays SQLite + files
    assert [_defaults(p) for p in pg["ports"]] == ["127.0.0.1:5432:5432"]
    url = _defaults(team["environment"]["MCUPROF_STORE"])
    assert url == "postgresql://mcuprof@127.0.0.1:5432/mcuprof"  # the password: PGPASSWORD
    args = build_parser().parse_args([_defaults(str(c)) for c in team["command"]][1:])
    assert args.command == "serve" and args.host == "127.0.0.1" and not args.allow_remote
