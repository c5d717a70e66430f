"""tools/bench.py --sections seeds: K seeds trained as one model (components/seeds) against K
single runs one after another, at the CPU scale, in one process and one bench run; and
`--sections seeds_eval`: the K seeds' meta-tests at once against seed by seed.

Throughput ratio = K × (a single run's step time) / (the K-seed step time): how many times
faster K seeds finish in one process than one after another (the meta-tests are not counted:
`seeds_eval` times them). Peak memory: a whole `tools/run.py` process of K seeds against one of a
single run (dataset, a few steps, a meta-test, checkpoints).
"""

from __future__ import annotations

import copy
import statistics
import tempfile
import time
from pathlib import Path

import torch

from components.benchmarks.commands import tool_command
from components.benchmarks.limits import peak_rss_kib
from components.benchmarks.tables import table
from components.benchmarks.training import StepConfig, build_trainer, step_ms

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ("focal.gin", "focalpp.gin")


def bench_seeds(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    k = 2 if quick else 8
    scale = "tiny" if quick else "cpu"
    warmup, repeats, block = (1, 2, 2) if quick else (5, 5, 20)
    rows = []
    for recipe in RECIPES if not quick else RECIPES[:1]:
        single = step_ms(build_trainer(StepConfig("single", recipe, scale)), warmup, repeats, block)
        together = step_ms(
            build_trainer(StepConfig(f"K={k}", recipe, scale, seeds=k)), warmup, repeats, block
        )
        peaks = []
        for which in (["--seed", "0"], ["--seeds", f"0-{k - 1}"]):
            with tempfile.TemporaryDirectory() as tmp:
                command = [*tool_command("run"), "--recipe", recipe,
                           "--scale", scale, *which, "--out", f"{tmp}/runs",
                           "--gin_param", "loop.steps = 20", "--gin_param", "loop.eval_every = 0",
                           "--gin_param", "loop.precision = 'fp32'"]  # fmt: skip
                peaks.append(peak_rss_kib(command) / 2**20)
        rows.append(
            {
                "recipe": recipe,
                "scale": scale,
                "seeds": k,
                "threads": torch.get_num_threads(),
                "single_ms_per_step": single,
                "seeds_ms_per_step": together,
                "throughput_ratio": k * single / together,
                "single_peak_gib": peaks[0],
                "seeds_peak_gib": peaks[1],
                "memory_ratio": peaks[1] / peaks[0],
            }
        )
    table(
        f"seeds: {k} seeds trained as one model against {k} single runs one after another "
        "(training steps; fp32)",
        rows,
        {
            "recipe": "{recipe}",
            "threads": "{threads}",
            "single ms": "{single_ms_per_step:.2f}",
            f"K={k} ms": "{seeds_ms_per_step:.2f}",
            "throughput ×": "{throughput_ratio:.2f}",
            "single GiB": "{single_peak_gib:.2f}",
            f"K={k} GiB": "{seeds_peak_gib:.2f}",
            "memory ×": "{memory_ratio:.2f}",
        },
    )
    return rows


def bench_seeds_eval(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    """The meta-tests of K seeds trained together (FOCAL, CPU scale): at once (one environment
    of every seed's test tasks, one policy call per step: `evaluate_seeds`) against seed by
    seed (each seed's networks lent as single modules: `evaluate(seed_index=k)`), timed in
    turn in one process (pairs, so that load on the machine falls on both alike); on
    Sparse-Point-Robot and (not with --quick) Meta-World's published reach-wall, whose dataset
    is built first if the store has none (about 5 minutes)."""
    k, repeats = (2, 1) if quick else (5, 3)
    envs = [("sparse_point_robot", "tiny" if quick else "cpu")]
    if not quick:
        envs.append(("ml1pub_reach_wall", "cpu"))
    rows = []
    for env, scale in envs:
        trainer = build_trainer(StepConfig(f"K={k}", "focal.gin", scale, env=env, seeds=k))
        # each way keeps its own meta-test and so its own environment, made once, as in a run
        meta_tests = {
            "together": trainer.loop.meta_test,
            "apart": copy.copy(trainer.loop.meta_test),
        }
        meta_tests["apart"]._env = None

        for name in meta_tests:  # warm-up: the environments made, the kernels chosen
            _evaluate(trainer, meta_tests, name)
        seconds: dict[str, list[float]] = {name: [] for name in meta_tests}
        for _ in range(repeats):
            for name in meta_tests:
                start = time.perf_counter()
                _evaluate(trainer, meta_tests, name)
                seconds[name].append(time.perf_counter() - start)
        for meta_test in meta_tests.values():
            meta_test.close()
        apart, together = (statistics.median(seconds[n]) for n in ("apart", "together"))
        pairs = [a / t for a, t in zip(seconds["apart"], seconds["together"], strict=True)]
        rows.append(
            {
                "env": env,
                "scale": scale,
                "seeds": k,
                "test_tasks": len(trainer.data.test_tasks),
                "runs_per_task": trainer.loop.meta_test.runs,
                "threads": torch.get_num_threads(),
                "apart_seconds": apart,
                "together_seconds": together,
                "speedup": statistics.median(pairs),
            }
        )
    table(
        f"seeds_eval: the meta-tests of {k} seeds trained together, at once against seed by seed "
        "(median seconds of all K; speed-up: median of the pairs' ratios)",
        rows,
        {
            "env": "{env}",
            "tasks × runs × seeds": "{test_tasks} × {runs_per_task} × {seeds}",
            "threads": "{threads}",
            "seed by seed s": "{apart_seconds:.2f}",
            "at once s": "{together_seconds:.2f}",
            "speed-up ×": "{speedup:.2f}",
        },
    )
    return rows


def _evaluate(trainer, meta_tests: dict, name: str) -> None:
    """The K seeds' meta-tests, `name` 'together' or 'apart', each way with its own meta-test."""
    trainer.loop.meta_test = meta_tests[name]
    if name == "together":
        trainer.evaluate_seeds()
        return
    for i in range(len(trainer.seeds)):
        trainer.evaluate(seed_index=i)
