"""The `scripted` protocol (kind `dataset`): Meta-World's scripted experts with action noise.

Training a behaviour SAC per task on 500-step manipulation tasks costs hours of CPU; Meta-World
ships a scripted expert for every environment (`metaworld.policies`). It reads the goal from
the observation, which ML1 hides, so it is told the task's goal (written into a copy of what it
sees; the stored observation keeps the goal hidden). Gaussian noise on its actions, clipped to
the action bounds, gives the qualities:

- `expert`: noise `expert_noise` (σ = 0.1: the expert succeeds on almost every task);
- `medium`: the noise level of `noise_grid` whose mean return on `calibration_tasks` training
  tasks is closest to halfway between the expert's and the random tier's (the `checkpoints`
  protocol's rule for its medium checkpoint), one level per environment, measured at build time;
- `random`: uniform random actions (success ≈ 0);
- `mixed`: the three together.

Every episode's noise comes from its own generator, seeded by (seed, task, quality, episode),
so a task's data do not depend on which other tasks a build (or a shard of one) collects, and
the behaviour policy of each quality is the scripted expert plus the recorded noise level.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from components.data.behaviour import Progress
from components.data.protocols import Collected, pack
from components.data.store import DatasetError
from components.envs.family import EnvFamily
from components.transitions import FIELDS, Transitions
from registry import register
from registry.constraints import Count, PositiveFloat, PositiveFloats, PositiveInt

TIERS = ("expert", "medium", "random")
UNIFORM = -1.0  # the noise "level" of uniform random actions
PART_STEPS = 60_000  # the most simulator steps of one worker's job: about a minute


# Meta-World's experts remark on their own gains at every step; the clipping it warns of is ours
warnings.filterwarnings("ignore", "Constant\\(s\\) may be too high", UserWarning)


def scripted_policy(env_name: str):
    """Meta-World's scripted expert for `env_name`."""
    from metaworld.policies import ENV_POLICY_MAP

    return ENV_POLICY_MAP[env_name]()


@dataclass(frozen=True)
class Episodes:
    """Episodes of one quality for K tasks: fields [K, E·L, ...], returns and success [K, E]."""

    transitions: Transitions
    returns: np.ndarray
    success: np.ndarray


class ScriptedCollector:
    """Rolls the scripted expert (plus noise) out in one simulator, task after task."""

    def __init__(self, family: EnvFamily, steps: int):
        from components.envs.ml1 import ML1Env

        self.family, self.steps = family, steps
        self.env = ML1Env(task=0, **family.gym_kwargs())
        self.policy = scripted_policy(family.env_name)

    def episode(self, task: int, noise: float, rng: np.random.Generator) -> dict[str, Any]:
        """One episode of task `task` (an index into the family's tasks)."""
        obs, _ = self.env.reset(options={"task": task})
        goal = self.env.goal()
        fields: dict[str, list] = {k: [] for k in ("obs", "action", "next_obs", "reward")}
        succeeded = False
        for _ in range(self.steps):
            if noise == UNIFORM:
                action = rng.uniform(-1.0, 1.0, self.family.act_dim)
            else:
                seen = obs.copy()
                seen[-3:] = goal  # the expert is told the goal; the data keep it hidden
                action = self.policy.get_action(seen) + noise * rng.standard_normal(4)
                action = np.clip(action, -1.0, 1.0)
            next_obs, reward, _, _, info = self.env.step(action)
            for key, value in zip(fields, (obs, action, next_obs, reward), strict=True):
                fields[key].append(value)
            succeeded |= info["success"]
            obs = next_obs
        return {**{k: np.asarray(v) for k, v in fields.items()}, "success": succeeded}

    def collect(
        self, tasks: Sequence[int], noise: float, episodes: int, seeds: Sequence[int], tick
    ) -> Episodes:
        """`episodes` episodes per task at `noise`; `seeds`: the generator's seed prefix."""
        rows = []
        for task in tasks:
            runs = []
            for e in range(episodes):
                rng = np.random.default_rng([*seeds, task, e])
                runs.append(self.episode(task, noise, rng))
                tick(self.steps)
            rows.append(runs)
        k, length = len(tasks), episodes * self.steps

        def stacked(key: str) -> np.ndarray:
            return np.stack([np.concatenate([r[key] for r in runs]) for runs in rows])

        reward = stacked("reward").astype(np.float32)
        truncated = np.zeros((k, length), dtype=bool)
        truncated[:, self.steps - 1 :: self.steps] = True  # every episode ends by time limit
        transitions = Transitions(
            obs=stacked("obs").astype(np.float32),
            action=stacked("action").astype(np.float32),
            next_obs=stacked("next_obs").astype(np.float32),
            reward=reward,
            sparse_reward=reward.copy(),  # a dense family: the context reads this field
            terminated=np.zeros((k, length), dtype=bool),
            truncated=truncated,
        )
        returns = reward.reshape(k, episodes, self.steps).sum(-1)
        success = np.array([[r["success"] for r in runs] for runs in rows])
        return Episodes(transitions, returns, success)

    def close(self) -> None:
        self.env.close()


