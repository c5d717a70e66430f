"""`tools/run.py --seeds`: K seeds trained in one process, each in a run directory of its own
that holds a single run's records; killed and resumed together they end exactly as if never
stopped, and one seed's directory resumes on its own as a single run.

Real subprocesses, one thread each (thread count changes float sums).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from components.experiment.trained import load_trained
from components.outputs.checkpoint import load_checkpoint
from tests.conftest import cli
from tests.tools.test_resume import ONE_THREAD, start_run, wait_for_step

STEPS = 150
SEEDS = (0, 1)


def flags(data_root: Path, recipe: str = "focal.gin") -> list[str]:
    bindings = (
        f"task_data.root = '{data_root}'",
        f"loop.steps = {STEPS}",
        "loop.eval_every = 50",
        "loop.log_every = 10",
        "loop.checkpoint_every = 25",
        "loop.precision = 'fp32'",
    )
    return [
        *("--recipe", recipe, "--env", "sparse_point_robot", "--scale", "tiny"),
        *(arg for b in bindings for arg in ("--gin_param", b)),
    ]


def seed_dirs(parent: Path) -> list[Path]:
    return [parent / f"focal-sparse_point_robot-s{s}" for s in SEEDS]


def final(run_dir: Path) -> tuple[str, dict]:
    record = json.loads((run_dir / "eval.json").read_text())
    record.pop("train_seconds")
    record.pop("meta_test_seconds")
    return (run_dir / "metrics.jsonl").read_text(), record


@pytest.fixture(scope="module")
def together(tiny_data, tmp_path_factory) -> Path:
    parent = tmp_path_factory.mktemp("seeds") / "together"
    r = cli("run", *flags(tiny_data), "--seeds", "0-1", "--out", str(parent), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    return parent


def test_each_seed_has_a_single_runs_directory(together):
    for seed, d in zip(SEEDS, seed_dirs(together), strict=True):
        record = json.loads((d / "run.json").read_text())
        assert record["seed"] == seed and record["trained_with_seeds"] == list(SEEDS)
        assert f"experiment.seed = {seed}" in (d / "config.gin").read_text()
        assert load_checkpoint(d)["step"] == STEPS
        trained = load_trained(d)  # as an analysis loads a single run: same configuration
        assert trained.run_context.seed == seed and not trained.batched


def test_killed_then_resumed_together_or_alone(together, tiny_data, tmp_path):
    """Killed mid-way: resumed together they end byte for byte as if never stopped; a copy of
    one seed's directory resumed on its own continues as a single run (the single run's
    kernels, not the batched ones: equal to fp32 rounding, not bit for bit)."""
    parent = tmp_path / "killed"
    proc = start_run([*flags(tiny_data), "--seeds", "0-1", "--out", str(parent)])
    dirs = seed_dirs(parent)
    wait_for_step(dirs[-1], 65, proc)
    proc.kill()
    proc.wait()
    step = load_checkpoint(dirs[0])["step"]
    assert 50 <= step < STEPS and load_checkpoint(dirs[1])["step"] == step
    alone = tmp_path / "alone"
    shutil.copytree(dirs[1], alone)
    r = cli("run", "--resume", *map(str, dirs), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert f"resuming at step {step} of {STEPS}" in r.stdout
    for mine, theirs in zip(dirs, seed_dirs(together), strict=True):
        assert final(mine) == final(theirs)
    r = cli("run", "--resume", str(alone), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    mine = json.loads((alone / "eval.json").read_text())
    theirs = json.loads((seed_dirs(together)[1] / "eval.json").read_text())
    # the dense return: tiny runs reach no goal, so their sparse return is 0 whatever happens
    assert mine["dense_return_mean"] == pytest.approx(theirs["dense_return_mean"], rel=1e-3)


@pytest.mark.parametrize(
    "args, says",
    [
        (["--seeds", "3-1"], "the range 3-1 runs backwards"),
        (["--seeds", "0,0"], "each once"),
        (["--seeds", "a-b"], "expected seeds as a range"),
        (["--seeds", "0-1", "--seed", "2"], "drop --seed"),
    ],
)
def test_bad_seeds_are_refused(tiny_data, tmp_path, args, says):
    r = cli("run", *flags(tiny_data), *args, "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_a_part_without_a_seed_batched_form_leaves_nothing_behind(tiny_data, tmp_path):
    r = cli(
        "run", *flags(tiny_data, "batch_pearl.gin"), "--seeds", "0-1", "--out", str(tmp_path / "x")
    )
    assert r.returncode == 2 and "cannot be trained with several seeds" in r.stderr, r.stderr
    assert not any((tmp_path / "x").glob("*/run.json"))


def test_runs_of_different_recipes_are_not_resumed_together(together, tiny_data, tmp_path):
    other = tmp_path / "other"
    r = cli("run", *flags(tiny_data, "focalpp_batchwise.gin"), "--out", str(other),
            "--gin_param", "loop.steps = 2")  # fmt: skip
    assert r.returncode == 0, r.stderr
    (other / "eval.json").unlink()
    mine = seed_dirs(together)[0]
    (mine / "eval.json").rename(mine / "eval.kept")
    try:
        r = cli("run", "--resume", str(mine), str(other))
        assert r.returncode == 2 and "not only in the seed" in r.stderr, r.stderr
    finally:
        (mine / "eval.kept").rename(mine / "eval.json")


def test_an_algorithm_without_a_seed_batched_form_is_refused(tiny_data, tmp_path):
    r = cli("run", *flags(tiny_data, "mbml.gin"), "--seeds", "0-1", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "cannot train several seeds in one process" in r.stderr, r.stderr
    assert not any((tmp_path / "x").glob("*/run.json"))
