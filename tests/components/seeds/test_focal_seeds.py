"""The FOCAL trainer with K seeds in one process: each seed's first steps are its single run's
(fp32 tolerance; K = 1 bit for bit), and a part without a seed-batched form is refused by name
before anything is trained."""

from __future__ import annotations

import pytest
import torch

from registry import RecipeError
from tests.conftest import run_row

TINY = ("loop.steps = 2", "loop.eval_every = 0")
SEEDS = (0, 1, 2)


def built(recipe, tiny_data, run_dir, *, seed=0, seeds=()):
    """A trainer built as tools/run.py builds it (not run)."""
    from registry import RECIPES_DIR, RunContext, compose
    from registry.recipes import build_algorithm

    comp = compose(recipe, env="sparse_point_robot", scale="tiny", seed=seed, device="cpu",
                   bindings=[f"task_data.root = '{tiny_data}'", *TINY],
                   recipes_dir=RECIPES_DIR)  # fmt: skip
    run_dir.mkdir(parents=True)
    context = RunContext(env="sparse_point_robot", scale="tiny", seed=seed, run_dir=run_dir,
                         device="cpu", seeds=seeds)  # fmt: skip
    return build_algorithm(comp.experiment, context)


def first_steps(trainer, n=3):
    return [trainer.train_step() for _ in range(n)]


@pytest.mark.parametrize(
    "recipe", ["focal.gin", "focalpp_contrastive.gin", "focalpp_batchwise.gin"]
)
def test_each_seed_takes_its_single_runs_steps(recipe, tiny_data, tmp_path):
    run_row(recipe, "sparse_point_robot", tiny_data, tmp_path / "warm", train=False)  # data
    batched = first_steps(built(recipe, tiny_data, tmp_path / "k", seeds=SEEDS))
    for k, seed in enumerate(SEEDS):
        single = first_steps(built(recipe, tiny_data, tmp_path / f"s{seed}", seed=seed))
        for step, (mine, theirs) in enumerate(zip(batched, single, strict=True)):
            assert mine.keys() == theirs.keys()
            for name, value in theirs.items():
                got = mine[name][k] if mine[name].dim() else mine[name]
                torch.testing.assert_close(
                    got, value, rtol=1e-4, atol=1e-5, msg=f"seed {seed}, step {step}, {name}"
                )


def test_one_seed_batched_is_the_single_run_bit_for_bit(tiny_data, tmp_path):
    run_row("focal.gin", "sparse_point_robot", tiny_data, tmp_path / "warm", train=False)
    one = first_steps(built("focal.gin", tiny_data, tmp_path / "k", seed=4, seeds=(4,)), 5)
    single = first_steps(built("focal.gin", tiny_data, tmp_path / "s", seed=4), 5)
    for mine, theirs in zip(one, single, strict=True):
        assert all(torch.equal(mine[k].reshape(-1), theirs[k].reshape(-1)) for k in theirs)


def test_a_part_without_a_seed_batched_form_is_named(tiny_data, tmp_path):
    run_row("focalpp_seqwise.gin", "sparse_point_robot", tiny_data, tmp_path / "w", train=False)
    with pytest.raises(RecipeError, match=r"@\w+ \(in the encoder\).*cannot be trained with"):
        built("focalpp_seqwise.gin", tiny_data, tmp_path / "k", seeds=SEEDS)
