"""The behaviour policies a dataset keeps, as an agent that acts again.

A context collected by another behaviour policy (CORRO, CSRO and UNICORN's out-of-distribution
test) is one rolled out by some task's behaviour policy in the task being tested. The
`checkpoints` protocol keeps every task's actor at every checkpoint (`Dataset.policies()`);
`behaviour_agent` rebuilds a task-batched SAC whose model i is the policy of task `tasks[i]` at
checkpoint `checkpoints[i]`, ready for `components.data.behaviour.rollout`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from components.data.store import Dataset, DatasetError
from components.envs.family import EnvFamily
from components.rl.sac import TaskBatchedSAC, TaskConditionedSAC


def quality_checkpoint(dataset: Dataset, quality: str, task: int) -> int:
    """The checkpoint (index) whose rollouts are `task`'s data of `quality` (random, medium,
    expert; `mixed` holds every checkpoint and names none)."""
    policies = dataset.manifest.get("policies", {})
    steps = policies.get("checkpoint_steps", [])
    sources = dataset.manifest["qualities"].get(quality, {}).get("sources", [])
    chosen = sources[task].get("checkpoint_steps", []) if task < len(sources) else []
    if len(chosen) != 1 or chosen[0] not in steps:
        raise DatasetError(
            f"{dataset.manifest.get('family', 'the dataset')}: quality {quality!r} of task "
            f"{task} does not come from one kept "
            f"checkpoint (it names {chosen}); choose random, medium or expert"
        )
    return steps.index(chosen[0])


def behaviour_agent(
    dataset: Dataset, family: EnvFamily, tasks: Sequence[int], checkpoints: Sequence[int]
) -> TaskBatchedSAC:
    """A task-batched SAC whose model i acts as task `tasks[i]`'s behaviour policy at
    checkpoint index `checkpoints[i]` (its critics are untrained: it only acts)."""
    if len(tasks) != len(checkpoints) or not tasks:
        raise ValueError(f"one checkpoint per task, got {len(tasks)} tasks, {len(checkpoints)}")
    kept = dataset.policies()
    sizes = dict(
        n_tasks=len(tasks),
        obs_dim=family.obs_dim,
        act_dim=family.act_dim,
        hidden=tuple(kept.hidden),
    )
    rows, columns = torch.as_tensor(list(checkpoints)), torch.as_tensor(list(tasks))
    if kept.task_features is None:  # one actor per task
        agent = TaskBatchedSAC(**sizes)
    else:  # one conditioned actor: a copy per row, told its task (checkpoints may differ)
        features = torch.as_tensor(kept.task_features)[columns]
        agent = TaskConditionedSAC(task_features=features, shared=False, **sizes)
        columns = torch.zeros_like(columns)
    agent.actor.load_state_dict(
        {k: torch.as_tensor(v)[rows, columns] for k, v in kept.weights.items()}
    )
    return agent


def keeps_experts(dataset: Dataset) -> bool:
    """Whether each task's expert behaviour policy can act again (`expert_agent`)."""
    scripted = dataset.manifest.get("settings", {}).get("protocol") == "ScriptedRollouts"
    return dataset.has_policies or scripted


def expert_agent(dataset: Dataset, family: EnvFamily, tasks: Sequence[int], seed: int):
    """An agent whose row i acts as task `tasks[i]`'s expert behaviour policy, for rollouts in
    other tasks: the kept SAC actor at the expert checkpoint, or (a `scripted` dataset) the
    scripted expert told that task's goal with the expert quality's noise; None where the
    dataset keeps neither."""
    if dataset.has_policies:
        checkpoints = [quality_checkpoint(dataset, "expert", t) for t in tasks]
        return behaviour_agent(dataset, family, tasks, checkpoints)
    settings = dataset.manifest.get("settings", {})
    if settings.get("protocol") == "ScriptedRollouts":
        from components.data.scripted import ScriptedAgent

        return ScriptedAgent(family, tasks, settings["expert_noise"], seed)
    return None
