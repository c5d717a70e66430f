"""The FOCAL-family trainer: who teaches the encoder, the key encoder's EMA rule, seeded
determinism, build-time errors for incompatible parts, and NaN handling."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from components import numerics
from components.algorithms.finite import TrainingDiverged
from components.contracts import ContractError
from components.outputs.checkpoint import load_checkpoint
from registry import RecipeError
from tests.conftest import DATA, ROOT, cli, run_row

TINY = ("loop.steps = 2", "loop.eval_every = 0")


def build_row(recipe, tiny_data, tmp_path, *bindings, env="sparse_point_robot"):
    """A built (not yet run) trainer: run it for 0 steps to get its parts."""
    _, algorithm = run_row(recipe, env, tiny_data, tmp_path / "run", bindings=(*TINY, *bindings))
    return algorithm


def params(module):
    return [p.detach().clone() for p in module.parameters()]


def same(a, module):
    return all(torch.equal(x, y) for x, y in zip(a, module.parameters(), strict=True))


@pytest.mark.parametrize("detach", [True, False])
def test_encoder_learns_only_from_its_objective(detach, tiny_data, tmp_path):
    """With the objective's weight at 0 the encoder's only teacher is silent: it must not move
    unless z's gradient is let through to the Q loss (detach_z = False, for research)."""
    trainer = build_row(
        "focal.gin", tiny_data, tmp_path, "focal_dml.weight = 0.0", f"focal.detach_z = {detach}"
    )
    before = params(trainer.encoder)
    trainer.train_step()
    assert same(before, trainer.encoder) == detach


def test_objective_moves_the_encoder(tiny_data, tmp_path):
    trainer = build_row("focal.gin", tiny_data, tmp_path)
    before = params(trainer.encoder)
    trainer.train_step()
    assert not same(before, trainer.encoder)


def test_key_encoder_gets_no_gradient_and_follows_the_ema_rule(tiny_data, tmp_path):
    trainer = build_row("focalpp.gin", tiny_data, tmp_path)
    key_before = params(trainer.key_encoder)
    trainer.train_step()
    m = trainer.key_encoder.momentum
    for key, old, query in zip(
        trainer.key_encoder.parameters(), key_before, trainer.encoder.parameters(), strict=True
    ):
        assert key.grad is None and not key.requires_grad
        torch.testing.assert_close(key, m * old + (1 - m) * query.detach())


def test_same_seed_same_run(tiny_data, tmp_path):
    def metrics(name, seed):
        run_row("focalpp.gin", "sparse_point_robot", tiny_data, tmp_path / name, seed=seed)
        return (tmp_path / name / "metrics.jsonl").read_text()

    first, second = metrics("a", 0), metrics("b", 0)
    assert first == second
    assert metrics("c", 1) != first


def test_meta_tests_do_not_change_training(tiny_data, tmp_path):
    """A meta-test draws from its own generator, in eval mode: asking for more of them (for a
    curve) leaves the training records as they were."""

    def train_records(name, every):
        bindings = (f"loop.eval_every = {every}",)
        run_row("focalpp.gin", "sparse_point_robot", tiny_data, tmp_path / name, bindings=bindings)
        lines = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        return [line for line in lines if '"train"' in line], len(lines)

    (often, n_often), (never, n_never) = train_records("often", 1), train_records("never", 0)
    assert n_often > n_never  # more meta-tests were recorded ...
    assert often == never  # ... and training went the same


def test_moco_without_a_key_encoder_is_refused_naming_both(tiny_data, tmp_path):
    with pytest.raises(RecipeError, match=r"@matrix_moco.*focal\.key_momentum"):
        build_row("focalpp.gin", tiny_data, tmp_path, "focal.key_momentum = None")


def test_encoder_that_cannot_read_the_context_is_refused_naming_both(tiny_data, tmp_path):
    """A plugin encoder built for 7-wide transitions (s, a, s', r of a point robot) meets the
    5-wide context (s, a, r) of a recipe without s': the probe names it (not the context
    encoder around it), its kind and the sizes it was given."""
    plugin = str(DATA / "fixed_width_encoder.py")
    expected = r"@fixed_width_encoder .*'transition_encoder'.*\(here \(2, 2, 1\), width 5\)"
    with pytest.raises(ContractError, match=expected):
        run_row(
            "focal.gin",
            "sparse_point_robot",
            tiny_data,
            tmp_path / "run",
            bindings=(
                *TINY,
                "context_encoder.transition = @fixed_width_encoder",
                "focal.context_next_obs = False",
            ),
            plugins=(plugin,),
        )


