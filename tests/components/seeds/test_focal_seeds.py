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


def built(recipe, tiny_data, run_dir, *extra, seed=0, seeds=()):
    """A trainer built as tools/run.py builds it (not run)."""
    from components.experiment.build import build_algorithm
    from registry import RunContext, compose, default_recipes_dir

    comp = compose(recipe, env="sparse_point_robot", scale="tiny", seed=seed, device="cpu",
                   bindings=[f"task_data.root = '{tiny_data}'", *TINY, *extra],
                   recipes_dir=default_recipes_dir())  # fmt: skip
    run_dir.mkdir(parents=True)
    context = RunContext(env="sparse_point_robot", scale="tiny", seed=seed, run_dir=run_dir,
                         device="cpu", seeds=seeds)  # fmt: skip
    return build_algorithm(comp.experiment, context)


def first_steps(trainer, n=3):
    return [trainer.train_step() for _ in range(n)]


RECIPES = ["focal.gin", "focalpp.gin", "reference_oracle.gin", "focalpp_dml.gin"]  # focalpp:
# the batch-wise and sequence-wise branches, matrix MoCo and the EMA key encoder, all the FOCAL++
# rows' parts; focalpp_dml: two objectives gathered by `objectives`


COUPLED = ("focal.detach_z = False", "loop.lr_decay = 'cosine'")
# the IQL backbone, and both backbones' critics with LayerNorm
BACKBONES = [
    ("focalpp_iql.gin", ("iql.layer_norm = True",)),
    ("focal.gin", ("brac.layer_norm = True",)),
]


@pytest.mark.parametrize(
    "recipe, extra", [(r, ()) for r in RECIPES] + [("focalpp.gin", COUPLED), *BACKBONES]
)
def test_each_seed_takes_its_single_runs_steps(recipe, extra, tiny_data, tmp_path):
    run_row(recipe, "sparse_point_robot", tiny_data, tmp_path / "warm", train=False)  # data
    batched = first_steps(built(recipe, tiny_data, tmp_path / "k", *extra, seeds=SEEDS))
    for k, seed in enumerate(SEEDS):
        single = first_steps(built(recipe, tiny_data, tmp_path / f"s{seed}", *extra, seed=seed))
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


@pytest.mark.parametrize("recipe", ["focal.gin", "focalpp.gin", "reference_oracle.gin"])
def test_the_seeds_meta_tested_at_once_score_as_each_seed_alone(recipe, tiny_data, tmp_path):
    """`evaluate_seeds` (the seed-batched networks on one environment of every seed's test
    tasks) gives each seed the meta-test `evaluate(seed_index=k)` gives it with its single
    networks, to fp32 rounding; tasks and context sizes exactly."""
    import numpy as np

    run_row(recipe, "sparse_point_robot", tiny_data, tmp_path / "warm", train=False)
    trainer = built(recipe, tiny_data, tmp_path / "k", seeds=SEEDS)
    first_steps(trainer)
    together = trainer.evaluate_seeds()
    alone = [trainer.evaluate(seed_index=k) for k in range(len(SEEDS))]
    assert len(together) == len(SEEDS)
    for mine, theirs in zip(together, alone, strict=True):
        assert (mine.tasks, mine.context_sizes) == (theirs.tasks, theirs.context_sizes)
        np.testing.assert_allclose(mine.returns, theirs.returns, rtol=1e-4, atol=1e-4)
    assert not np.allclose(together[0].returns, together[1].returns)  # the seeds differ


def test_a_precision_trial_of_k_seeds_names_each_seeds_losses(tiny_data, tmp_path):
    """`loop.precision = 'auto'` times the K-seed step as it times a single run's: bf16 is held
    to fp32 on each seed's first-step losses, and the trainer goes on as if never timed."""
    run_row("focalpp.gin", "sparse_point_robot", tiny_data, tmp_path / "warm", train=False)
    plain = built("focalpp.gin", tiny_data, tmp_path / "a", seeds=SEEDS)
    timed = built("focalpp.gin", tiny_data, tmp_path / "b", seeds=SEEDS)
    torch.manual_seed(7)
    expected = plain.train_step()
    torch.manual_seed(7)
    bf16 = timed.loop.step_precision.trial(timed, "bf16", 0, seconds=0.0)
    fp32 = timed.loop.step_precision.trial(timed, "fp32", 0, seconds=0.0)
    losses = [k for k in expected if k.startswith("loss_")]
    assert losses and fp32.losses == {
        f"{k}[{i}]": float(expected[k][i]) for k in losses for i in range(len(SEEDS))
    }
    assert bf16.losses.keys() == fp32.losses.keys() and bf16.losses != fp32.losses
    after = timed.train_step()
    assert all(torch.equal(after[k], expected[k]) for k in expected)


