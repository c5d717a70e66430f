"""The meta-test under every source of context, on training and test tasks alike.

A context-based method is only as good as the context it is given. The successors of FOCAL++
(CORRO, CSRO, UNICORN) report how the return holds when the context was not collected by the
task's own behaviour policy. This analysis runs the meta-test of a trained run (same policy,
same scoring, `runs` per task) with the context drawn from each source, on both splits:

- `own`: the task's own behaviour data of the run's test quality (the usual meta-test);
- `<quality>`: the task's own behaviour data of each other stored quality;
- `other_policy`: collected anew in the task by the expert behaviour policy of another
  training task (a seeded donor per task; the dataset keeps the policies, or a `scripted`
  dataset's expert is told the donor's goal), the
  out-of-distribution context of CORRO and UNICORN — on every family, dynamics included;
- `online`: collected in the task by the run itself, with nothing known yet: CSRO's non-prior
  collection simplified — the first half of the episodes with uniform random actions, the rest
  with the meta-policy conditioned on z = 0.

Each cell holds the headline return (`mean`, `std`: the appendix sparse return on sparse
families), the paper-comparable one where the family has it (`paper_mean`) and the dense one
(`dense_mean`, the metric of the successors' MuJoCo tables). Training tasks are capped at
`max_train_tasks` (seeded) to bound the cost.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from components.data.behaviour import Rollouts, rollout
from components.data.policies import expert_agent, keeps_experts
from components.data.protocols import pack
from components.data.store import QualityData
from components.transitions import FIELDS
from registry import register
from registry.constraints import PositiveInt
from registry.validation import check_arguments


class _Collector:
    """What `components.data.behaviour.rollout` drives: K tasks × E episodes, acting from
    observations [K, E, F]; the first `random_episodes` of each task act uniformly at random,
    the others by the meta-policy with z = 0."""

    def __init__(self, policy, n_tasks: int, latent_dim: int, random_episodes: int, device, rng):
        self.policy, self.n_tasks, self.latent_dim = policy, n_tasks, latent_dim
        self.random_episodes, self.device, self.rng = random_episodes, device, rng

    def act(self, obs: torch.Tensor) -> torch.Tensor:
        k, e, _ = obs.shape
        flat = obs.reshape(k * e, -1).to(self.device)
        with torch.no_grad():
            action = self.policy(flat, torch.zeros(k * e, self.latent_dim, device=self.device))
        action = action.reshape(k, e, -1).cpu()
        uniform = torch.as_tensor(self.rng.uniform(-1, 1, action.shape), dtype=action.dtype)
        action[:, : self.random_episodes] = uniform[:, : self.random_episodes]
        return action


def _placed(rolled: Rollouts, tasks: list[int], n_tasks: int) -> QualityData:
    """Rollouts of `tasks` as a dataset quality with those rows filled, the others empty."""
    data = pack([(rolled.transitions, rolled.alive)])
    full = data.transitions.map(lambda x: np.zeros((n_tasks, *x.shape[1:]), dtype=x.dtype))
    rows = np.asarray(tasks)
    for field in FIELDS:
        getattr(full, field)[rows] = getattr(data.transitions, field)
    length = np.zeros(n_tasks, dtype=np.int64)
    length[rows] = data.length
    return QualityData(full, length)


@register("analysis", "context_grid")
class ContextGrid:
    """Meta-test return per (split, context source).

    Args:
        seed: seeds the donors, the training-task subset and the collections.
        max_train_tasks: training tasks evaluated (a seeded subset when there are more).
        episodes: episodes collected per task for `other_policy` and `online` (default: as
            many as the meta-test's context needs).
    """

    section = "context_grid"  # the report section that tables it

    def __init__(
        self, *, seed: int = 0, max_train_tasks: PositiveInt = 20, episodes: int | None = None
    ):
        check_arguments("context_grid", type(self).__init__, locals())
        self.seed, self.max_train_tasks, self.episodes = seed, max_train_tasks, episodes

    def __call__(self, trained, figures: Path) -> dict:
        rng = np.random.default_rng(self.seed)
        family, dataset = trained.family, trained.data.dataset
        train = dataset.split_indices("train")
        if len(train) > self.max_train_tasks:
            train = sorted(rng.choice(train, self.max_train_tasks, replace=False).tolist())
        splits = {"train": train, "test": list(trained.data.test_tasks)}
        evaluator = trained.loop.meta_test
        episodes = self.episodes or max(1, evaluator.context_transitions // family.horizon)
        n_tasks = len(dataset.tasks)
        all_train = dataset.split_indices("train")
        stored = {"own": trained.data.test_data}  # loaded once, for both splits
        for quality in dataset.qualities:
            if quality != trained.data.test_quality:
                stored[quality] = dataset.quality(quality)
        latent_dim = _latent_dim(trained)
        cells: dict[str, dict[str, dict[str, float]]] = {}
        donors_of: dict[str, dict[str, int]] = {}
        for split, tasks in splits.items():
            sources = dict(stored)
            env = family.make_batched(
                [family.all_tasks()[t] for t in tasks for _ in range(episodes)]
            )
            try:
                if keeps_experts(dataset):
                    donors = [int(rng.choice([d for d in all_train if d != t])) for t in tasks]
                    donors_of[split] = dict(zip(map(str, tasks), donors, strict=True))
                    agent = expert_agent(dataset, family, donors, self.seed)
                    torch.manual_seed(self.seed)
                    rolled = rollout(family, env, agent, episodes, seed=self.seed)
                    sources["other_policy"] = _placed(rolled, tasks, n_tasks)
                collector = _Collector(
                    trained.act,
                    len(tasks),
                    latent_dim,
                    random_episodes=(episodes + 1) // 2,
                    device=trained.device,
                    rng=rng,
                )
                rolled = rollout(family, env, collector, episodes, seed=self.seed + 1)
                sources["online"] = _placed(rolled, tasks, n_tasks)
            finally:
                env.close()
            cells[split] = {}
            for source, data in sources.items():
                result = evaluator(
                    family=family,
                    data=data,
                    tasks=tasks,
                    layout=trained.layout,
                    encoder=trained.encoder,
                    act=trained.act,
                    device=trained.device,
                    seed=trained.run_context.seed,
                )
                # dense beside the headline: the successors report MuJoCo in dense return
                cell = {"mean": result.mean, "std": result.std, "dense_mean": result.dense_mean}
                if result.paper_returns is not None:
                    cell["paper_mean"] = float(result.paper_returns.mean())
                cells[split][source] = cell
        record: dict = {"cells": cells, "episodes": episodes, "tasks": splits}
        if donors_of:
            record["donors"] = donors_of
        else:
            record["other_policy"] = (
                f"not run: {dataset.path} keeps no behaviour policies (built before datasets "
                f"kept them); move it away and rebuild it: {dataset.manifest.get('rebuild', '')}"
            )
        return record


def _latent_dim(trained) -> int:
    probe = torch.zeros(1, 1, sum(trained.layout.sizes), device=trained.device)
    with torch.no_grad():
        return int(trained.encoder(probe).mean.shape[-1])
