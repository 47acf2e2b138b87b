"""Every command's output on the golden captures is byte-identical to the recorded one."""

from __future__ import annotations

import json

import pytest

from tests.export.golden import HASHES, outputs


@pytest.fixture(scope="module")
def current(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    return outputs(tmp_path_factory.mktemp("golden"))


def test_outputs_match_the_recorded_ones(current) -> None:
    expected = json.loads(HASHES.read_text())
    assert set(current) == set(expected)
    changed = sorted(
        f"{case}/{cmd}"
        for case, cmds in expected.items()
        for cmd, digest in cmds.items()
        if current[case].get(cmd) != digest
    )
    assert changed == []
