"""Meta-World ML1 families on the real `metaworld` package: names, ML1's task split, the
hidden goal, the horizon, the success flag, the scripted data and the normalised score."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

import components.envs  # noqa: F401 (registers the families)
from components.data.build import check_manifest
from components.data.returns import dataset_returns, normalised
from components.data.scripted import UNIFORM, ScriptedCollector
from components.data.store import DatasetError, QualityData, load_dataset
from components.envs.install import mujoco_install_problem
from components.envs.ml1 import (
    ML1_NAMES,
    MetaWorldMissing,
    draw_ml1_tasks,
    family_name,
    goal_kind,
    metaworld_module,
    ml1_family_class,
    ml1_tasks,
)
from components.transitions import Transitions
from registry import FocalppError, UnknownComponentError, get, names
from tests.conftest import run_row


@pytest.fixture(scope="module")
def push():
    return get("env", "ml1_push")(seed=0)


def test_every_ml1_environment_is_a_family():
    import metaworld

    assert tuple(metaworld.ML1.ENV_NAMES) == ML1_NAMES
    assert {family_name(n) for n in ML1_NAMES} <= set(names("env"))
    assert get("env", "ml1_reach_wall").env_name == "reach-wall-v3"


def test_an_unknown_ml1_name_lists_the_available_ones():
    with pytest.raises(UnknownComponentError, match="did you mean: ml1_push"):
        get("env", "ml1_pushh")
    with pytest.raises(FocalppError, match="available: ml1_assembly, ml1_basketball"):
        ml1_family_class("pushh-v3")


def test_ml1_split_is_ml1s_own(push):
    """50 train tasks drawn by ML1 at the seed, 50 test tasks at seed + 1; the stored snapshot
    is what metaworld.ML1 draws."""
    train, test = push.split_indices()
    assert (len(train), len(test)) == (50, 50)
    tasks = push.all_tasks()
    assert not {tuple(tasks[i]["rand_vec"]) for i in train} & {
        tuple(tasks[i]["rand_vec"]) for i in test
    }
    assert ml1_tasks("push-v3", 0) == draw_ml1_tasks("push-v3", 0)


def test_goal_is_hidden_and_episodes_end_by_time_limit(push, make_env):
    env = make_env(push.gym_id, env_name="push-v3", task=push.split_indices()[1][0])
    obs, _ = env.reset(seed=0)
    assert obs.shape == (39,) and not obs[-3:].any()
    for t in range(push.horizon):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert not obs[-3:].any() and not terminated
        assert truncated == (t == push.horizon - 1)
        assert 0.0 <= reward <= 10.0 and isinstance(info["success"], bool)
    assert np.linalg.norm(env.unwrapped.goal()) > 0  # the goal exists, it is just not seen


def test_push_goal_is_hidden_button_press_goal_is_seen(push):
    assert goal_kind(push).hidden
    assert not goal_kind(get("env", "ml1_button_press")(seed=0)).hidden


def test_scripted_expert_succeeds_and_random_actions_do_not(push):
    collector = ScriptedCollector(push, push.horizon)
    try:
        expert = collector.collect([0], 0.1, 1, [0, 0], lambda n: None)
        random = collector.collect([0], UNIFORM, 1, [0, 2], lambda n: None)
    finally:
        collector.close()
    assert expert.success.all() and not random.success.any()
    assert expert.returns[0, 0] > 5 * random.returns[0, 0]
    assert not expert.transitions.obs[..., -3:].any()  # the data keep the goal hidden
    assert expert.transitions.truncated.sum() == 1 and expert.transitions.truncated[0, -1]


def test_batched_meta_test_environment_records_success(push):
    tasks = [push.all_tasks()[i] for i in push.split_indices()[1][:2]]
    env = push.make_batched(tasks)
    try:
        env.reset()
        step = env.step(np.zeros((2, 4)))
        assert step.success is not None and step.success.dtype == bool
        assert step.success.shape == (2,)
    finally:
        env.close()


def test_missing_metaworld_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "metaworld", None)  # what an uninstalled package does
    with pytest.raises(MetaWorldMissing, match=re.escape('pip install "metaworld==3.1.1"')):
        metaworld_module()


def test_mujoco_parts_left_behind_are_named_with_the_repair():
    problem = mujoco_install_problem(
        {"mujoco": "3.3.0", "mujoco-core": "4.0.0", "mujoco-studio": "4.0.0"}
    )
    assert "mujoco 3.3.0 is installed beside mujoco-core 4.0.0, mujoco-studio 4.0.0" in problem
    assert "pip uninstall -y mujoco-core mujoco-studio" in problem
    assert mujoco_install_problem({"mujoco": "4.0.0", "mujoco-core": "4.0.0"}) is None
    assert mujoco_install_problem({"mujoco": "3.3.0"}) is None


def test_normalised_score_on_a_hand_made_dataset():
    """Two tasks: task 0 has episodes of return 3 and 5 (mean 4) and an unfinished one that
    does not count; task 1 one episode of return 10. Test returns 6 and 5 score 1.5 and 0.5."""
    reward = np.array([[1, 2, 2, 3, 7, 0], [4, 6, 0, 0, 0, 0]], dtype=np.float32)
    truncated = np.array([[0, 1, 0, 1, 0, 0], [0, 1, 0, 0, 0, 0]], dtype=bool)
    zeros = np.zeros((2, 6, 1), np.float32)
    transitions = Transitions(
        obs=zeros,
        action=zeros,
        next_obs=zeros,
        reward=reward,
        sparse_reward=reward,
        terminated=np.zeros_like(truncated),
        truncated=truncated,
    )
    data = QualityData(transitions, np.array([5, 2]))
    assert dataset_returns(data, [0, 1]).tolist() == [4.0, 10.0]
    assert normalised(np.array([6.0, 5.0]), dataset_returns(data, [0, 1])).tolist() == [1.5, 0.5]
    with pytest.raises(DatasetError, match="no complete episode"):
        dataset_returns(QualityData(transitions, np.array([1, 1])), [0])


def test_tiny_run_records_return_success_and_normalised_score(tmp_path):
    metrics, algorithm = run_row("focalpp.gin", "ml1_push", tmp_path / "data", tmp_path / "run")
    evaluation = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert set(evaluation["per_task_success"]) == set(evaluation["per_task_normalised_score"])
    assert len(evaluation["per_task_return"]) == 2  # the tiny scale scores two test tasks
    assert 0.0 <= evaluation["success_rate"] <= 1.0
    returns = np.array(list(evaluation["per_task_return"].values()))
    reference = np.array(list(evaluation["per_task_dataset_return"].values()))
    assert np.allclose(evaluation["normalised_score"], (returns / reference).mean())
    assert "normalised score" in metrics["headline"] and "success rate" in metrics["headline"]
    dataset = algorithm.data.dataset
    assert set(dataset.qualities) == {"expert", "medium", "random", "mixed"}
    assert not dataset.quality("mixed").transitions.obs[..., -3:].any()

    # a dataset built with another Meta-World version is refused, naming both versions
    manifest = json.loads((dataset.path / "manifest.json").read_text())
    manifest["simulators"]["metaworld"] = "3.0.0"
    (dataset.path / "manifest.json").write_text(json.dumps(manifest))
    family = algorithm.family
    with pytest.raises(DatasetError, match=r"built with metaworld 3\.0\.0, but metaworld 3\.1\.1"):
        check_manifest(load_dataset(dataset.path), "ml1_push", family)


def test_ml1_families_refuse_a_goal_radius_and_relabeling(push):
    with pytest.raises(ValueError, match="leave it None"):
        get("env", "ml1_push")(seed=0, goal_radius=-0.1)
    with pytest.raises(FocalppError, match=r"cannot be scored \(relabeled\) as another task's"):
        push.reward(np.zeros(39), np.zeros(4), np.zeros(39), np.zeros(6))


def test_gymnasium_check_env(push, make_env):
    from gymnasium.utils.env_checker import check_env

    env = make_env(push.gym_id, env_name="push-v3", task=push.split_indices()[1][0])
    check_env(env.unwrapped, skip_render_check=True)


def test_another_tasks_scripted_expert_acts_for_its_own_goal(push):
    """The out-of-distribution context of the successors: task 0's expert succeeds in task 0
    and pushes towards its own goal when it acts in the test task whose goal is farthest."""
    from components.data.behaviour import rollout
    from components.data.scripted import ScriptedAgent
    from components.envs.ml1 import start_state

    tasks = push.all_tasks()
    goals = np.stack([start_state("push-v3", tuple(t["rand_vec"]))[1] for t in tasks])
    far = int(np.argmax(np.linalg.norm(goals - goals[0], axis=1)))
    env = push.make_batched([tasks[0], tasks[far]])
    try:
        rolled = rollout(push, env, ScriptedAgent(push, [0, 0], 0.1, seed=0), 1, seed=0)
    finally:
        env.close()
    own, other = rolled.returns[:, 0]
    assert own > other
    puck = rolled.transitions.next_obs[1, -1, 4:7]  # where the far task's puck ends up
    assert np.linalg.norm(puck - goals[0]) < np.linalg.norm(puck - goals[far])
