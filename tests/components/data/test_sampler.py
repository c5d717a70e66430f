from __future__ import annotations

import numpy as np
import pytest
import torch

from components.data.sampler import TensorSampler
from components.data.store import DatasetError, QualityData
from components.transitions import Transitions


def ragged(lengths=(5, 3, 8, 6), n_max=8, obs_dim=3):
    """Task k's transition i has obs = 100·k + i, padding = −1: sampled values reveal indices."""
    k = len(lengths)
    i = np.arange(n_max)[None, :]
    value = (100 * np.arange(k)[:, None] + i).astype(np.float32)
    value[i >= np.array(lengths)[:, None]] = -1
    t = Transitions(
        obs=np.repeat(value[..., None], obs_dim, -1),
        action=np.zeros((k, n_max, 2), np.float32),
        reward=-value,
        sparse_reward=value * 0 + 7.0,
        next_obs=np.repeat(value[..., None], obs_dim, -1),
        terminated=np.zeros((k, n_max), bool),
        truncated=np.zeros((k, n_max), bool),
    )
    return QualityData(t, np.array(lengths))


def test_shapes_and_only_real_transitions():
    sampler = TensorSampler(ragged(), [0, 1, 2, 3], generator=torch.Generator().manual_seed(0))
    tasks = sampler.sample_tasks(3)
    batch = sampler.sample(tasks, 64)
    assert batch.obs.shape == (3, 64, 3) and batch.action.shape == (3, 64, 2)
    assert batch.reward.shape == (3, 64) and batch.obs.dtype == torch.float32
    task_of = (batch.obs[..., 0] // 100).long()
    assert (task_of == tasks[:, None]).all()  # rows come from their own task
    within = batch.obs[..., 0] % 100
    assert (within < torch.tensor([5, 3, 8, 6])[tasks][:, None]).all()  # never padding
    assert (batch.obs >= 0).all()


def test_task_sampling_with_and_without_replacement():
    sampler = TensorSampler(ragged(), [0, 1, 2, 3], generator=torch.Generator().manual_seed(1))
    for _ in range(20):
        assert len(set(sampler.sample_tasks(4).tolist())) == 4
    drawn = torch.cat([sampler.sample_tasks(4, replace=True) for _ in range(50)])
    assert len(set(drawn.tolist())) == 4 and any(
        len(set(sampler.sample_tasks(4, replace=True).tolist())) < 4 for _ in range(50)
    )
    with pytest.raises(DatasetError, match="cannot draw 5 distinct tasks from 4"):
        sampler.sample_tasks(5)


def test_transitions_without_replacement_are_distinct():
    sampler = TensorSampler(ragged(), [0, 1, 2, 3], generator=torch.Generator().manual_seed(2))
    batch = sampler.sample(torch.tensor([0, 1, 2, 3]), 3, replace=False)
    for row in batch.obs[..., 0]:
        assert len(set(row.tolist())) == 3
    with pytest.raises(DatasetError, match="cannot draw 4 distinct transitions from a task with 3"):
        sampler.sample(torch.tensor([1]), 4, replace=False)


def test_context_uses_sparse_reward_only_when_asked():
    sampler = TensorSampler(ragged(), [0, 1, 2, 3], generator=torch.Generator().manual_seed(3))
    tasks = torch.tensor([2, 0])
    dense = sampler.sample(tasks, 16)
    assert (dense.reward == -dense.obs[..., 0]).all()
    context = sampler.sample(tasks, 16, sparse=True)
    assert (context.reward == 7.0).all() and (context.sparse_reward == 7.0).all()


def test_pool_restricts_tasks_and_seeds_repeat():
    data = ragged()
    a = TensorSampler(data, [1, 3], generator=torch.Generator().manual_seed(5))
    b = TensorSampler(data, [1, 3], generator=torch.Generator().manual_seed(5))
    batch_a, batch_b = a.sample(a.sample_tasks(2), 32), b.sample(b.sample_tasks(2), 32)
    assert torch.equal(batch_a.obs, batch_b.obs)
    assert set((batch_a.obs[..., 0] // 100).long().flatten().tolist()) == {1, 3}


def test_real_dataset_quality(tiny_dataset):
    q = tiny_dataset.quality("expert")
    sampler = TensorSampler(q, tiny_dataset.split_indices("train"))
    batch = sampler.sample(sampler.sample_tasks(16), 32, sparse=True)
    assert batch.obs.shape == (16, 32, 2) and sampler.n_tasks == 80
    assert torch.equal(batch.reward, batch.sparse_reward)


def test_one_gather_gives_each_field_as_its_own_gather_would():
    """Fields are packed side by side and gathered once; every field of a batch equals the
    field gathered alone from the dataset, contiguous, with its own shape."""
    data = ragged()
    rng = np.random.default_rng(0)
    data = QualityData(
        data.transitions.map(lambda x: rng.standard_normal(x.shape).astype(np.float32)),
        data.length,
    )
    sampler = TensorSampler(data, [3, 1, 2], generator=torch.Generator().manual_seed(4))
    generator_state = sampler.generator.get_state()
    tasks = torch.tensor([2, 0, 2])
    batch = sampler.sample(tasks, 16)
    sampler.generator.set_state(generator_state)  # the same draws, gathered field by field
    length = torch.as_tensor(data.length)[[3, 1, 2]][tasks]
    idx = (torch.rand(3, 16, generator=sampler.generator) * length[:, None]).long()
    rows = torch.tensor([3, 1, 2])[tasks][:, None]
    for name, stored in data.transitions.as_dict().items():
        alone = torch.as_tensor(stored, dtype=torch.float32)[rows, idx]
        got = getattr(batch, name)
        assert got.shape == alone.shape and got.is_contiguous(), name
        assert torch.equal(got, alone), name
    assert torch.equal(sampler.data.obs, torch.as_tensor(data.transitions.obs)[[3, 1, 2]])
