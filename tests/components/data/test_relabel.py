from __future__ import annotations

import numpy as np
import pytest

from components.data.store import DatasetError
from components.envs import sparsify
from registry import get
from tests.components.data.conftest import build_tiny


@pytest.fixture(scope="module")
def relabeled(tmp_path_factory):
    return build_tiny(
        tmp_path_factory.mktemp("relabeled"),
        protocol="relabeled",
        extra=["relabeled.pool_size = 500", "sparse_point_robot.goal_radius = -0.5"],
    )


def test_all_tasks_share_the_same_transitions(relabeled):
    q = relabeled.quality("mixed")
    t = q.transitions
    assert t.obs.shape == (100, 500, 2) and q.length.tolist() == [500] * 100
    for field in (t.obs, t.action, t.next_obs):
        assert (field == field[:1]).all()
    assert not (t.reward == t.reward[:1]).all()  # but rewards differ by task


def test_rewards_are_each_tasks_pure_reward_sparsified(relabeled):
    family = get("env", "sparse_point_robot")(seed=0)
    t = relabeled.quality("expert").transitions
    goals = family.task_vectors(relabeled.tasks)  # [K, 2]
    expected = family.reward(
        t.obs.astype(float), t.action, t.next_obs.astype(float), goals[:, None]
    )
    np.testing.assert_allclose(t.reward, expected, atol=1e-6)
    np.testing.assert_allclose(t.sparse_reward, sparsify(expected, -0.5), atol=1e-5)
    assert relabeled.manifest["settings"]["goal_radius"] == -0.5
    assert relabeled.manifest["goal_radius"] == -0.5  # the radius of the stored rewards
    assert 0 < (t.sparse_reward > 0).mean() < 1


def test_dynamics_families_cannot_be_relabeled(tmp_path):
    with pytest.raises(DatasetError, match="tasks differ in dynamics"):
        build_tiny(tmp_path, family="point_robot_wind", protocol="relabeled")


def test_a_family_scoring_with_another_radius_is_refused(tmp_path):
    """The stored sparse rewards and the meta-test must use one radius (the manifest's)."""
    with pytest.raises(DatasetError, match=r"relabeled.goal_radius = -0.5, but .* radius -0.2"):
        build_tiny(tmp_path, protocol="relabeled")
    assert not any(p.name == "relabeled-s0" for p in tmp_path.rglob("*"))
