"""Collection protocols (kind `dataset`): how behaviour training becomes per-task datasets.

- `checkpoints` (the FOCAL reference protocol): stochastic rollouts of each task's behaviour SAC
  at evenly spaced checkpoints; qualities are checkpoint windows — random (the untrained
  policy), medium (the checkpoint whose mean return is closest to halfway between random and
  expert), expert (the final policy) and mixed (every checkpoint).
- `replay` (the CORRO / UNICORN protocol): each task's whole SAC replay buffer, quality `replay`.

Both train all tasks' behaviour policies at once (components.data.behaviour). Returns used to
rank checkpoints are sparse where the family has a goal radius, dense otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from components.data.behaviour import Progress, Rollouts, rollout, train_behaviour
from components.data.store import DatasetError, QualityData
from components.data.transitions import FIELDS, Transitions
from components.envs.family import EnvFamily
from components.rl.sac import TaskBatchedSAC
from registry import register


@dataclass(frozen=True)
class Collected:
    """What a protocol produced: qualities, their per-task provenance, and its settings."""

    qualities: dict[str, QualityData]
    sources: dict[str, list[dict[str, Any]]]
    settings: dict[str, Any]


@dataclass(frozen=True)
class BehaviourSettings:
    """Behaviour-SAC training shared by the protocols (all counts are per task)."""

    env_steps: int = 4_000  # environment steps = gradient steps
    start_steps: int = 200  # uniform random actions first
    batch_size: int = 64  # transitions per task per gradient step
    hidden: tuple[int, ...] = (32, 32)
    lr: float = 3e-3
    discount: float = 0.9
    target_entropy: float | None = -6.0
    reward_scale: float = 1.0

    def agent(self, family: EnvFamily, n_tasks: int) -> TaskBatchedSAC:
        return TaskBatchedSAC(
            n_tasks=n_tasks,
            obs_dim=family.obs_dim,
            act_dim=family.act_dim,
            hidden=tuple(self.hidden),
            lr=self.lr,
            discount=self.discount,
            target_entropy=self.target_entropy,
            reward_scale=self.reward_scale,
        )


def pack(parts: list[tuple[Transitions, np.ndarray]]) -> QualityData:
    """Concatenate unpacked parts (fields [K, M_i, ...], alive [K, M_i]) and move each task's
    real transitions to the front: fields [K, N, ...] with N = max real count, float32."""
    transitions = Transitions(
        **{f: np.concatenate([getattr(t, f) for t, _ in parts], axis=1) for f in FIELDS}
    )
    alive = np.concatenate([a for _, a in parts], axis=1).astype(bool)
    order = np.argsort(~alive, axis=1, kind="stable")  # real first, time order kept
    length = alive.sum(1)
    n = int(length.max())
    rows = np.arange(alive.shape[0])[:, None]
    out = transitions.map(lambda x: x[rows, order[:, :n]])
    out = Transitions(
        **{
            f: getattr(out, f).astype(bool if f in ("terminated", "truncated") else np.float32)
            for f in FIELDS
        }
    )
    return QualityData(out, length.astype(np.int64))


class _Protocol:
    def __init__(self, **settings: Any):
        self.behaviour = BehaviourSettings(**settings)

    def settings(self) -> dict[str, Any]:
        return {"protocol": type(self).__name__, **asdict(self.behaviour), **self.extra_settings()}

    def extra_settings(self) -> dict[str, Any]:
        return {}


@register("dataset", "checkpoints")
class CheckpointRollouts(_Protocol):
    """Stochastic rollouts at checkpoints of per-task behaviour SAC; qualities by checkpoint.

    Args:
        env_steps: SAC environment (= gradient) steps per task.
        start_steps: initial uniform random steps.
        batch_size: SAC batch per task.
        hidden: SAC network hidden sizes.
        lr: SAC learning rate.
        discount: SAC discount.
        target_entropy: SAC target entropy (low: precise experts).
        reward_scale: SAC reward scale.
        checkpoints: number of evenly spaced checkpoints, the untrained policy and the last
            included.
        episodes: stochastic episodes saved per checkpoint and task (the reference saved 50).
    """

    def __init__(
        self,
        *,
        env_steps: int = 4_000,
        start_steps: int = 200,
        batch_size: int = 64,
        hidden: tuple[int, ...] = (32, 32),
        lr: float = 3e-3,
        discount: float = 0.9,
        target_entropy: float | None = -6.0,
        reward_scale: float = 1.0,
        checkpoints: int = 11,
        episodes: int = 50,
    ):
        super().__init__(
            env_steps=env_steps,
            start_steps=start_steps,
            batch_size=batch_size,
            hidden=hidden,
            lr=lr,
            discount=discount,
            target_entropy=target_entropy,
            reward_scale=reward_scale,
        )
        if checkpoints < 3:
            raise DatasetError(
                f"checkpoints must be at least 3 (random, medium, expert), got {checkpoints}"
            )
        self.checkpoints, self.episodes = checkpoints, episodes

    def extra_settings(self) -> dict[str, Any]:
        return {"checkpoints": self.checkpoints, "episodes": self.episodes}

    def build(self, family: EnvFamily, *, seed: int, progress: Progress | None = None) -> Collected:
        torch.manual_seed(seed)
        tasks = family.all_tasks()
        agent = self.behaviour.agent(family, len(tasks))
        rollout_env = family.make_batched([t for t in tasks for _ in range(self.episodes)])
        steps = np.linspace(0, self.behaviour.env_steps, self.checkpoints).round().astype(int)
        saved: dict[int, Rollouts] = {}

        def on_checkpoint(step: int) -> None:
            saved[step] = rollout(family, rollout_env, agent, self.episodes, seed=seed + step)

        train_behaviour(
            family,
            tasks,
            agent,
            env_steps=self.behaviour.env_steps,
            start_steps=self.behaviour.start_steps,
            batch_size=self.behaviour.batch_size,
            checkpoint_steps=steps.tolist(),
            on_checkpoint=on_checkpoint,
            seed=seed,
            progress=progress,
        )
        rollout_env.close()
        return self._qualities(family, [saved[s] for s in steps], steps)

    def _qualities(self, family: EnvFamily, runs: list[Rollouts], steps: np.ndarray) -> Collected:
        sparse = family.goal_radius is not None
        score = np.stack([(r.sparse_returns if sparse else r.returns).mean(1) for r in runs], 1)
        k = score.shape[0]  # score: [K tasks, C checkpoints]
        halfway = (score[:, :1] + score[:, -1:]) / 2
        medium = np.abs(score[:, 1:-1] - halfway).argmin(1) + 1  # a middle checkpoint per task
        choice = {"random": np.zeros(k, int), "medium": medium, "expert": np.full(k, len(runs) - 1)}
        qualities, sources = {}, {}
        for name, chosen in choice.items():
            parts = [self._select(runs, chosen)]
            qualities[name] = pack(parts)
            sources[name] = [self._source(runs, steps, [c], i) for i, c in enumerate(chosen)]
        qualities["mixed"] = pack([(r.transitions, r.alive) for r in runs])
        sources["mixed"] = [self._source(runs, steps, range(len(runs)), i) for i in range(k)]
        return Collected(qualities, sources, self.settings())

    @staticmethod
    def _select(runs: list[Rollouts], chosen: np.ndarray) -> tuple[Transitions, np.ndarray]:
        """Per task, the rollouts of its chosen checkpoint (one gather, no loop over tasks)."""
        rows = np.arange(len(chosen))
        stacked = Transitions(
            **{f: np.stack([getattr(r.transitions, f) for r in runs]) for f in FIELDS}
        )
        alive = np.stack([r.alive for r in runs])[chosen, rows]
        return stacked.map(lambda x: x[chosen, rows]), alive

    @staticmethod
    def _source(runs: list[Rollouts], steps: np.ndarray, which, task: int) -> dict[str, Any]:
        which = list(which)
        return {
            "checkpoint_steps": [int(steps[c]) for c in which],
            "mean_return": [float(runs[c].returns[task].mean()) for c in which],
            "mean_sparse_return": [float(runs[c].sparse_returns[task].mean()) for c in which],
        }


@register("dataset", "replay")
class ReplayBufferDump(_Protocol):
    """Each task's whole behaviour-SAC replay buffer (quality `replay`), as CORRO and UNICORN.

    Args:
        env_steps: SAC environment (= gradient) steps per task; the buffer keeps all of them.
        start_steps: initial uniform random steps.
        batch_size: SAC batch per task.
        hidden: SAC network hidden sizes.
        lr: SAC learning rate.
        discount: SAC discount.
        target_entropy: SAC target entropy.
        reward_scale: SAC reward scale.
    """

    def __init__(
        self,
        *,
        env_steps: int = 4_000,
        start_steps: int = 200,
        batch_size: int = 64,
        hidden: tuple[int, ...] = (32, 32),
        lr: float = 3e-3,
        discount: float = 0.9,
        target_entropy: float | None = -6.0,
        reward_scale: float = 1.0,
    ):
        super().__init__(
            env_steps=env_steps,
            start_steps=start_steps,
            batch_size=batch_size,
            hidden=hidden,
            lr=lr,
            discount=discount,
            target_entropy=target_entropy,
            reward_scale=reward_scale,
        )

    def build(self, family: EnvFamily, *, seed: int, progress: Progress | None = None) -> Collected:
        torch.manual_seed(seed)
        tasks = family.all_tasks()
        agent = self.behaviour.agent(family, len(tasks))
        replay = train_behaviour(
            family,
            tasks,
            agent,
            env_steps=self.behaviour.env_steps,
            start_steps=self.behaviour.start_steps,
            batch_size=self.behaviour.batch_size,
            checkpoint_steps=[],
            on_checkpoint=lambda step: None,
            seed=seed,
            progress=progress,
        )
        content = replay.contents().map(lambda x: x.numpy())
        alive = np.ones(content.reward.shape, dtype=bool)
        data = pack([(content, alive)])
        sources = [
            {"env_steps": self.behaviour.env_steps, "mean_reward_per_step": float(r)}
            for r in data.transitions.reward.mean(1)
        ]
        return Collected({"replay": data}, {"replay": sources}, self.settings())