def test_a_part_without_a_seed_batched_form_is_named(tiny_data, tmp_path):
    run_row("batch_pearl.gin", "sparse_point_robot", tiny_data, tmp_path / "w", train=False)
    with pytest.raises(RecipeError, match=r"@\w+ \(in the encoder\).*cannot be trained with"):
        built("batch_pearl.gin", tiny_data, tmp_path / "k", seeds=SEEDS)


def grouped(recipe, tiny_data, root, seeds, *bindings):
    """K seeds trained together to the end, each in its own run directory."""
    from components.experiment.build import build_algorithm
    from registry import RunContext, compose, default_recipes_dir

    comp = compose(recipe, env="sparse_point_robot", scale="tiny", seed=seeds[0], device="cpu",
                   bindings=[f"task_data.root = '{tiny_data}'", *bindings],
                   recipes_dir=default_recipes_dir())  # fmt: skip
    dirs = tuple(root / f"s{s}" for s in seeds)
    for d in dirs:
        d.mkdir(parents=True)
    context = RunContext(env="sparse_point_robot", scale="tiny", seed=seeds[0], run_dir=dirs[0],
                         device="cpu", seeds=tuple(seeds), seed_dirs=dirs)  # fmt: skip
    build_algorithm(comp.experiment, context).run()
    return dirs


def records(run_dir):
    from components.outputs.metrics import read_metrics

    return read_metrics(run_dir)


RUN = ("loop.steps = 6", "loop.eval_every = 3", "loop.log_every = 2", "loop.precision = 'fp32'")


def test_each_seeds_run_directory_holds_its_single_runs_records(tiny_data, tmp_path):
    import json

    seeds = (0, 3)
    dirs = grouped("focal.gin", tiny_data, tmp_path / "k", seeds, *RUN)
    for seed, d in zip(seeds, dirs, strict=True):
        run_row("focal.gin", "sparse_point_robot", tiny_data, tmp_path / f"one{seed}",
                seed=seed, bindings=RUN)  # fmt: skip
        mine, theirs = records(d), records(tmp_path / f"one{seed}")
        assert [(r["step"], r["kind"], sorted(r)) for r in mine] == [
            (r["step"], r["kind"], sorted(r)) for r in theirs
        ]
        for a, b in zip(mine, theirs, strict=True):
            for key, value in b.items():
                if isinstance(value, float):
                    assert a[key] == pytest.approx(value, rel=1e-4, abs=1e-4), (seed, key)
        evals = [json.loads((p / "eval.json").read_text()) for p in (d, tmp_path / f"one{seed}")]
        assert evals[0]["dense_return_mean"] == pytest.approx(
            evals[1]["dense_return_mean"], rel=1e-4
        )
        assert (d / "summary.md").read_text().startswith(f"# s{seed}")
        assert 0 < evals[0]["meta_test_seconds"] < evals[0]["train_seconds"]
        assert (d / "checkpoint.pt").is_file()


def test_one_seed_trained_as_a_group_writes_the_single_runs_records(tiny_data, tmp_path):
    (d,) = grouped("focal.gin", tiny_data, tmp_path / "k", (2,), *RUN)
    run_row("focal.gin", "sparse_point_robot", tiny_data, tmp_path / "one", seed=2, bindings=RUN)
    assert records(d) == records(tmp_path / "one")