class ScriptedAgent:
    """Tasks' expert behaviour policies as `components.data.behaviour.rollout` drives them:
    row k is the scripted expert told the goal of `tasks[k]` with noise σ, acting on whatever
    task its environment holds (another task's behaviour policy: the out-of-distribution
    context of the successors). Observations [K, E, F] -> actions [K, E, A]."""

    def __init__(self, family: EnvFamily, tasks: Sequence[int], noise: float, seed: int):
        from components.envs.ml1 import start_state

        every = family.all_tasks()
        self.goals = [start_state(family.env_name, tuple(every[t]["rand_vec"]))[1] for t in tasks]
        self.policy, self.noise = scripted_policy(family.env_name), noise
        self.n_tasks, self.rng = len(tasks), np.random.default_rng(seed)

    def act(self, obs) -> torch.Tensor:
        seen = obs.detach().cpu().numpy().astype(np.float64)  # [K, E, F]
        actions = np.zeros((*seen.shape[:2], 4))
        for k, goal in enumerate(self.goals):
            for e in range(seen.shape[1]):
                seen[k, e, -3:] = goal
                actions[k, e] = self.policy.get_action(seen[k, e])
        actions += self.noise * self.rng.standard_normal(actions.shape)
        return torch.as_tensor(np.clip(actions, -1.0, 1.0), dtype=torch.float32)


def _collect_part(family_kwargs: dict, steps: int, work, episodes: int) -> Episodes:
    """One worker's share: one quality of some tasks (run in a subprocess); `family_kwargs`:
    the family's `gym_kwargs()`, which rebuild it."""
    import components.envs  # noqa: F401 (registers the families in the fresh process)
    from components.envs.ml1 import ml1_family

    _, part, seeds, noise = work
    family = ml1_family(
        family_kwargs["env_name"], family_kwargs["task_seed"], family_kwargs.get("split")
    )
    collector = ScriptedCollector(family, steps)
    try:
        return collector.collect(part, noise, episodes, seeds, lambda n: None)
    finally:
        collector.close()


def _concatenate(parts: list[Episodes]) -> Episodes:
    """Episodes of consecutive task parts as one."""
    fields = {f: np.concatenate([getattr(p.transitions, f) for p in parts]) for f in FIELDS}
    return Episodes(
        Transitions(**fields),
        np.concatenate([p.returns for p in parts]),
        np.concatenate([p.success for p in parts]),
    )


