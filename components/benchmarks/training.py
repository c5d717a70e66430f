"""Timing the training step and the meta-test of trainers built from recipes, as a run builds
them (same composition, same dataset store), without writing a run."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import gin

from components.benchmarks.limits import count_flops, synchronize
from components.experiment.build import build_algorithm
from registry import RunContext, compose, default_recipes_dir

# The FOCAL reference's Sparse-Point-Robot configuration: meta-batch 16 tasks, RL batch 256,
# context batch 1024, latent 20, networks 3 × 256, encoder 3 × 200. (The reference code itself,
# timed once on an AVX2 machine, is in docs/PERFORMANCE.md; ratios are only taken against
# EQUAL_WORK timed in the same run.)
PAPER_SPR = (
    "sizes.meta_batch = 16",
    "sizes.rl_batch = 256",
    "sizes.context_batch = 1024",
    "sizes.latent_dim = 20",
    "brac.hidden = (256, 256, 256)",
    "dual_kl_critic.hidden = (256, 256, 256)",
    "mlp_encoder.hidden = (200, 200, 200)",
)
# The reference trains its divergence critic three times per step even with α = 0.
EQUAL_WORK = ("brac.always_train_divergence = True", "brac.divergence_steps = 3")


@dataclass(frozen=True)
class StepConfig:
    """One trainer to time: a recipe at a scale with bindings, in a precision; `phase` picks
    MBML's teacher or student step."""

    name: str
    recipe: str
    scale: str = "cpu"
    env: str = "sparse_point_robot"
    bindings: tuple[str, ...] = ()
    precision: str = "fp32"
    phase: str | None = None
    compile: bool = False
    flops: bool = False  # count the step's FLOPs (paper-size rows)
    seeds: int = 0  # K > 0: seeds 0..K-1 trained together as one model (components/seeds)


def build_trainer(config: StepConfig, device: str = "cpu", data_root: Path | None = None):
    """The trainer a run of `config` would train (its dataset built or loaded from the store)."""
    gin.clear_config()
    bindings = [
        *config.bindings,
        "loop.progress = False",
        f"loop.precision = '{config.precision}'",
        f"loop.compile = {config.compile}",
    ]
    if data_root is not None:
        bindings.append(f"task_data.root = '{data_root}'")
    comp = compose(
        config.recipe,
        env=config.env,
        scale=config.scale,
        seed=0,
        device=device,
        bindings=bindings,
        recipes_dir=default_recipes_dir(),
    )
    run_dir = Path(tempfile.mkdtemp(prefix="focalpp-bench-"))
    seeds = tuple(range(config.seeds))
    context = RunContext(
        env=config.env,
        scale=config.scale,
        seed=0,
        run_dir=run_dir,
        device=device,
        seeds=seeds,
        seed_dirs=tuple(run_dir / f"s{s}" for s in seeds),
    )
    trainer = build_algorithm(comp.experiment, context)
    if config.compile:  # what a run's loop does before its first step: compile the networks
        trainer.loop.prepare(trainer)
    if config.phase == "student":
        trainer.step = trainer.teacher_steps
    return trainer


def step_ms(trainer, warmup: int, repeats: int, block: int, budget_s: float = 30.0) -> float:
    """Median milliseconds per training step over up to `repeats` blocks of up to `block`
    steps, after up to `warmup` steps, within about `budget_s` seconds (a slow configuration,
    such as bf16 without bf16 hardware, gets fewer and shorter blocks, at least one step)."""

    def one() -> float:
        synchronize(trainer.device)
        began = time.perf_counter()
        with trainer.autocast():
            trainer.train_step()
        synchronize(trainer.device)
        return time.perf_counter() - began

    spent = 0.0
    for i in range(max(warmup, 2)):  # two at least: a compiled step compiles on its first
        last = one()
        spent += last
        if i and spent > budget_s / 4:
            break
    steps = max(1, min(block, int(budget_s / max(repeats, 1) / max(last, 1e-6))))
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeats and (not times or time.perf_counter() - start < budget_s):
        times.append(sum(one() for _ in range(steps)) / steps * 1e3)
    return statistics.median(times)


def step_flops(trainer) -> int:
    def one() -> None:
        with trainer.autocast():
            trainer.train_step()

    return count_flops(one)


def eval_split(trainer, repeats: int) -> tuple[float, float]:
    """Median seconds of the full meta-test of every test task (after one warm-up), and of the
    same meta-test's time inside the batched environment's `step` (the simulators; the rest is
    the policy, the encoder and the bookkeeping): the environment the meta-test made in its
    warm-up is timed where it stands, by wrapping its own `step`."""
    trainer.evaluate()
    env = trainer.loop.meta_test.environment  # made by the warm-up, reused by every run
    inner, spent = env.step, [0.0]

    def timed_step(*args, **kwargs):
        began = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began

    env.step = timed_step
    totals, simulator = [], []
    try:
        for _ in range(repeats):
            spent[0] = 0.0
            start = time.perf_counter()
            trainer.evaluate()
            totals.append(time.perf_counter() - start)
            simulator.append(spent[0])
    finally:
        del env.step  # the instance attribute: the class's own `step` again
    middle = sorted(range(len(totals)), key=totals.__getitem__)[len(totals) // 2]
    return totals[middle], simulator[middle]


def sweep_step_ms(
    base: StepConfig, binding: str, values: Sequence[int], warmup: int, repeats: int, block: int
) -> list[float]:
    """Step time as one binding (e.g. `sizes.meta_batch`) takes each value."""
    out = []
    for value in values:
        config = StepConfig(
            name=f"{binding}={value}",
            recipe=base.recipe,
            scale=base.scale,
            env=base.env,
            bindings=(*base.bindings, f"{binding} = {value}"),
        )
        out.append(step_ms(build_trainer(config), warmup, repeats, block))
    return out