def test_distinct_tasks_beyond_the_training_set_are_refused(tiny_data, tmp_path):
    with pytest.raises(RecipeError, match="meta_batch"):
        build_row("focalpp.gin", tiny_data, tmp_path, "sizes.meta_batch = 500")


DIVERGING = DATA / "diverging_parts.py"  # parts that go NaN at a chosen step


def diverging_run(tiny_data, out, *bindings: str):
    """A tiny FOCAL run with the diverging parts' plugin, meta-tested every 2 steps."""
    extra = ("loop.eval_every = 2", *bindings)
    return cli(
        "run",
        *("--recipe", "focal.gin", "--scale", "tiny", "--out", str(out)),
        *("--plugin", str(DIVERGING), "--gin_param", f"task_data.root = '{tiny_data}'"),
        *(arg for binding in extra for arg in ("--gin_param", binding)),
    )


def test_nan_stops_the_run_naming_loss_and_step(tiny_data, tmp_path):
    out = tmp_path / "run"
    # the objective's loss is NaN from step 2 on, on any CPU
    result = diverging_run(tiny_data, out, "loop.steps = 8", "focal.objective = @diverging_dml")
    assert result.returncode == 2, result.stderr
    assert "loss_dml became nan in steps 1-2" in result.stderr
    assert "appeared in the output of objective (@diverging_dml) at step 2" in result.stderr
    assert "Traceback" not in result.stderr
    assert "no checkpoint had been written yet" in result.stderr
    assert f"{out} was removed" in result.stderr and not out.exists()  # nothing to resume


def diverging_encoder_run(tiny_data, out, after: int):
    return diverging_run(
        tiny_data,
        out,
        "context_encoder.transition = @diverging_mlp_encoder",
        f"diverging_mlp_encoder.after = {after}",
    )


def test_nan_is_traced_to_the_part_that_made_it(tiny_data, tmp_path):
    """The encoder's output goes NaN at step 4: by the check at the end of that step the NaN
    has reached every loss and, through the optimisers, the weights of every part it fed; the
    message still names the encoder's transition encoder, where it appeared first."""
    out = tmp_path / "run"
    result = diverging_encoder_run(tiny_data, out, after=3)
    assert result.returncode == 2, result.stderr
    said = " ".join(result.stderr.split())
    assert "loss_dml, loss_q, loss_v, loss_policy became nan in steps 3-4" in said
    assert "the output of encoder.transition (@diverging_mlp_encoder) at step 4" in said
    assert "non-finite tensors in encoder (@context_encoder): " in said
    assert f"the last good checkpoint is {out / 'checkpoint.pt'}" in said
    assert load_checkpoint(out)["step"] == 2 and "Traceback" not in result.stderr


def test_nan_in_a_meta_test_stops_the_run_by_name(tiny_data, tmp_path):
    """Task vectors that go NaN on the test contexts (the encoder's third call with moved
    weights is the meta-test's at step 2): a clear stop, not the environment's ValueError."""
    out = tmp_path / "run"
    result = diverging_encoder_run(tiny_data, out, after=2)
    assert result.returncode == 2, result.stderr
    said = " ".join(result.stderr.split())
    assert "in the meta-test at step 2, the policy's actions are not finite" in said
    assert "the first non-finite value is in the task vectors z" in said
    assert "Traceback" not in result.stderr and "no checkpoint had been written yet" in said


def test_non_finite_weights_stop_the_run_though_every_loss_is_finite(tiny_data, tmp_path):
    """A network no loss reads (the divergence critic, idle with α = 0 on the point robots)
    holding a NaN: the losses cannot show it, the check of every part's tensors does."""
    trainer = build_row("focal.gin", tiny_data, tmp_path, "loop.steps = 4", "loop.eval_every = 2")
    with torch.no_grad():
        next(trainer.agent.divergence.parameters()).view(-1)[0] = float("inf")
    trainer.loop.scheduled = 6  # loop.steps, as if bound to 6
    with pytest.raises(TrainingDiverged) as stopped:
        trainer.run()
    said = str(stopped.value)
    assert "became" not in said  # no loss went non-finite
    assert "first appeared in agent (@brac)'s tensors" in said
    assert "non-finite tensors in agent (@brac): 1 (divergence." in said
    assert "last good checkpoint" in said and load_checkpoint(tmp_path / "run")["step"] == 4


