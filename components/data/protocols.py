"""Collection protocols (kind `dataset`): how behaviour training becomes per-task datasets.

- `checkpoints` (the FOCAL reference protocol): stochastic rollouts of each task's behaviour SAC
  at evenly spaced checkpoints; qualities are checkpoint windows — random (the untrained
  policy), medium (the checkpoint whose mean return is closest to halfway between random and
  expert), expert (the final policy) and mixed (every checkpoint).
- `replay` (the CORRO / UNICORN protocol): each task's whole SAC replay buffer, quality `replay`.

Both train all tasks' behaviour policies at once (components.data.behaviour), or a subset of
them (`tasks`: a shard of a build spread over several workers). Checkpoints are
ranked by sparse return where the family has a goal radius and the expert's sparse return
exceeds the random policy's, else by dense return.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import torch

from components.data.behaviour import Progress, Resume, Rollouts, rollout, train_behaviour
from components.data.store import DatasetError, Policies, QualityData
from components.envs.family import EnvFamily
from components.rl.sac import TaskBatchedSAC, TaskConditionedSAC
from components.transitions import FIELDS, Transitions
from registry import register
from registry.constraints import Count, Fraction, PositiveFloat, PositiveInt, Range, Widths


@dataclass(frozen=True)
class Collected:
    """What a protocol produced: qualities, their per-task provenance, its settings, and the
    behaviour policies the data came from (where the protocol keeps them)."""

    qualities: dict[str, QualityData]
    sources: dict[str, list[dict[str, Any]]]
    settings: dict[str, Any]
    policies: Policies | None = None


LEARNERS = ("independent", "conditioned")
# left out of manifests at these values (every earlier build's), so their manifests still match
EARLIER = {"resume_every": 0, "learner": "independent", "blocks": 1}


@register("behaviour", "behaviour_sac")
@dataclass(frozen=True)
class BehaviourSettings:
    """Behaviour-SAC training shared by the collection protocols (counts are per task).

    Defaults suit the point robots; recipes/envs/<family>.gin sets the MuJoCo families'.

    Args:
        env_steps: environment steps per task; one gradient step follows each.
        start_steps: uniform random actions before the policy acts.
        batch_size: transitions per task per gradient step.
        hidden: hidden sizes of actor and critics.
        lr: Adam learning rate at the start.
        final_lr_fraction: the learning rate decays linearly to lr × this at the end (precise
            experts: 11.84 → 12.06 mean sparse return on Sparse-Point-Robot, docs/DATASETS.md).
        discount: γ.
        target_entropy: SAC's entropy target (None: −action dim); low gives precise experts.
        reward_scale: multiplies rewards in the critic target.
        resume_every: steps between resume points (0: none): a killed build goes on from the
            last one and gives the same bytes as one never stopped (`behaviour.Resume`; each
            point restarts every episode, so the data differ from a build without them).
        learner: 'independent' (the reference protocol: one SAC per task, `TaskBatchedSAC`)
            or 'conditioned' (one SAC for all tasks told each task's standardised parameters,
            `TaskConditionedSAC`: each task's policy is the network told that task; far
            cheaper where tasks are many and alike — the MuJoCo long-build scale).
        blocks: fixed blocks of consecutive tasks, each trained on its own and built on a
            worker of its own (components/data/blocks.py). Unbound: 2 for independent learners,
            1 for a conditioned one; a conditioned learner in B blocks is B networks, each told
            its own block's tasks (their parameters still standardised over the whole family),
            so each of B workers does about a B-th of the arithmetic.
    """

    env_steps: PositiveInt = 4_000
    start_steps: Count = 200
    batch_size: PositiveInt = 64
    hidden: Widths = (64, 64)
    lr: PositiveFloat = 3e-3
    final_lr_fraction: Fraction = 0.05
    discount: Fraction = 0.9
    target_entropy: float | None = -6.0
    reward_scale: PositiveFloat = 1.0
    resume_every: Count = 0
    learner: str = "independent"
    blocks: PositiveInt | None = None

    def __post_init__(self):
        if self.blocks is None:  # frozen: settled once, as recorded
            object.__setattr__(self, "blocks", 1 if self.learner == "conditioned" else 2)
        if self.learner not in LEARNERS:
            raise DatasetError(
                f"behaviour_sac.learner = {self.learner!r}: expected one of {sorted(LEARNERS)}"
            )

    def settings(self) -> dict[str, Any]:
        """As recorded in manifests; settings at the value every earlier build ran with (no
        resume points, independent learners) are left out so that their manifests still
        match."""
        return {k: v for k, v in asdict(self).items() if k not in EARLIER or EARLIER[k] != v}

    def agent(self, family: EnvFamily, tasks: Sequence[dict[str, Any]]) -> TaskBatchedSAC:
        """The learner for `tasks` (K of them)."""
        sizes = dict(
            n_tasks=len(tasks),
            obs_dim=family.obs_dim,
            act_dim=family.act_dim,
            hidden=tuple(self.hidden),
            lr=self.lr,
            discount=self.discount,
            target_entropy=self.target_entropy,
            reward_scale=self.reward_scale,
        )
        if self.learner == "independent":
            return TaskBatchedSAC(**sizes)
        return TaskConditionedSAC(task_features=task_features(family, tasks), **sizes)

    def train(self, family: EnvFamily, agent: TaskBatchedSAC, tasks, seed: int, **kwargs):
        """`train_behaviour` with this schedule (kwargs: checkpoints, progress, resume)."""
        return train_behaviour(
            family,
            tasks,
            agent,
            env_steps=self.env_steps,
            start_steps=self.start_steps,
            batch_size=self.batch_size,
            seed=seed,
            lr_at=self.learning_rate,
            **kwargs,
        )

    def learning_rate(self, step: int) -> float:
        """Linear decay from `lr` to `lr × final_lr_fraction` over the run."""
        done = min(1.0, step / max(1, self.env_steps))
        return self.lr * (1.0 - (1.0 - self.final_lr_fraction) * done)


def task_features(family: EnvFamily, tasks: Sequence[dict[str, Any]]) -> np.ndarray:
    """What a conditioned learner is told of each task: its parameters standardised over the
    family's tasks ([K, P], float32; a parameter all tasks share is 0)."""
    every = family.task_vectors(family.all_tasks())
    mean, std = every.mean(0), every.std(0)
    scaled = (family.task_vectors(list(tasks)) - mean) / np.where(std > 0, std, 1.0)
    return scaled.astype(np.float32)