@register("dataset", "scripted")
class ScriptedRollouts:
    """Meta-World's scripted expert with action noise; qualities by noise level (module doc).

    Args:
        episodes: episodes per task and quality.
        expert_noise: σ of the Gaussian action noise of the expert quality.
        noise_grid: the σ candidates for the medium quality.
        calibration_tasks: training tasks (the first ones) on which each candidate is rolled
            out once to choose the medium σ.
        episode_steps: steps per stored episode (0: the family's horizon, 500); fewer only for
            smoke tests (the tiny scale), whose data mean nothing.
        workers: processes that collect tasks side by side (0: one per core, at most 8); the
            data do not depend on it.
        tiers: the qualities collected (all three, and `mixed` of them, by default; the
            published recipe, `recipes/envs/groups/ml1pub.gin`, collects the expert alone).
    """

    def __init__(
        self,
        *,
        episodes: PositiveInt = 5,
        expert_noise: PositiveFloat = 0.1,
        noise_grid: PositiveFloats = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0),
        calibration_tasks: PositiveInt = 10,
        episode_steps: Count = 0,
        workers: Count = 0,
        tiers: Sequence[str] = TIERS,
    ):
        tiers = (tiers,) if isinstance(tiers, str) else tuple(tiers)
        if not tiers or not set(tiers) <= set(TIERS) or len(set(tiers)) != len(tiers):
            raise DatasetError(
                f"scripted.tiers = {list(tiers)!r}: expected distinct qualities of "
                f"{list(TIERS)} (at least one)"
            )
        self.tiers = tuple(t for t in TIERS if t in tiers)
        self.episodes, self.expert_noise = episodes, float(expert_noise)
        self.noise_grid = tuple(float(s) for s in noise_grid)
        self.calibration_tasks, self.episode_steps = calibration_tasks, episode_steps
        self.workers = workers or min(8, os.cpu_count() or 1)

    def settings(self) -> dict[str, Any]:
        return {
            "protocol": type(self).__name__,
            "episodes": self.episodes,
            "expert_noise": self.expert_noise,
            "noise_grid": list(self.noise_grid),
            "calibration_tasks": self.calibration_tasks,
            "episode_steps": self.episode_steps,
            # recorded where it is not every tier, so datasets built before it existed still
            # read as built with these settings
            **({"tiers": list(self.tiers)} if self.tiers != TIERS else {}),
        }

    def build(
        self,
        family: EnvFamily,
        *,
        seed: int,
        progress: Progress | None = None,
        tasks: Sequence[int] | None = None,
        resume: Path | None = None,
    ) -> Collected:
        """All qualities of `tasks` (default: every task). `resume` is accepted and unused: a
        build takes minutes and restarts from the beginning."""
        if not getattr(family, "env_name", None):
            raise DatasetError(
                f"the scripted protocol needs a Meta-World family (ml1_<name>); "
                f"{type(family).__name__} has no scripted expert"
            )
        steps = self.episode_steps or family.horizon
        chosen = list(range(len(family.all_tasks()))) if tasks is None else list(tasks)
        calibrate = "medium" in self.tiers
        train = family.split_indices()[0][: self.calibration_tasks] if calibrate else []
        total = steps * (
            len(train) * (2 + len(self.noise_grid)) + len(chosen) * len(self.tiers) * self.episodes
        )
        done = [0]

        def tick(n: int) -> None:
            done[0] += n
            if progress is not None:
                progress(done[0], total)

        collector = ScriptedCollector(family, steps)
        try:
            medium, calibration = (
                self._calibrate(collector, train, seed, tick) if calibrate else (None, {})
            )
            noise = {"expert": self.expert_noise, "medium": medium, "random": UNIFORM}
            # each tier keeps its place in TIERS in the generator seeds, whichever are built
            jobs = [(t, [seed, i], noise[t]) for i, t in enumerate(TIERS) if t in self.tiers]
            collected = self._collect(collector, chosen, jobs, tick)
        finally:
            collector.close()
        policy = type(collector.policy).__name__
        qualities, sources = {}, {}
        for tier, episodes in collected.items():
            data = episodes.transitions
            qualities[tier] = pack([(data, np.ones(data.reward.shape, dtype=bool))])
            sources[tier] = [
                {
                    "policy": policy,
                    "noise": "uniform" if noise[tier] == UNIFORM else noise[tier],
                    "episodes": self.episodes,
                    "mean_return": [float(episodes.returns[i].mean())],
                    "success_rate": float(episodes.success[i].mean()),
                    **({"calibration": calibration} if tier == "medium" else {}),
                }
                for i in range(len(chosen))
            ]
        if self.tiers != TIERS:  # `mixed` is the three together
            return Collected(qualities, sources, self.settings())
        qualities["mixed"] = pack(
            [(e.transitions, np.ones(e.transitions.reward.shape, bool)) for e in collected.values()]
        )
        sources["mixed"] = [
            {
                "policy": policy,
                "noise": ["uniform" if noise[t] == UNIFORM else noise[t] for t in TIERS],
                "mean_return": [float(collected[t].returns[i].mean()) for t in TIERS],
                "success_rate": float(np.mean([collected[t].success[i] for t in TIERS])),
            }
            for i in range(len(chosen))
        ]
        return Collected(qualities, sources, self.settings())

    def _collect(self, collector, tasks, jobs, tick) -> dict[str, Episodes]:
        """Every quality of `tasks`, the tasks split into contiguous parts over the workers
        (each task's episodes have their own generators, so the split changes nothing); one
        worker collects in `collector` itself. A part is at most `PART_STEPS` simulator steps,
        so that progress is reported every minute or so of a long build."""
        steps_per_task = collector.steps * self.episodes
        count = (
            self.workers
            if self.workers == 1
            else max(self.workers, -(-len(tasks) * steps_per_task // PART_STEPS))
        )
        parts = [list(p) for p in np.array_split(np.asarray(tasks), count) if len(p)]
        work = [(tier, part, seeds, noise) for tier, seeds, noise in jobs for part in parts]
        family, steps, episodes = collector.family, collector.steps, self.episodes

        def done(part, result: Episodes) -> Episodes:
            tick(steps * episodes * len(part))
            return result

        if len(parts) == 1:
            results = [
                collector.collect(part, noise, episodes, seeds, tick)
                for _, part, seeds, noise in work
            ]
        else:
            context = multiprocessing.get_context("spawn")  # no forked torch or MuJoCo state
            with ProcessPoolExecutor(min(self.workers, len(parts)), mp_context=context) as pool:
                futures = [
                    pool.submit(_collect_part, family.gym_kwargs(), steps, w, episodes)
                    for w in work
                ]
                try:
                    results = [done(w[1], f.result()) for w, f in zip(work, futures, strict=True)]
                except BrokenProcessPool:
                    raise DatasetError(
                        "a worker collecting the scripted episodes ended without an error of "
                        "its own (killed, or out of memory?): run the command again"
                    ) from None
        by_tier: dict[str, list[Episodes]] = {}
        for (tier, *_), result in zip(work, results, strict=True):
            by_tier.setdefault(tier, []).append(result)
        return {tier: _concatenate(parts) for tier, parts in by_tier.items()}

    def _calibrate(self, collector, tasks, seed, tick) -> tuple[float, dict[str, float]]:
        """The medium σ: of the grid, the one whose mean return on `tasks` is closest to
        halfway between the expert's and uniform random actions'; every candidate's return."""
        calibration_seed = [seed, len(TIERS)]  # apart from every quality's episodes

        def mean_return(noise: float, i: int) -> float:
            episodes = collector.collect(tasks, noise, 1, [*calibration_seed, i], tick)
            return float(episodes.returns.mean())

        expert = mean_return(self.expert_noise, 0)
        random = mean_return(UNIFORM, 1)
        candidates = {s: mean_return(s, 2 + i) for i, s in enumerate(self.noise_grid)}
        halfway = (expert + random) / 2
        medium = min(candidates, key=lambda s: abs(candidates[s] - halfway))
        table = {"expert": expert, "random": random}
        table.update({f"noise {s}": r for s, r in candidates.items()})
        return medium, table
