"""tools/bench.py --sections seeds: K seeds trained as one model (components/seeds) against K
single runs one after another, at the CPU scale, in one process and one bench run.

Throughput ratio = K × (a single run's step time) / (the K-seed step time): how many times
faster K seeds finish in one process than one after another (the meta-tests, which run seed by
seed, are not counted). Peak memory: a whole `tools/run.py` process of K seeds against one of a
single run (dataset, a few steps, a meta-test, checkpoints).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import torch

from components.benchmarks.tables import table
from components.benchmarks.training import StepConfig, build_trainer, step_ms

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ("focal.gin", "focalpp.gin")


def bench_seeds(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    from components.benchmarks.sections import _peak_rss_kib  # the memory section's probe

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
                command = [sys.executable, str(ROOT / "tools" / "run.py"), "--recipe", recipe,
                           "--scale", scale, *which, "--out", f"{tmp}/runs",
                           "--gin_param", "loop.steps = 20", "--gin_param", "loop.eval_every = 0",
                           "--gin_param", "loop.precision = 'fp32'"]  # fmt: skip
                peaks.append(_peak_rss_kib(command) / 2**20)
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
