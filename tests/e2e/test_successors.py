"""The successors of FOCAL++ run end to end at the tiny scale, through the FOCAL trainer's
data, loop, meta-test and run directory; an objective's own networks learn and resume."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from registry import RecipeError
from tests.conftest import run_row

LOSSES = {
    "corro": {"loss_contrastive", "corro_positive_rank", "loss_q", "loss_policy"},
    "corro_model": {"loss_contrastive", "loss_outcome_model", "outcome_model_mse", "loss_q"},
    "csro": {"loss_dml", "loss_club", "loss_club_estimator", "loss_q", "loss_policy"},
    "unicorn": {"loss_dml", "loss_reconstruction", "reconstruction_nll", "loss_q"},
    "unicorn_sup": {"loss_dml", "loss_classifier", "classifier_accuracy", "loss_q"},
}


@pytest.mark.parametrize("env", ["sparse_point_robot", "point_robot_wind"])
@pytest.mark.parametrize("recipe", sorted(LOSSES))
def test_successor_runs(recipe, env, tiny_data, tmp_path):
    _, untrained = run_row(f"{recipe}.gin", env, tiny_data, tmp_path / "built", train=False)
    before = [p.detach().clone() for p in untrained.objective.parameters()]
    metrics, algorithm = run_row(f"{recipe}.gin", env, tiny_data, tmp_path / "run")
    records = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    train = [r for r in map(json.loads, records) if r["kind"] == "train"]
    assert LOSSES[recipe] <= set(train[-1])
    evaluation = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert len(evaluation["per_task_return"]) == len(algorithm.data.test_tasks)
    assert metrics["headline"].startswith("test ")
    # the objective's own networks (CLUB's estimator, the decoder, the classifier) trained
    after = list(algorithm.objective.parameters())
    assert all(not torch.equal(a, b) for a, b in zip(after, before, strict=True))
    assert before or recipe == "corro"  # CORRO's objective has no network of its own


def test_an_objective_with_networks_resumes_exactly(tiny_data, tmp_path):
    """Steps 1-3, a checkpoint, a fresh trainer loaded from it for steps 4-6: the same
    weights (encoder, CLUB estimator, agent) as six uninterrupted steps."""

    def trainer(name):
        _, algorithm = run_row("csro.gin", "sparse_point_robot", tiny_data, tmp_path / name,
                               train=False)  # fmt: skip
        return algorithm

    whole = trainer("whole")
    for _ in range(6):
        whole.train_step()
        whole.step += 1
    first = trainer("first")
    for _ in range(3):
        first.train_step()
        first.step += 1
    state = first.state()
    second = trainer("second")
    second.load_state(state)
    for _ in range(3):
        second.train_step()
        second.step += 1
    for a, b in zip(whole.parts_state().items(), second.parts_state().items(), strict=True):
        if isinstance(a[1], dict) and a[0] != "optimizers":
            for key in a[1]:
                assert torch.equal(a[1][key], b[1][key]), (a[0], key)


@pytest.mark.parametrize("env", ["sparse_point_robot", "point_robot_wind"])
def test_relabeled_transitions_are_the_familys(env, tiny_data, tmp_path):
    """A context relabeled with its own tasks gives back the rewards and next states it holds
    (sparse rewards on the sparse family); with other tasks, their reward functions' values
    and, where tasks differ in dynamics (the wind), their dynamics' next states."""
    _, trainer = run_row("corro.gin", env, tiny_data, tmp_path / "run", train=False)
    tasks = torch.tensor([0, 1, 2])
    context = trainer.train.sample(tasks, 8, sparse=trainer.layout.sparse)
    own = trainer.relabel_transitions(context, tasks[:, None].expand(3, 8))
    assert torch.allclose(own.reward, context.reward, atol=1e-5)
    assert torch.allclose(own.next_obs, context.next_obs, atol=1e-5)
    assert torch.equal(own.obs, context.obs) and torch.equal(own.action, context.action)
    other = trainer.relabel_transitions(context, tasks.roll(1)[:, None].expand(3, 8))
    family = trainer.family
    vectors = family.task_vectors([family.all_tasks()[int(i)] for i in trainer.train.task_ids])
    vectors = vectors[tasks.roll(1).numpy()][:, None, :]
    obs, action = context.obs.numpy(), context.action.numpy()
    next_obs = context.next_obs.numpy()
    if family.task_changes == "dynamics":
        next_obs = family.dynamics(obs, action, vectors)
        assert not np.allclose(next_obs, context.next_obs.numpy(), atol=1e-4)  # winds differ
    reward = family.sparse_reward if trainer.layout.sparse else family.reward
    assert np.allclose(other.next_obs.numpy(), next_obs, atol=1e-5)
    assert np.allclose(other.reward.numpy(), reward(obs, action, next_obs, vectors), atol=1e-5)


def test_corro_with_relabeled_negatives_runs(tiny_data, tmp_path):
    metrics, _ = run_row(
        "corro.gin",
        "sparse_point_robot",
        tiny_data,
        tmp_path / "run",
        bindings=("corro.outcome = 'relabel'",),
    )
    assert metrics["headline"].startswith("test ")


def test_relabeling_refuses_dynamics_without_a_closed_form(tiny_data, tmp_path):
    """Walker's tasks differ in body parameters: another task's next state is unknown, so
    relabeling stops with what to use instead rather than return negatives equal to anchors."""
    _, trainer = run_row("corro.gin", "walker_params", tiny_data, tmp_path / "run", train=False)
    tasks = torch.tensor([0, 1])
    context = trainer.train.sample(tasks, 4)
    with pytest.raises(RecipeError, match=r"no closed form.*corro\.outcome = 'model'"):
        trainer.relabel_transitions(context, tasks.roll(1)[:, None].expand(2, 4))


def test_corro_with_a_learned_outcome_model_runs_on_walker(tiny_data, tmp_path):
    """Where relabeling cannot serve (Walker's bodies), CORRO's own generator does: the CVAE
    of (s′, r) given (s, a) learns beside the encoder and its negatives feed the loss."""
    _, untrained = run_row(
        "corro_model.gin", "walker_params", tiny_data, tmp_path / "built", train=False
    )
    before = [p.detach().clone() for p in untrained.objective.model.parameters()]
    metrics, algorithm = run_row("corro_model.gin", "walker_params", tiny_data, tmp_path / "run")
    records = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    train = [r for r in map(json.loads, records) if r["kind"] == "train"]
    assert LOSSES["corro_model"] <= set(train[-1])
    assert train[-1]["outcome_model_mse"] < train[0]["outcome_model_mse"]
    after = list(algorithm.objective.model.parameters())
    assert all(not torch.equal(a, b) for a, b in zip(after, before, strict=True))
    assert metrics["headline"].startswith("test ")
