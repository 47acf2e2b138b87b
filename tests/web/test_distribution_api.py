"""/api/distribution and /api/distribution/bucket on the simulated device's capture: the
Functions row's percentiles, the histogram that counts every call, a bucket's calls."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from .conftest import ORIGIN, capture


def test_distribution_of_the_busiest_function(client: TestClient) -> None:
    capture(client, 400)
    assert client.post("/api/stop", headers={"Origin": ORIGIN}).status_code == 200
    funcs = client.get("/api/functions").json()["functions"]
    row = max(funcs, key=lambda f: f["calls"])
    assert row["min_us"] <= row["p50_us"] <= row["p90_us"] <= row["p99_us"] <= row["max_us"]
    d = client.get("/api/distribution", params={"fid": row["fid"]}).json()
    assert d["calls"] == row["calls"] and sum(d["buckets"]["count"]) == row["calls"]
    for key in ("p50_us", "p99_us", "max_us"):
        assert d[key] == pytest.approx(row[key])
    mids, lo, hi = (np.array(d["buckets"][k]) for k in ("mid_us", "lo_us", "hi_us"))
    assert np.all((lo <= mids) & (mids <= hi)) and d["bucket_error_pct"] < 1
    k = d["buckets"]["k"][-1]  # the slowest calls' bucket
    got = client.get("/api/distribution/bucket", params={"fid": row["fid"], "k": k}).json()
    assert got["count"] == d["buckets"]["count"][-1]
    start, end = got["calls"][0]
    assert end - start == pytest.approx(d["max_us"], rel=0.02)
    missing = client.get("/api/distribution", params={"fid": 9_999_999})
    assert missing.status_code in (400, 404, 422) and "no calls" in missing.text
