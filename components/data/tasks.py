"""The offline task data of a run: which dataset, which quality, and the samplers built on it.

Every algorithm composes it (the experiment builds it from the `task_data.*` bindings and hands
it over), and `tools/collect.py` reads the same bindings, so a run and the collection tool find
the same dataset: `<root>/<family>/<protocol>-s<seed>[-<tag>][-shards<K>]`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gin
import numpy as np
import torch

import components.numerics as numerics
from components.data.build import ensure_dataset
from components.data.returns import dataset_returns
from components.data.sampler import TensorSampler
from components.data.shards import load_merged
from components.data.store import DatasetError
from components.outputs.progress import progress_lines
from components.runtime import resolve_device
from registry import RunContext, get, register
from registry.constraints import Count
from registry.validation import check_arguments


@register("task_data", "task_data")
class TaskData:
    """The offline meta-RL data of one run: its tasks, dataset, samplers and test data.

    The family's tasks, the dataset, a sampler over the training tasks, and the test tasks
    with the data their contexts are drawn from.

    Args:
        run: the run's environment column, scale, seed (the sampler's) and device.
        family: the environment family (default: the run's env column).
        protocol: how the dataset was collected (`checkpoints`, `replay`, `relabeled`).
        quality: the quality trained on (`expert`, `medium`, `mixed`, ...).
        test_quality: the quality the meta-test draws contexts from (default: `quality`).
        seed: the dataset's seed (task split and behaviour data); fixed across run seeds.
        root: dataset store root (default: $FOCALPP_DATA or the user cache).
        tag: dataset variant whose collection settings differ from the default ones (scales
            that change them set it, e.g. 'paper'): `<protocol>-s<seed>-<tag>`.
        shards: K ≥ 2 to read the dataset built in K task shards
            (`<protocol>-s<seed>-<tag>-shards<K>`, components/data/shards.py); 0: in one piece.
        standardise_obs: the learner's networks see observations standardised per dimension
            by the mean and standard deviation of the training tasks' data of `quality`
            (components/data/context.py); Meta-World's positions vary by centimetres around
            offsets of decimetres, which an unstandardised network hardly tells apart.

    Built: `family` (the environment family), `dataset` (the store's dataset), `train` (a
    `TensorSampler` over the training tasks, drawing with `generator`, seeded by the run's
    seed), `test_tasks`, `test_data`, `train_vectors` (the training tasks' parameters [K, ·]).
    """

    def __init__(
        self,
        *,
        run: RunContext,
        family: str | None = None,
        protocol: str = "checkpoints",
        quality: str = "expert",
        test_quality: str | None = None,
        seed: int = 0,
        root: str | None = None,
        tag: str | None = None,
        shards: Count = 0,
        standardise_obs: bool = False,
    ):
        check_arguments("task_data", TaskData.__init__, locals())
        self.run = run
        self.device = resolve_device(run.device)
        self.family_name = family or run.env
        self.family = get("env", self.family_name)(seed=seed)
        where = {
            "root": Path(root) if root else None,
            "tag": tag,
            "scale": run.scale,
            "family": self.family,
        }
        if shards:  # built beforehand, shard by shard (a study with dataset_shards)
            self.dataset = load_merged(self.family_name, protocol, seed, shards, **where)
        else:
            self.dataset = ensure_dataset(
                self.family_name, protocol, seed, progress=_dataset_progress(), **where
            )
        check_portable_data(self.dataset)
        self.generator = torch.Generator().manual_seed(run.seed)
        self.train = TensorSampler(
            self.dataset.quality(quality),
            self.dataset.split_indices("train"),
            device=self.device,
            generator=self.generator,
        )
        self.test_tasks = self.dataset.split_indices("test")
        self.quality, self.test_quality = quality, test_quality or quality
        self.standardise_obs = standardise_obs
        self._dataset_returns: np.ndarray | None = None
        self.test_data = self.dataset.quality(self.test_quality)
        tasks = self.family.all_tasks()
        vectors = self.family.task_vectors([tasks[i] for i in self.train.task_ids])
        self.train_vectors = torch.as_tensor(vectors, dtype=torch.float32, device=self.device)

    @property
    def sparse(self) -> bool:
        """The family scores sparse rewards, and contexts show them (a goal radius is set)."""
        return self.family.goal_radius is not None

    def obs_statistics(self) -> dict[str, torch.Tensor]:
        """`obs_mean` and `obs_std` [F] of the training tasks' real transitions of the quality
        trained on, where `standardise_obs` asks for them (a dimension that never varies, such
        as Meta-World's hidden goal, keeps its scale: std 1)."""
        if not self.standardise_obs:
            return {}
        data = self.dataset.quality(self.quality)
        rows = [data.transitions.obs[k, : data.length[k]] for k in self.train.task_ids]
        obs = np.concatenate(rows).astype(np.float64)
        mean, std = obs.mean(0), obs.std(0)
        std = np.where(std > 1e-6, std, 1.0)
        return {
            "obs_mean": torch.as_tensor(mean, dtype=torch.float32, device=self.device),
            "obs_std": torch.as_tensor(std, dtype=torch.float32, device=self.device),
        }

    def score_references(self) -> dict[str, Any]:
        """What the meta-test needs besides returns to score this family: on families scored
        by normalised score (Meta-World), `dataset_returns` — each test task's mean episode
        return in the data of the quality trained on, or where the family scores against the
        whole dataset (`score_reference = "dataset"`), the mean return of all its episodes."""
        if not self.family.normalised_score:
            return {}
        if self._dataset_returns is None:  # every meta-test asks; the data do not change
            trained_on = self.dataset.quality(self.quality)
            self._dataset_returns = dataset_returns(trained_on, self.test_tasks)
            if self.family.score_reference == "dataset":  # every episode of every task
                every = dataset_returns(trained_on, range(len(self.family.all_tasks())), True)
                self._dataset_returns = np.full(len(self.test_tasks), every)
        return {"dataset_returns": self._dataset_returns}

    def describe(self) -> str:
        return f"{self.dataset.path} (quality {self.quality!r})"


def bound(name: str, default: Any = None) -> Any:
    """What the composed recipe files bind as `task_data.<name>`, else `default` (for tools that
    find a run's dataset without building a run, as `tools/collect.py`)."""
    try:
        value = gin.query_parameter(f"task_data.{name}")
    except (ValueError, KeyError):
        return default
    return default if value is None else value


def check_portable_data(dataset) -> None:
    """A run of portable numerics trains on data built with them: data of one machine would
    give its numbers on that machine only."""
    if numerics.mode() != numerics.PORTABLE:
        return
    built = (dataset.manifest.get("numerics") or {}).get("mode", "unrecorded")
    if built != numerics.PORTABLE:
        raise DatasetError(
            f"{dataset.path} was built with {built} numerics (this machine's own kernels), and "
            "this run has portable ones, which need data built the same on every CPU: build it "
            "into another store (task_data.root, or tools/collect.py --out) or delete it to "
            "rebuild, or run with --numerics free"
        )


def _dataset_progress():
    """A callback that prints the dataset build's progress now and then (a build is rare)."""
    return progress_lines("building dataset", every=10.0)
