"""Contracts of what a run is made from and how it is driven: environment families, dataset
protocols, the task data, samplers, a step's sizes, the training loop, algorithms, meta-tests,
analyses and study backends.

Environment families and samplers are exercised for real at tiny sizes. The other kinds are
checked at their interface only — a probe cannot afford to build a dataset or train — and their
behaviour is tested end to end at the tiny scale (tests/e2e).
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Protocol

import numpy as np
import torch

from components.contracts.core import (
    Broken,
    _bound_arguments,
    _required_supplied,
    build,
    contract,
    has_methods,
    takes,
    target_of,
    tensor,
)
from components.data.store import QualityData
from components.transitions import FIELDS, Transitions


class Family(Protocol):
    obs_dim: int
    act_dim: int
    horizon: int

    def all_tasks(self) -> list[dict]: ...
    def split_indices(self) -> tuple[list[int], list[int]]: ...
    def make(self, task: Any = None) -> Any: ...


class DatasetProtocol(Protocol):
    def settings(self) -> dict: ...
    def build(self, family, *, seed: int, progress=None, tasks=None) -> Any: ...


class Sampler(Protocol):
    def sample(self, positions: torch.Tensor, batch: int, **kwargs: Any) -> Transitions: ...


class TaskDataProtocol(Protocol):
    def __init__(self, *, run: Any) -> None: ...


class SizesProtocol(Protocol):
    latent_dim: int
    meta_batch: int
    context_batch: int
    rl_batch: int


class Loop(Protocol):
    def __init__(self, *, run: Any) -> None: ...
    def run(self, learner: Any) -> Any: ...


class Algorithm(Protocol):
    def __init__(self, *, data: Any, loop: Any) -> None: ...
    def run(self) -> dict: ...


class MetaTestProtocol(Protocol):
    def __call__(self, *, family, data, tasks, layout, encoder, act, device, seed) -> Any: ...


class Backend(Protocol):
    def run(self, jobs: list, *args: Any, **kwargs: Any) -> list: ...


@contract("env", Family)
def probe_env(factory, given) -> None:
    family = build(factory, "be built as cls(seed=)", seed=0)
    tasks = family.all_tasks()
    try:
        json.dumps(tasks)
    except TypeError as e:
        raise Broken("describe each task in plain JSON (a manifest stores them)", str(e)) from e
    train, test = family.split_indices()
    if not test or not train or sorted(set(train) | set(test)) != list(range(len(tasks))):
        raise Broken(
            "split its tasks into non-empty train and test lists that cover every task",
            f"train {train[:5]}…, test {test[:5]}… of {len(tasks)} tasks",
        )
    env = family.make(tasks[test[0]])
    try:
        bound = family.action_bound
        space = env.action_space
        if np.shape(space.low) != (family.act_dim,) or not (
            np.allclose(space.low, -bound) and np.allclose(space.high, bound)
        ):
            raise Broken(  # stored actions are held to ±action_bound when a dataset loads
                f"act in [-{bound:g}, {bound:g}]^{family.act_dim} (its action_bound, act_dim)",
                f"action space {space}",
            )
        obs, _ = env.reset(seed=0)
        if np.shape(obs) != (family.obs_dim,):
            raise Broken(f"observe [{family.obs_dim}] (its obs_dim)", f"reset: {np.shape(obs)}")
        action = np.zeros(family.act_dim, dtype=np.float32)
        obs, reward, *_ = env.step(action)
        if np.shape(obs) != (family.obs_dim,) or not np.isfinite(reward):
            raise Broken("step to a finite reward and an [obs_dim] observation", f"{reward}")
    finally:
        env.close()


@contract("dataset", DatasetProtocol)
def probe_dataset(factory, given) -> None:
    protocol = build(factory, "be built as cls() (its settings are gin bindings)")
    has_methods(type(protocol), ("settings", "build"), "offer settings() and build()")
    settings = protocol.settings()
    try:
        json.dumps(settings)
    except TypeError as e:
        raise Broken("return JSON-able settings (a manifest stores them)", str(e)) from e
    params = inspect.signature(protocol.build).parameters
    missing = [p for p in ("seed", "progress", "tasks") if p not in params]
    if missing:
        raise Broken("take build(family, *, seed, progress, tasks)", f"build lacks {missing}")


@contract("sampler", Sampler)
def probe_sampler(factory, given) -> None:
    k, n = 3, 10
    rng = np.random.default_rng(0)
    arrays = {
        "obs": rng.normal(size=(k, n, 2)),
        "action": rng.uniform(-1, 1, size=(k, n, 2)),
        "reward": rng.normal(size=(k, n)),
        "sparse_reward": np.zeros((k, n)),
        "next_obs": rng.normal(size=(k, n, 2)),
        "terminated": np.zeros((k, n), dtype=bool),
        "truncated": np.zeros((k, n), dtype=bool),
    }
    data = QualityData(Transitions(**{f: arrays[f] for f in FIELDS}), np.full(k, n))
    sampler = factory(data, [0, 2], generator=torch.Generator().manual_seed(0))
    batch = sampler.sample(torch.tensor([0, 1, 1]), 4)
    tensor(batch.obs, (3, 4, 2), "observations [T, B, F]")
    tensor(batch.reward, (3, 4), "rewards [T, B]")


@contract("task_data", TaskDataProtocol)
def probe_task_data(factory, given) -> None:
    takes(factory, ("run",), "be built as cls(run=RunContext)")


@contract("sizes", SizesProtocol)
def probe_sizes(factory, given) -> None:
    sizes = build(factory, "be built as cls() (its settings are gin bindings)")
    for name in ("latent_dim", "meta_batch", "context_batch", "rl_batch"):
        size = getattr(sizes, name, None)
        if not isinstance(size, int) or size < 1:
            raise Broken(f"have a positive int {name}", f"it has {size!r}")


@contract("loop", Loop)
def probe_loop(factory, given) -> None:
    takes(factory, ("run",), "be built as cls(run=RunContext)")
    has_methods(factory, ("run",), "offer run(learner)")


@contract("algorithm", Algorithm)
def probe_algorithm(factory, given) -> None:
    try:
        params = set(inspect.signature(target_of(factory)).parameters)
    except (TypeError, ValueError):
        return
    promise = "be built as cls(data=, loop=) or cls(run=) (the experiment hands what it names)"
    if not params & {"run", "data", "loop"}:
        raise Broken(promise, f"its constructor takes {sorted(params) or 'nothing'}")
    handed = sorted(params & {"run", "data", "loop"})
    # every other argument has a default or a binding: else gin fails with a traceback at build
    _required_supplied(factory, promise, {*handed, *_bound_arguments(factory)}, handed)
    has_methods(factory, ("run",), "offer run() -> metrics")


@contract("meta_test", MetaTestProtocol)
def probe_meta_test(factory, given) -> None:
    evaluator = build(factory, "be built as cls() (its settings are gin bindings)")
    names = ("family", "data", "tasks", "layout", "encoder", "act", "device", "seed")
    takes(evaluator.__call__, names, f"be called with {', '.join(names)}")


@contract("backend", Backend)
def probe_backend(factory, given) -> None:
    takes(factory, ("workers",), "be built as cls(workers=)")
    has_methods(factory, ("run",), "offer run(jobs, ...)")
