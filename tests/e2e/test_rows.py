"""The row recipes of Table 1 run end to end on every environment column at the tiny scale:
dataset build, training, meta-test, run directory."""

from __future__ import annotations

import json

import pytest

from components.reports.paper import ROWS
from registry.columns import columns
from tests.conftest import run_row

# Every row on the point-robot columns; on the MuJoCo columns FOCAL and FOCAL++ (the other
# rows differ from them only in encoder and objective parts, which do not see the family). The
# Meta-World columns differ from each other in the family only (each of the 50 steps in the
# contract test): FOCAL++ runs on one in tests/components/envs/test_ml1.py.
POINT_ROBOTS = {"sparse_point_robot", "point_robot_wind", "sparse_point_robot_relabeled"}
CASES = [
    (row, env)
    for env in columns("envs")
    for row in ROWS
    if (env in POINT_ROBOTS or row in ("focal", "focalpp")) and not env.startswith("ml1_")
]


@pytest.mark.parametrize(("row", "env"), CASES)
def test_row_runs_on_every_env(row, env, tiny_data, tmp_path):
    metrics, algorithm = run_row(f"{row}.gin", env, tiny_data, tmp_path / "run")
    run_dir = tmp_path / "run"
    assert {"checkpoint.pt", "eval.json", "metrics.jsonl", "summary.md"} <= {
        p.name for p in run_dir.iterdir()
    }
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "eval"] == [3, 6]
    train = [r for r in records if r["kind"] == "train"]
    assert train and all("loss_q" in r and "loss_policy" in r for r in train)
    assert any(
        k.startswith("loss_") and k not in ("loss_q", "loss_v", "loss_policy") for k in train[-1]
    )  # the representation objective is logged too
    evaluation = json.loads((run_dir / "eval.json").read_text())
    scored = algorithm.loop.meta_test.max_tasks or len(algorithm.data.test_tasks)  # 0: all
    assert len(evaluation["per_task_return"]) == scored
    assert metrics["headline"].startswith("test ")
    assert (algorithm.family.goal_radius is not None) == ("sparse_return_mean" in evaluation)
