"""K seeds' draws as one batch: seed k's are exactly what a single run with seed k draws."""

from __future__ import annotations

import pytest
import torch

from components.data.sampler import TensorSampler
from components.data.seed_sampler import SeedSampler
from components.data.store import DatasetError
from tests.components.data.test_sampler import ragged

SEEDS = (3, 0, 11)


def singles():
    """One single-run sampler per seed, each with its own generator, as a run seeds it."""
    return [
        TensorSampler(ragged(), [0, 1, 2, 3], generator=torch.Generator().manual_seed(s))
        for s in SEEDS
    ]


def batched():
    data = TensorSampler(ragged(), [0, 1, 2, 3])
    return SeedSampler(data, [torch.Generator().manual_seed(s) for s in SEEDS])


@pytest.mark.parametrize("replace_tasks", [True, False])
@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("sparse", [True, False])
def test_each_seed_draws_what_its_single_run_draws(replace_tasks, replace, sparse):
    ones, many = singles(), batched()
    for _ in range(3):  # the streams stay in step over several draws
        tasks = many.sample_tasks(3, replace=replace_tasks)
        assert tasks.shape == (len(SEEDS), 3)
        batch = many.sample(tasks, 3, replace=replace, sparse=sparse)
        assert batch.obs.shape == (len(SEEDS), 3, 3, 3) and batch.reward.shape == (3, 3, 3)
        for k, one in enumerate(ones):
            own = one.sample_tasks(3, replace=replace_tasks)
            assert torch.equal(tasks[k], own)
            expected = one.sample(own, 3, replace=replace, sparse=sparse)
            for name, value in batch.as_dict().items():
                assert torch.equal(value[k], getattr(expected, name)), name
    # the seeds differ from one another (the check above is not of K copies of one stream)
    assert not torch.equal(batch.obs[0], batch.obs[1])


def test_one_seed_is_the_single_run():
    one = singles()[0]
    many = SeedSampler(TensorSampler(ragged(), [0, 1, 2, 3]), [torch.Generator().manual_seed(3)])
    tasks = many.sample_tasks(4, replace=True)
    assert torch.equal(tasks[0], one.sample_tasks(4, replace=True))
    assert torch.equal(many.sample(tasks, 5).obs[0], one.sample(tasks[0], 5).obs)


def test_what_a_seed_sampler_cannot_draw_is_refused_by_name():
    many = batched()
    with pytest.raises(DatasetError, match="cannot draw 5 distinct tasks from 4"):
        many.sample_tasks(5)
    with pytest.raises(DatasetError, match="cannot draw 4 distinct transitions from a task with 3"):
        many.sample(torch.tensor([[1], [1], [1]]), 4, replace=False)
    with pytest.raises(ValueError, match="at least one generator"):
        SeedSampler(TensorSampler(ragged(), [0]), [])