def test_checkpoint_survives_a_later_divergence(tiny_data, tmp_path):
    trainer = build_row("focal.gin", tiny_data, tmp_path, "loop.steps = 4", "loop.eval_every = 2")
    saved = load_checkpoint(tmp_path / "run")
    assert saved["step"] == 4
    with torch.no_grad():  # poison the actor-critic: the next step's losses are NaN
        for p in trainer.agent.q.parameters():
            p.fill_(float("nan"))
    trainer.loop.scheduled = 6  # loop.steps, as if bound to 6
    with pytest.raises(Exception, match=r"loss_\w+ became nan in steps 5-6.*last good checkpoint"):
        trainer.run()
    # the critic's loss is the first the step computes from Q: the NaN is placed there
    with pytest.raises(TrainingDiverged, match=r"first appeared in loss_q at step 5;"):
        trainer.load_state(load_checkpoint(tmp_path / "run"))
        with torch.no_grad():
            for p in trainer.agent.q.parameters():
                p.fill_(float("nan"))
        trainer.run()
    kept = load_checkpoint(tmp_path / "run")
    assert kept["step"] == 4
    assert all(torch.isfinite(v).all() for v in kept["agent"].values())


def test_summary_and_eval_record(tiny_data, tmp_path):
    build_row("focal.gin", tiny_data, tmp_path)
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "test sparse return" in summary and "| 80 |" in summary
    record = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert set(record["per_task_sparse_return"]) == {str(i) for i in range(80, 100)}


CUDA_RUN = """
import sys
from pathlib import Path
from components.experiment.build import build_algorithm
from registry import RunContext, compose, default_recipes_dir
data, run_dir = sys.argv[1], Path(sys.argv[2])
comp = compose("focalpp.gin", env="sparse_point_robot", scale="tiny", device="cuda",
               bindings=[f"task_data.root = '{data}'"], recipes_dir=default_recipes_dir())
run_dir.mkdir(parents=True)
context = RunContext(env="sparse_point_robot", scale="tiny", seed=0, run_dir=run_dir,
                     device="cuda")
trainer = build_algorithm(comp.experiment, context)
metrics = trainer.run()
assert trainer.train.data.obs.is_cuda
assert next(trainer.encoder.parameters()).is_cuda and next(trainer.agent.parameters()).is_cuda
assert metrics["headline"].startswith("test ")
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_tiny_run_on_cuda(tiny_data, tmp_path):
    """A GPU run has free numerics (portable ones are the CPU's), so it trains in a process of
    its own started from a free shell, as `tools/run.py --device cuda` is (the suite's own
    process has portable numerics, which refuse a GPU)."""
    proc = subprocess.run(
        [sys.executable, "-c", CUDA_RUN, str(tiny_data), str(tmp_path / "run")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=numerics.child_env(numerics.FREE),
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_asking_for_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    result = cli("run", "--recipe", "focal.gin", "--device", "cuda", "--out", str(tmp_path / "r"))
    assert result.returncode == 2
    assert "no CUDA GPU" in result.stderr and "--device cpu" in result.stderr
    assert not (tmp_path / "r").exists()


def test_unknown_device_is_rejected(tmp_path):
    result = cli("run", "--recipe", "focal.gin", "--device", "tpu", "--dry-run")
    assert result.returncode == 2 and "experiment.device" in result.stderr


@pytest.mark.parametrize(("decay", "middle"), [("linear", 0.55), ("cosine", 0.55)])
def test_learning_rates_decay_to_their_floor(decay, middle, tiny_data, tmp_path):
    """Every optimiser starts at its own rate and ends at lr_floor of it; half-way both
    schedules stand at floor + (1 − floor)/2."""
    _, trainer = run_row(
        "focal.gin",
        "sparse_point_robot",
        tiny_data,
        tmp_path / "run",
        bindings=(*TINY, f"loop.lr_decay = '{decay}'", "loop.lr_floor = 0.1"),
        train=False,
    )
    base = [g["lr"] for opt in trainer.optimizers() for g in opt.param_groups]
    assert len(set(base)) > 1  # encoder 1e-3, critics 3e-3, divergence 1e-4 ...

    def rates():
        return [g["lr"] for opt in trainer.optimizers() for g in opt.param_groups]

    for step, factor in ((0, 1.0), (1, middle), (2, 0.1)):
        trainer.step = step
        trainer.set_learning_rates()
        assert rates() == pytest.approx([b * factor for b in base])


def test_an_unknown_learning_rate_decay_is_refused(tiny_data, tmp_path):
    with pytest.raises(RecipeError, match=r"lr_decay = 'step'.*'cosine', 'linear'"):
        build_row("focal.gin", tiny_data, tmp_path, "loop.lr_decay = 'step'")