def test_a_seed_gone_non_finite_stops_alone(tiny_data, tmp_path, capsys):
    """Seed 1's policy weights set to NaN before training: seed 1 stops at the first record,
    named, keeping no eval.json; seed 0 trains on exactly as its single run (its numbers never
    depend on another seed's)."""
    from components.experiment.build import build_algorithm
    from registry import RunContext, compose, default_recipes_dir

    for recipe in ("focal.gin", "focalpp_contrastive.gin"):
        root = tmp_path / recipe
        comp = compose(recipe, env="sparse_point_robot", scale="tiny", seed=0, device="cpu",
                       bindings=[f"task_data.root = '{tiny_data}'", *RUN],
                       recipes_dir=default_recipes_dir())  # fmt: skip
        dirs = (root / "s0", root / "s1")
        for d in dirs:
            d.mkdir(parents=True)
        context = RunContext(env="sparse_point_robot", scale="tiny", seed=0, run_dir=dirs[0],
                             device="cpu", seeds=(0, 1), seed_dirs=dirs)  # fmt: skip
        trainer = build_algorithm(comp.experiment, context)
        with torch.no_grad():
            trainer.agent.policy.net.net[0].weight[1].fill_(float("nan"))
        trainer.run()
        assert "seed 1 stopped" in capsys.readouterr().err
        assert (dirs[0] / "eval.json").is_file() and not (dirs[1] / "eval.json").exists()
        run_row(recipe, "sparse_point_robot", tiny_data, root / "one", bindings=RUN)
        for a, b in zip(records(dirs[0]), records(root / "one"), strict=True):
            for key, value in b.items():
                if isinstance(value, float):
                    assert a[key] == pytest.approx(value, rel=1e-4, abs=1e-4), (recipe, key)


def test_batching_moves_each_seeds_result_less_than_the_seed_does(tiny_data, tmp_path):
    """Three seeds trained together to the end (60 steps), and each alone: a seed's final
    meta-test (the dense return: tiny runs reach no goal) moves by less between its batched and
    its single run (fp32 rounding of other kernels) than it differs between seeds (the single
    runs' spread)."""
    import json

    seeds, short = (0, 1, 2), (*RUN, "loop.steps = 60", "loop.eval_every = 0")
    dirs = grouped("focal.gin", tiny_data, tmp_path / "k", seeds, *short)
    batched, single = [], []
    for seed, d in zip(seeds, dirs, strict=True):
        run_row("focal.gin", "sparse_point_robot", tiny_data, tmp_path / f"one{seed}",
                seed=seed, bindings=short)  # fmt: skip
        single.append(json.loads((tmp_path / f"one{seed}" / "eval.json").read_text()))
        batched.append(json.loads((d / "eval.json").read_text()))
    single = [e["dense_return_mean"] for e in single]
    batched = [e["dense_return_mean"] for e in batched]
    spread = max(single) - min(single)
    assert spread > 0
    assert all(abs(b - s) < spread for b, s in zip(batched, single, strict=True)), (batched, single)


def test_every_test_context_protocol_scores_the_seeds_together_as_alone(tiny_data, tmp_path):
    """Each protocol's cell of K seeds meta-tested at once is each seed's alone (fp32
    rounding): the donors, prior draws, random actions and context draws are the seed's own."""
    import numpy as np

    import components.evaluation.test_contexts  # noqa: F401  (registers the protocols)
    from registry import names

    protocols = names("test_context")
    extra = f"meta_test.protocols = {protocols!r}"
    run_row("focal.gin", "sparse_point_robot", tiny_data, tmp_path / "warm", train=False)
    trainer = built("focal.gin", tiny_data, tmp_path / "k", extra, seeds=SEEDS)
    first_steps(trainer)
    trainer.loop.meta_test.final = True  # as the loop sets it for the run's last meta-test
    together = trainer.evaluate_seeds()
    alone = [trainer.evaluate(seed_index=k) for k in range(len(SEEDS))]
    for mine, theirs in zip(together, alone, strict=True):
        assert set(mine.protocols) == set(protocols) - {"offline"}
        for name, cell in theirs.protocols.items():
            assert "mean" in cell, (name, cell)
            np.testing.assert_allclose(
                list(mine.protocols[name]["per_task"].values()),
                list(cell["per_task"].values()),
                rtol=1e-4,
                atol=1e-4,
                err_msg=name,
            )