def pack(parts: list[tuple[Transitions, np.ndarray]]) -> QualityData:
    """Concatenate unpacked parts (fields [K, M_i, ...], alive [K, M_i]) and move each task's
    real transitions to the front: fields [K, N, ...] with N = max real count, float32 (flags
    bool), zero-padded after each task's length."""
    transitions = Transitions(
        **{f: np.concatenate([getattr(t, f) for t, _ in parts], axis=1) for f in FIELDS}
    )
    alive = np.concatenate([a for _, a in parts], axis=1).astype(bool)
    order = np.argsort(~alive, axis=1, kind="stable")  # real first, time order kept
    length = alive.sum(1)
    n = int(length.max())
    rows = np.arange(alive.shape[0])[:, None]
    padding = np.arange(n)[None, :] >= length[:, None]  # [K, N]

    def gather(x: np.ndarray, name: str) -> np.ndarray:
        y = x[rows, order[:, :n]].astype(
            bool if name in ("terminated", "truncated") else np.float32
        )
        y[padding] = 0  # padding is zeros: deterministic, and never sampled
        return y

    out = Transitions(**{f: gather(getattr(transitions, f), f) for f in FIELDS})
    return QualityData(out, length.astype(np.int64))


def _chosen(family: EnvFamily, indices: Sequence[int] | None) -> list[dict[str, Any]]:
    """The family's tasks at `indices` (all of them for None)."""
    tasks = family.all_tasks()
    return tasks if indices is None else [tasks[i] for i in indices]


