"""The test-context protocol's contract: scored on a real family's test tasks by a real context
encoder, it returns one finite return per row, the same on a second call, the same for a seed
scored alone or beside another, and without the test tasks' offline data where it says it
does not read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from components.contracts.core import Broken, build, contract, target_of
from components.evaluation.episodes import Returns
from components.evaluation.test_contexts import NotApplicable, Scene
from components.evaluation.test_contexts.sealed import TestDataRead, without_test_data
from registry import entry_of


class TestContext(Protocol):
    reads_test_data: bool

    def __call__(self, scene: Scene) -> Returns: ...


def probe_scene(seeds: list[int]) -> tuple[Scene, Any]:
    """Two Sparse-Point-Robot test tasks, one run each, for `seeds`; a deterministic policy
    that heads along z; zero-filled offline data (a protocol that reads it sees real rows),
    three training tasks of the same, and the store dataset they stand for: its manifest (tasks,
    split, one quality) without files, so that both paths to the test tasks' offline data, the
    data and the dataset, are there to be sealed."""
    from components.data.context import ContextLayout
    from components.data.sampler import TensorSampler
    from components.data.store import Dataset, QualityData
    from components.encoders.context import ContextEncoder
    from components.envs.point_robot import SparsePointRobot
    from components.transitions import FIELDS, Transitions

    family, layout = SparsePointRobot(seed=0), ContextLayout(2, 2, sparse=True)
    train, test = family.split_indices()
    tasks = test[:2]
    k, n = len(family.all_tasks()), 8
    shapes = dict(obs=(2,), action=(2,), next_obs=(2,))
    flags = ("terminated", "truncated")
    arrays = {
        f: np.zeros((k, n, *shapes.get(f, ())), bool if f in flags else np.float32) for f in FIELDS
    }
    data = QualityData(Transitions(**arrays), np.full(k, n))
    dataset = Dataset(
        path=Path("probe-dataset-without-files"),
        manifest={
            "family": "sparse_point_robot",
            "tasks": family.all_tasks(),
            "split": {"train": train, "test": test},
            "qualities": {"expert": {"per_task_counts": [n] * k, "files": {}, "sources": []}},
        },
    )
    torch.manual_seed(0)
    encoder = ContextEncoder(sizes=layout.sizes, latent_dim=2)
    positions = torch.arange(len(tasks))
    env = family.make_batched([family.all_tasks()[t] for t in tasks] * len(seeds))
    scene = Scene(
        family=family,
        env=env,
        layout=layout,
        encoder=encoder,
        act=lambda obs, z: torch.tanh(z - 0.1 * obs),
        device=torch.device("cpu"),
        seeds=seeds,
        test_tasks=tasks,
        positions=positions,
        context_transitions=2 * family.horizon,
        data=data,
        dataset=dataset,
        train=TensorSampler(data, train[:3]),
    )
    return scene, env


@contract("test_context", TestContext)
def probe_test_context(factory, given) -> None:
    protocol = build(factory, "be built as cls() (its settings are gin bindings)")
    reads = getattr(protocol, "reads_test_data", None)
    if not isinstance(reads, bool):
        raise Broken(
            "say whether it reads the test tasks' offline data (reads_test_data)", repr(reads)
        )
    pair, env_pair = probe_scene([0, 1])
    alone, env_alone = probe_scene([1])
    try:
        if not reads:  # reading them now raises, naming what it reached for: it said it would not
            entry = entry_of(target_of(factory))
            name = entry.name if entry else getattr(target_of(factory), "__name__", "it")
            pair, alone = without_test_data(pair, name), without_test_data(alone, name)
        try:
            first, again, single = protocol(pair), protocol(pair), protocol(alone)
        except NotApplicable:
            return  # e.g. the probe's dataset keeps no behaviour policies: nothing to score
        except TestDataRead as e:
            raise Broken("read none of the test tasks' offline data, as it says", str(e)) from e
    finally:
        env_pair.close()
        env_alone.close()
    if not isinstance(first, Returns) or np.shape(first.dense) != (pair.rows,):
        raise Broken(f"return Returns of one episode per row ({pair.rows})", repr(first))
    if not np.isfinite(first.dense).all():
        raise Broken("score every row with a finite return", f"{first.dense}")
    if not np.array_equal(first.dense, again.dense):
        raise Broken("score the same scene alike twice", f"{first.dense} then {again.dense}")
    # alike up to rounding: an encoder call over more rows may round its sums another way
    if not np.allclose(first.dense[pair.block :], single.dense, rtol=1e-4, atol=1e-4):
        raise Broken(
            "score a seed's rows alike alone or beside another seed's (draw from the seed's "
            "own generators: Scene.generator, Scene.per_seed)",
            f"beside seed 0: {first.dense[pair.block :]}; alone: {single.dense}",
        )
