"""The reference rows: z given instead of inferred (the floor and the ceiling of task
inference), trained with FOCAL's learner at the tiny scale."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from components.algorithms.reference import ReferenceVectors
from registry import RecipeError, get
from tests.conftest import run_row


def test_oracle_vectors_are_standardised_task_parameters_padded_to_z():
    family = get("env", "sparse_point_robot")(seed=0)
    train, test = family.split_indices()
    oracle = ReferenceVectors("oracle", family, train, test, 5, torch.device("cpu"))
    goals = family.task_parameters(family.all_tasks()).values  # [N, P]
    p = goals.shape[1]
    varying = goals[train].std(0) > 0  # a parameter every task shares reads 0
    z = oracle.train.numpy()
    assert varying.any() and np.allclose(z[:, :p].mean(0), 0, atol=1e-6)
    assert np.allclose(z[:, :p][:, varying].std(0), 1) and not z[:, :p][:, ~varying].any()
    assert not z[:, p:].any() and oracle.test.shape == (len(test), 5)
    mean, std = goals[train].mean(0), np.where(varying, goals[train].std(0), 1.0)
    assert np.allclose(oracle.test[:, :p].numpy(), (goals[test] - mean) / std, atol=1e-5)
    none = ReferenceVectors("none", family, train, test, 5, torch.device("cpu"))
    assert not none.train.any() and not none.test.any()
    walker = get("env", "walker_params")(seed=0)  # 65 parameters per task
    with pytest.raises(RecipeError, match=r"65 parameters, more than sizes\.latent_dim = 5"):
        ReferenceVectors("oracle", walker, *walker.split_indices(), 5, torch.device("cpu"))
    with pytest.raises(RecipeError, match=r"expected one of \['context', 'none', 'oracle'\]"):
        ReferenceVectors("oracel", family, train, test, 5, torch.device("cpu"))


@pytest.mark.parametrize("recipe", ["reference_no_context.gin", "reference_oracle.gin"])
def test_a_reference_row_trains_the_agent_alone(recipe, tiny_data, tmp_path):
    _, algorithm = run_row(recipe, "sparse_point_robot", tiny_data, tmp_path / "run", train=False)
    encoder = {k: v.clone() for k, v in algorithm.encoder.state_dict().items()}
    agent = {k: v.clone() for k, v in algorithm.agent.state_dict().items()}
    algorithm.run()
    assert all(torch.equal(v, algorithm.encoder.state_dict()[k]) for k, v in encoder.items())
    assert any(not torch.equal(v, algorithm.agent.state_dict()[k]) for k, v in agent.items())
    evaluation = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert len(evaluation["per_task_return"]) == len(algorithm.data.test_tasks)


def test_the_task_vector_analysis_measures_the_vectors_a_reference_row_used(tiny_data, tmp_path):
    """Not its encoder's (built, never trained): the oracle's vectors read the task out exactly,
    z = 0 reads out nothing (the training tasks' mean, whatever the test task)."""
    from components.evaluation.task_vectors import TaskVectorAnalysis

    errors = {}
    for recipe in ("reference_no_context.gin", "reference_oracle.gin"):
        run_dir = tmp_path / recipe
        _, trained = run_row(recipe, "sparse_point_robot", tiny_data, run_dir, train=False)
        record = TaskVectorAnalysis(draws=2, context_size=8)(trained, tmp_path)
        errors[recipe] = record["decoding_error"]
    family = trained.family
    train, test = family.split_indices()
    goals = family.task_parameters(family.all_tasks()).values
    mean_guess = float(np.linalg.norm(goals[test] - goals[train].mean(0), axis=-1).mean())
    assert errors["reference_oracle.gin"] < 1e-3
    assert errors["reference_no_context.gin"] == pytest.approx(mean_guess, rel=0.05)
