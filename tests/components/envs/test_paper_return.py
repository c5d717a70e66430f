"""The paper-comparable sparse return and the oracle ceilings of the point robots."""

from __future__ import annotations

import numpy as np
import pytest

import components.envs  # noqa: F401  (registers the families)
from components.envs.sparse import inside_bonus, paper_sparsify, sparsify
from components.evaluation.ceiling import ceiling
from components.evaluation.episodes import rollout
from registry import get


def test_inside_bonus_pays_one_minus_distance_within_the_radius():
    r = np.array([-1.0, -0.3, -0.2, -0.15, 0.0])
    np.testing.assert_allclose(inside_bonus(r, -0.2), [0.0, 0.0, 0.8, 0.85, 1.0])
    np.testing.assert_allclose(sparsify(r, -0.2), [0.0, 0.0, 0.0, 0.25, 1.0])
    np.testing.assert_allclose(paper_sparsify(r, -0.2, "appendix"), sparsify(r, -0.2))
    assert paper_sparsify(r, None, "inside_bonus") is r  # dense families: unchanged
    with pytest.raises(ValueError, match="negative"):
        inside_bonus(r, 3.0)
    with pytest.raises(ValueError, match="unknown sparse formula"):
        paper_sparsify(r, -0.2, "pearl")


def test_a_hand_computed_trajectory_under_both_formulas():
    """Goal (0, 0.95); ten steps straight up, then ten standing still at (0, 1). Distances
    after steps 1..20: 0.85, ..., 0.15 (step 8), 0.05 (steps 9..20). Inside radius 0.2 from
    step 8: the paper-comparable formula pays 1 − d, 0.85 + 12 × 0.95 = 12.25; the appendix
    formula 1 − 5d, 0.25 + 12 × 0.75 = 9.25."""
    family = get("env", "sparse_point_robot")(seed=0)
    assert family.paper_formula == "inside_bonus"
    env = family.make_batched([{"goal": [0.0, 0.95]}])
    steps = iter([np.array([[0.0, 1.0]])] * 10 + [np.zeros((1, 2))] * 10)
    returns = rollout(family, env, lambda obs: next(steps))
    assert returns.paper[0] == pytest.approx(12.25)
    assert returns.sparse[0] == pytest.approx(9.25)
    distances = [0.95 - 0.1 * k for k in range(1, 10)] + [0.05] * 11
    assert returns.dense[0] == pytest.approx(-sum(distances))


def test_ceilings_of_the_shipped_split():
    """DECISIONS §1: the appendix formula's ceiling on the seed-0 test split is 12.62, below the
    paper's FOCAL++ 12.96; the paper-comparable formula's is 13.49."""
    family = get("env", "sparse_point_robot")(seed=0)
    _, test = family.split_indices()
    best = ceiling(family, test)
    assert best.sparse.mean() == pytest.approx(12.62, abs=0.005)
    assert best.paper.mean() == pytest.approx(13.48, abs=0.01)
    everything = ceiling(family, range(100)).means()
    assert everything["sparse"] == pytest.approx(12.47, abs=0.005)
    assert get("env", "point_robot_wind")(seed=0).paper_formula == "appendix"
    assert ceiling(get("env", "sparse_cheetah_vel")(seed=0), [0]) is None  # no oracle known


@pytest.mark.parametrize("env", ["sparse_point_robot", "point_robot_wind"])
def test_no_perturbed_oracle_beats_the_ceiling(env):
    """The oracle is optimal (it stays at the nearest reachable point after every step): random
    perturbations of its actions never score more, under any of the three formulas."""
    family = get("env", env)(seed=0)
    _, test = family.split_indices()
    tasks = [family.all_tasks()[i] for i in test]
    vectors = family.task_vectors(tasks)
    best = ceiling(family, test)
    rng = np.random.default_rng(0)
    for scale in (0.05, 0.3, 1.0):
        env_ = family.make_batched(tasks)
        noisy = rollout(
            family,
            env_,
            lambda obs, s=scale: (
                family.oracle_action(obs, vectors) + rng.normal(scale=s, size=(len(tasks), 2))
            ),
        )
        assert (noisy.dense <= best.dense + 1e-9).all()
        if best.paper is not None:
            assert (noisy.paper <= best.paper + 1e-9).all()
            assert (noisy.sparse <= best.sparse + 1e-9).all()


def test_task_parameters_in_their_units():
    """What the task-vector read-out must recover: goal angles in degrees, target velocities in
    m/s, winds, and the walker's multiplier exponents in [−3, 3]."""
    robot = get("env", "sparse_point_robot")(seed=0)
    angles = robot.task_parameters(robot.all_tasks())
    assert angles.names == ("goal angle",) and angles.unit == "°"
    np.testing.assert_allclose(np.sort(angles.values[:, 0]), np.linspace(0, 180, 100), atol=1e-9)
    cheetah = get("env", "sparse_cheetah_vel")(seed=0)
    velocity = cheetah.task_parameters(cheetah.all_tasks())
    assert velocity.unit == "m/s" and (velocity.values >= 0).all() and (velocity.values <= 3).all()
    walker = get("env", "walker_params")(seed=0)
    exponents = walker.task_parameters(walker.all_tasks()[:3])
    assert exponents.values.shape == (3, 65) and len(exponents.names) == 65
    assert (np.abs(exponents.values) <= 3 + 1e-9).all() and exponents.values.std() > 1
    wind = get("env", "point_robot_wind")(seed=0)
    assert wind.task_parameters(wind.all_tasks()).names == ("wind x", "wind y")