class _Protocol:
    behaviour: BehaviourSettings
    # rows are whole episodes in order (a protocol that shuffles transitions says False: the
    # store then does not hold its rows to the horizon; components/data/content.py)
    episodic = True

    def settings(self) -> dict[str, Any]:
        return {
            "protocol": type(self).__name__,
            **self.behaviour.settings(),
            **self.extra_settings(),
        }

    def extra_settings(self) -> dict[str, Any]:
        return {}

    def resume(self, where: Path | None, seed: int, tasks: Sequence[int] | None, **hooks):
        """Resume points at `where`/state.pt where the settings ask for them, else None."""
        if where is None or not self.behaviour.resume_every:
            return None
        identity = {"settings": self.settings(), "seed": seed, "tasks": tasks}
        return Resume(Path(where) / "state.pt", self.behaviour.resume_every, identity, **hooks)


@register("dataset", "checkpoints")
class CheckpointRollouts(_Protocol):
    """Stochastic rollouts at checkpoints of per-task behaviour SAC; qualities by checkpoint.

    Args:
        behaviour: behaviour-SAC settings (default: `behaviour_sac` as bound in gin).
        checkpoints: number of evenly spaced checkpoints, the untrained policy and the last
            included.
        episodes: stochastic episodes saved per checkpoint and task (the reference saved 50).
    """

    def __init__(
        self,
        *,
        behaviour: BehaviourSettings | None = None,
        checkpoints: Annotated[int, Range(low=2)] = 11,
        episodes: PositiveInt = 50,
    ):
        self.behaviour = behaviour if behaviour is not None else BehaviourSettings()
        if checkpoints < 3:
            raise DatasetError(
                f"checkpoints must be at least 3 (random, medium, expert), got {checkpoints}"
            )
        self.checkpoints, self.episodes = checkpoints, episodes

    def extra_settings(self) -> dict[str, Any]:
        return {"checkpoints": self.checkpoints, "episodes": self.episodes}

    def build(
        self,
        family: EnvFamily,
        *,
        seed: int,
        progress: Progress | None = None,
        tasks: Sequence[int] | None = None,
        resume: Path | None = None,
    ) -> Collected:
        """`resume`: where a stopped build keeps its state (with `resume_every`)."""
        torch.manual_seed(seed)
        indices, tasks = tasks, _chosen(family, tasks)
        agent = self.behaviour.agent(family, tasks)
        rollout_env = family.make_batched([t for t in tasks for _ in range(self.episodes)])
        steps = np.linspace(0, self.behaviour.env_steps, self.checkpoints).round().astype(int)
        saved: dict[int, Rollouts] = {}
        actors: dict[int, dict[str, np.ndarray]] = {}

        def on_checkpoint(step: int) -> None:
            # the policy itself, kept for contexts collected in another task later
            actors[step] = {
                k: v.detach().numpy().copy() for k, v in agent.actor.state_dict().items()
            }
            saved[step] = rollout(family, rollout_env, agent, self.episodes, seed=seed + step)

        def restore(extra: dict[str, Any]) -> None:
            saved.update(extra["rollouts"])
            actors.update(extra["actors"])

        self.behaviour.train(
            family,
            agent,
            tasks,
            seed,
            checkpoint_steps=steps.tolist(),
            on_checkpoint=on_checkpoint,
            progress=progress,
            resume=self.resume(
                resume,
                seed,
                indices,
                extra=lambda: {"rollouts": saved, "actors": actors},
                restore=restore,
            ),
        )
        rollout_env.close()
        collected = self._qualities(family, [saved[s] for s in steps], steps)
        policies = Policies(
            checkpoint_steps=[int(s) for s in steps],
            hidden=[int(h) for h in self.behaviour.hidden],
            weights={k: np.stack([actors[s][k] for s in steps]) for k in actors[steps[0]]},
            task_features=(
                agent.task_features.numpy() if isinstance(agent, TaskConditionedSAC) else None
            ),
        )
        return dataclasses.replace(collected, policies=policies)

    def _qualities(self, family: EnvFamily, runs: list[Rollouts], steps: np.ndarray) -> Collected:
        dense = np.stack([r.returns.mean(1) for r in runs], 1)  # [K tasks, C checkpoints]
        sparse = np.stack([r.sparse_returns.mean(1) for r in runs], 1)
        # Rank by sparse return where it separates expert from random; else by dense return
        # (small-scale MuJoCo experts may never reach the goal radius).
        by_sparse = (family.goal_radius is not None) & (sparse[:, -1] > sparse[:, 0])
        score = np.where(by_sparse[:, None], sparse, dense)
        k = score.shape[0]
        halfway = (score[:, :1] + score[:, -1:]) / 2
        medium = np.abs(score[:, 1:-1] - halfway).argmin(1) + 1  # a middle checkpoint per task
        choice = {"random": np.zeros(k, int), "medium": medium, "expert": np.full(k, len(runs) - 1)}
        # All checkpoints' rollouts stacked once: fields [C, K, E·H, ...], alive [C, K, E·H].
        stacked = Transitions(
            **{f: np.stack([getattr(r.transitions, f) for r in runs]) for f in FIELDS}
        )
        alive = np.stack([r.alive for r in runs])
        rows = np.arange(k)
        ranked_by = np.where(by_sparse, "sparse_return", "return")

        def source(which, task: int) -> dict[str, Any]:
            return {
                "checkpoint_steps": [int(steps[c]) for c in which],
                "mean_return": [float(dense[task, c]) for c in which],
                "mean_sparse_return": [float(sparse[task, c]) for c in which],
            }

        qualities, sources = {}, {}
        for name, chosen in choice.items():  # per task, its chosen checkpoint: one gather
            picked = stacked.map(lambda x, chosen=chosen: x[chosen, rows])
            qualities[name] = pack([(picked, alive[chosen, rows])])
            sources[name] = [
                {**source([c], i), "ranked_by": str(ranked_by[i])} for i, c in enumerate(chosen)
            ]
        qualities["mixed"] = pack([(r.transitions, r.alive) for r in runs])
        sources["mixed"] = [source(range(len(runs)), i) for i in range(k)]
        return Collected(qualities, sources, self.settings())


