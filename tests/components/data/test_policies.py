"""A `checkpoints` dataset keeps each task's behaviour policy at each checkpoint, and they act
again: the stored actors are the trained ones, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.data.policies import behaviour_agent, quality_checkpoint
from components.data.protocols import BehaviourSettings
from components.data.store import DatasetError
from registry import get
from tests.components.data.conftest import build_tiny


def test_the_dataset_keeps_every_tasks_actor_at_every_checkpoint(tiny_dataset):
    kept = tiny_dataset.policies()
    settings = tiny_dataset.manifest["settings"]
    assert len(kept.checkpoint_steps) == 3 and kept.checkpoint_steps[-1] == 60
    n_tasks = len(tiny_dataset.tasks)
    for name, weights in kept.weights.items():
        assert weights.shape[:2] == (3, n_tasks), name
    assert kept.hidden == list(settings["hidden"])


def test_the_stored_actors_are_the_trained_ones(tiny_dataset, tmp_path, monkeypatch):
    """Build the same dataset again, holding on to the behaviour SACs it trains (one per block
    of tasks): their actors at the start and at the end, side by side, equal the stored first
    and last checkpoints exactly (and the rebuilt dataset keeps the same policies as the first
    build)."""
    trained = []  # (agent, its actor's weights at the start), one per block
    make = BehaviourSettings.agent

    def keep(self, family, tasks):
        agent = make(self, family, tasks)
        trained.append((agent, {k: v.clone() for k, v in agent.actor.state_dict().items()}))
        return agent

    monkeypatch.setattr(BehaviourSettings, "agent", keep)
    again = build_tiny(tmp_path)
    assert len(trained) == 2  # the default two blocks, built here one after the other
    for kept in (again.policies(), tiny_dataset.policies()):
        for name in trained[0][0].actor.state_dict():
            start = np.concatenate([s[name].numpy() for _, s in trained])
            end = np.concatenate([a.actor.state_dict()[name].numpy() for a, _ in trained])
            np.testing.assert_array_equal(kept.weights[name][0], start)
            np.testing.assert_array_equal(kept.weights[name][-1], end)


def test_a_behaviour_agent_acts_as_the_chosen_task_and_checkpoint(tiny_dataset):
    family = get("env", "sparse_point_robot")(seed=0)
    kept = tiny_dataset.policies()
    expert = quality_checkpoint(tiny_dataset, "expert", 7)
    assert expert == 2 and quality_checkpoint(tiny_dataset, "random", 7) == 0
    agent = behaviour_agent(tiny_dataset, family, tasks=[7, 3], checkpoints=[expert, 0])
    state = agent.actor.state_dict()
    for name, weights in kept.weights.items():
        np.testing.assert_array_equal(state[name][0].numpy(), weights[2, 7])
        np.testing.assert_array_equal(state[name][1].numpy(), weights[0, 3])
    actions = agent.act(torch.zeros(2, 4, family.obs_dim), deterministic=True)
    assert actions.shape == (2, 4, family.act_dim)
    with pytest.raises(DatasetError, match="does not come from one kept checkpoint"):
        quality_checkpoint(tiny_dataset, "mixed", 7)


def test_a_dataset_without_policies_says_how_to_get_them(tiny_dataset):
    """A dataset built before policies were kept (its manifest has none) still loads; asked for
    its policies, it names itself and the rebuild command."""
    import dataclasses

    older = dataclasses.replace(
        tiny_dataset, manifest={k: v for k, v in tiny_dataset.manifest.items() if k != "policies"}
    )
    assert not older.has_policies and older.quality("expert").length.sum() > 0
    with pytest.raises(DatasetError, match=r"keeps no behaviour policies.*collect\.py"):
        older.policies()


def test_a_conditioned_learner_keeps_one_actor_and_what_it_was_told(tmp_path, monkeypatch):
    """With behaviour_sac.learner = 'conditioned' one network serves every task: the dataset
    keeps it once per checkpoint with each task's features, and a behaviour agent rebuilt from
    it acts for (task, checkpoint) exactly as the trained network told that task."""
    from components.rl.sac import TaskConditionedSAC

    trained = []
    make = BehaviourSettings.agent

    def keep(self, family, tasks):
        trained.append(make(self, family, tasks))
        return trained[0]

    monkeypatch.setattr(BehaviourSettings, "agent", keep)
    dataset = build_tiny(tmp_path, extra=["behaviour_sac.learner = 'conditioned'"])
    (agent,) = trained
    assert isinstance(agent, TaskConditionedSAC)
    assert dataset.manifest["settings"]["learner"] == "conditioned"
    kept = dataset.policies()
    assert all(w.shape[:2] == (3, 1) for w in kept.weights.values())
    np.testing.assert_array_equal(kept.task_features, agent.task_features.numpy())
    assert np.allclose(kept.task_features.mean(0), 0, atol=1e-5)  # standardised goals
    for name, value in agent.actor.state_dict().items():  # the last checkpoint is the trained
        np.testing.assert_array_equal(kept.weights[name][-1], value.numpy())

    family = get("env", "sparse_point_robot")(seed=0)
    replay = behaviour_agent(dataset, family, tasks=[7, 3], checkpoints=[2, 2])
    obs = torch.randn(2, 5, family.obs_dim)
    expected = agent.act(torch.zeros(100, 5, 2).index_copy(0, torch.tensor([7, 3]), obs),
                         deterministic=True)[[7, 3]]  # fmt: skip
    torch.testing.assert_close(replay.act(obs, deterministic=True), expected)
