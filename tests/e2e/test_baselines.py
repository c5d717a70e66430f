"""The baselines (Batch PEARL, Contextual BCQ, MBML) run end to end at the tiny scale on a
sparse family and a dynamics point robot (MBML also on a MuJoCo dynamics family), through the
FOCAL trainer's data, loop, meta-test and run directory; MBML's two-phase state resumes
exactly."""

from __future__ import annotations

import json

import pytest
import torch

from tests.conftest import run_row

ENVS = ["sparse_point_robot", "point_robot_wind", "walker_params"]
LOSSES = {
    "batch_pearl": {"loss_kl", "loss_q", "loss_v", "loss_policy"},
    "contextual_bcq": {"loss_vae", "loss_q", "loss_actor"},
    "mbml": {"loss_triplet", "loss_vae", "loss_q_distill", "loss_actor_distill"},
}


# Every baseline on both point robots; MBML, whose transition models and per-task teachers
# are the parts that see the family, also on a MuJoCo dynamics family and on a family with
# only two training tasks (its meta-batch is then both).
CASES = [(r, e) for r in sorted(LOSSES) for e in ENVS if e != "walker_params" or r == "mbml"]
CASES.append(("mbml", "sparse_cheetah_fwd_back"))


@pytest.mark.parametrize(("recipe", "env"), CASES)
def test_baseline_runs(recipe, env, tiny_data, tmp_path):
    metrics, algorithm = run_row(f"{recipe}.gin", env, tiny_data, tmp_path / "run")
    run_dir = tmp_path / "run"
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["kind"] == "train"]
    evals = [r["step"] for r in records if r["kind"] == "eval"]
    assert LOSSES[recipe] <= set(train[-1])
    if recipe == "mbml":  # tiny: 4 teacher steps, then the student's 6 with a test after 3
        assert evals == [7, 10]
        teacher = {"loss_q_teacher", "loss_vae_teacher", "loss_reward_model"}
        assert teacher <= set(train[0]) and not teacher & set(train[-1])
        dynamics = algorithm.family.task_changes == "dynamics"
        assert ("loss_transition_model" in train[0]) == dynamics
    else:
        assert evals == [3, 6]
    evaluation = json.loads((run_dir / "eval.json").read_text())
    assert len(evaluation["per_task_return"]) == len(algorithm.data.test_tasks)
    assert metrics["headline"].startswith("test ")


def test_mbml_resumes_exactly_across_its_phases(tiny_data, tmp_path):
    """Steps 1-5 (teachers, then the student), a checkpoint, a fresh trainer loaded from it
    for steps 6-10: the same weights as ten uninterrupted steps."""

    def trainer(name):
        _, algorithm = run_row(
            "mbml.gin",
            "point_robot_wind",
            tiny_data,
            tmp_path / name,
            bindings=("loop.steps = 6", "mbml.teacher_steps = 4"),
            train=False,
        )
        return algorithm

    def steps(algorithm, n):
        for _ in range(n):
            algorithm.train_step()
            algorithm.step += 1

    # one trainer at a time: building one seeds the process's global generator
    straight = trainer("straight")
    steps(straight, 10)
    first = trainer("first")
    steps(first, 5)
    state = first.state()
    resumed = trainer("resumed")
    resumed.load_state(state)
    steps(resumed, 5)
    for name in ("encoder", "agent", "teachers", "task_models"):
        want, got = getattr(straight, name).state_dict(), getattr(resumed, name).state_dict()
        for key in want:
            torch.testing.assert_close(got[key], want[key], rtol=0, atol=0, msg=f"{name}.{key}")