@register("dataset", "replay")
class ReplayBufferDump(_Protocol):
    """Each task's whole behaviour-SAC replay buffer (quality `replay`), as CORRO and UNICORN.

    Args:
        behaviour: behaviour-SAC settings (default: `behaviour_sac` as bound in gin).
    """

    def __init__(self, *, behaviour: BehaviourSettings | None = None):
        self.behaviour = behaviour if behaviour is not None else BehaviourSettings()

    def build(
        self,
        family: EnvFamily,
        *,
        seed: int,
        progress: Progress | None = None,
        tasks: Sequence[int] | None = None,
        resume: Path | None = None,
    ) -> Collected:
        """`resume`: where a stopped build keeps its state (with `resume_every`)."""
        torch.manual_seed(seed)
        indices, tasks = tasks, _chosen(family, tasks)
        agent = self.behaviour.agent(family, tasks)
        replay = self.behaviour.train(
            family,
            agent,
            tasks,
            seed,
            progress=progress,
            resume=self.resume(resume, seed, indices),
        )
        content = replay.contents().map(lambda x: x.numpy())
        data = pack([(content, np.ones(content.reward.shape, dtype=bool))])
        sources = [
            {"env_steps": self.behaviour.env_steps, "mean_reward_per_step": float(r)}
            for r in data.transitions.reward.mean(1)
        ]
        return Collected({"replay": data}, {"replay": sources}, self.settings())
