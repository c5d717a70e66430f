from __future__ import annotations

import json

from tests.conftest import cli


def test_quick_bench_writes_well_formed_json(tmp_path):
    out = tmp_path / "bench.json"
    r = cli("bench", "--quick", "--json", str(out))
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    assert report["quick"] is True and report["machine"]["cpus"] >= 1
    rows = {row["family"]: row for row in report["sections"]["env"]}
    assert len(rows) >= 6
    for row in rows.values():
        assert row["single_steps_per_s"] > 0 and row["batched_sync_steps_per_s"] > 0
    assert "batched_async_steps_per_s" in rows["walker_params"]
    (collect,) = report["sections"]["collect"]
    assert collect["tasks"] == 100 and collect["env_steps_per_task"] == 60
    assert collect["batched_seconds"] > 0 and len(collect["sequential_seconds_measured"]) == 2
    assert {"random_mean_sparse_return", "expert_mean_return"} <= set(collect)
