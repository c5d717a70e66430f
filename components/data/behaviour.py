"""Train one behaviour SAC per task, all tasks at once, and roll policies out in batches.

`train_behaviour` steps every task's environment together (one batched env) and updates the
task-batched SAC on [K, B, ...] batches, calling back at checkpoints. `rollout` runs E
stochastic episodes per task in one batched env of K·E environments. Neither loops over tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from components.data.replay import TaskReplay
from components.data.store import DatasetError
from components.envs.family import EnvFamily, Task
from components.outputs.run_dir import atomic_file
from components.rl.sac import TaskBatchedSAC
from components.transitions import Transitions

Progress = Callable[[int, int], None]  # (done, total)


@dataclass(frozen=True)
class Rollouts:
    """E episodes per task, unpacked: fields [K, E·H, ...] with `alive` [K, E·H] marking real steps.

    `returns` and `sparse_returns` are per episode, [K, E].
    """

    transitions: Transitions
    alive: np.ndarray
    returns: np.ndarray
    sparse_returns: np.ndarray


def rollout(family: EnvFamily, env, agent: TaskBatchedSAC, episodes: int, seed: int) -> Rollouts:
    """Run `episodes` stochastic episodes per task; `env` is a batched env over K·E tasks.

    Args:
        family: the tasks' family (its horizon).
        env: `family.make_batched(tasks repeated E times, task-major)`.
        agent: the K policies.
        episodes: E.
        seed: reset seed of the batched env.
    """
    k, h = agent.n_tasks, family.horizon
    obs = env.reset(seed=seed)
    steps = []
    for _ in range(h):
        o = torch.as_tensor(obs, dtype=torch.float32).reshape(k, episodes, -1)
        action = agent.act(o).reshape(k * episodes, -1).numpy().astype(np.float64)
        step = env.step(action)
        steps.append((obs, action, step))
        obs = step.obs

    # [H, K·E, ...] -> [K, E·H, ...] with episodes kept contiguous in time order
    def stack(values: list[np.ndarray]) -> np.ndarray:
        x = np.stack(values, axis=1)  # [K·E, H, ...]
        return x.reshape(k, episodes * h, *x.shape[2:])

    alive = stack([s.alive for _, _, s in steps])
    transitions = Transitions(
        obs=stack([o for o, _, _ in steps]),
        action=stack([a for _, a, _ in steps]),
        reward=stack([s.reward for _, _, s in steps]),
        sparse_reward=stack([s.sparse_reward for _, _, s in steps]),
        next_obs=stack([s.obs for _, _, s in steps]),
        terminated=stack([s.terminated for _, _, s in steps]),
        truncated=stack([s.truncated for _, _, s in steps]),
    )
    per_episode = alive.reshape(k, episodes, h)
    returns = (transitions.reward.reshape(k, episodes, h) * per_episode).sum(-1)
    sparse = (transitions.sparse_reward.reshape(k, episodes, h) * per_episode).sum(-1)
    return Rollouts(transitions, alive, returns, sparse)


@dataclass(frozen=True)
class Resume:
    """Resume points of a behaviour build, so that a killed build goes on where it stopped.

    Every `every` steps (per task) every episode restarts, reset with a seed drawn from the
    build's seed and the step (the cut-off episodes end `truncated`), and the whole state —
    networks, optimisers, replay, random generators and the protocol's own (`extra()`: the
    rollouts and policies saved so far) — is written to `path`, atomically. A build that
    finds the file goes on from it (`restore(extra)` hands the protocol its part back). Both
    restart at the same steps, so a resumed build gives the same bytes as one never stopped.
    `identity` (settings, seed, tasks) must match the saved one: another build's file is
    refused, not continued.
    """

    path: Path
    every: int
    identity: dict[str, Any]
    extra: Callable[[], dict[str, Any]] = dict
    restore: Callable[[dict[str, Any]], None] = lambda extra: None

    def restart_seed(self, seed: int, step: int) -> int:
        return int(np.random.SeedSequence([seed, step]).generate_state(1)[0])

    def load(self) -> dict[str, Any] | None:
        if not self.path.exists():
            return None
        try:
            state = torch.load(self.path, weights_only=False)
        except Exception as e:  # a file torn by a crash is never renamed into place
            raise DatasetError(
                f"{self.path}: cannot read the saved state of a stopped build ({e}); delete "
                "it to build from the start"
            ) from e
        if state.get("identity") != self.identity:
            raise DatasetError(
                f"{self.path} holds a stopped build of other settings:\n  saved:     "
                f"{state.get('identity')}\n  requested: {self.identity}\ndelete it to build "
                "from the start with these settings"
            )
        return state

    def save(self, state: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(self.path) as f:
            torch.save({**state, "identity": self.identity}, f)


def train_behaviour(
    family: EnvFamily,
    tasks: Sequence[Task],
    agent: TaskBatchedSAC,
    *,
    env_steps: int,
    start_steps: int,
    batch_size: int,
    checkpoint_steps: Sequence[int] = (),
    on_checkpoint: Callable[[int], None] | None = None,
    seed: int,
    progress: Progress | None = None,
    lr_at: Callable[[int], float] | None = None,
    resume: Resume | None = None,
) -> TaskReplay:
    """Train `agent` (K = len(tasks)) for `env_steps` steps per task; return the replay buffer.

    `on_checkpoint(step)` is called before the step-th environment step for every step in
    `checkpoint_steps` (use `env_steps` for the final policy). `lr_at(step)`, if given, sets the
    learning rate before each gradient step. `resume`: resume points (see `Resume`).
    """
    k = len(tasks)
    env = family.make_batched(tasks, autoreset=True)
    replay = TaskReplay(
        n_tasks=k, capacity=env_steps, obs_dim=family.obs_dim, act_dim=family.act_dim
    )
    rng = np.random.default_rng(seed)
    first = 0
    saved = resume.load() if resume is not None else None
    if saved is not None:  # go on from the last resume point, as if never stopped
        first = saved["step"]
        agent.load_training_state(saved["agent"])
        replay.load_state(saved["replay"])
        rng.bit_generator.state = saved["rng"]
        torch.set_rng_state(saved["torch_rng"])
        resume.restore(saved["extra"])
        env.reset(seed=resume.restart_seed(seed, first))
    else:
        env.reset(seed=seed)
    pending = sorted(s for s in set(checkpoint_steps) if s > first or saved is None)
    for step in range(first, env_steps + 1):
        while pending and pending[0] == step:
            step_at = pending.pop(0)
            if on_checkpoint is not None:
                on_checkpoint(step_at)
        if step == env_steps:
            break
        if resume is not None and step > first and step % resume.every == 0:
            replay.cut_episodes()
            env.reset(seed=resume.restart_seed(seed, step))
            resume.save(
                {
                    "step": step,
                    "agent": agent.training_state(),
                    "replay": replay.state(),
                    "rng": rng.bit_generator.state,
                    "torch_rng": torch.get_rng_state(),
                    "extra": resume.extra(),
                }
            )
        obs = env.current
        if step < start_steps:
            action = rng.uniform(-1.0, 1.0, (k, family.act_dim))
        else:
            o = torch.as_tensor(obs, dtype=torch.float32)[:, None]
            action = agent.act(o)[:, 0].numpy().astype(np.float64)
        s = env.step(action)
        replay.add(
            Transitions(obs, action, s.reward, s.sparse_reward, s.obs, s.terminated, s.truncated)
        )
        if step + 1 >= start_steps:
            if lr_at is not None:
                agent.set_learning_rate(lr_at(step))
            agent.update(replay.sample(batch_size))
        if progress is not None:
            progress(step + 1, env_steps)
    env.close()
    return replay
