"""The training-side sections of tools/bench.py: train, encoder, precision, eval, memory,
scaling, quality.

Each takes `(quick, figures_dir)`, prints a rich table and returns JSON rows. `quick` runs at
smoke-test sizes (the tiny scale), where the figures mean nothing.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from components.benchmarks.commands import tool_command
from components.benchmarks.encoder import bench_encoder, bench_precision
from components.benchmarks.gpu import bench_gpu
from components.benchmarks.limits import matmul_peak, peak_rss_kib
from components.benchmarks.profile import bench_profile
from components.benchmarks.quality import bench_quality
from components.benchmarks.seeds import bench_seeds, bench_seeds_eval
from components.benchmarks.tables import console
from components.benchmarks.tables import table as _table
from components.benchmarks.training import (
    EQUAL_WORK,
    PAPER_SPR,
    StepConfig,
    build_trainer,
    eval_split,
    step_flops,
    step_ms,
    sweep_step_ms,
)
from components.outputs import figures
from components.outputs.run_record import read_run_record
from components.reports.paper import ROWS

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ["batch_pearl", "contextual_bcq"]


def _paper(quick: bool) -> tuple[str, tuple[str, ...]]:
    """The paper-size configuration, or its tiny stand-in."""
    return ("tiny", ()) if quick else ("paper", PAPER_SPR)


EQUAL_WORK_NAME = "(b) focal, reference sizes, equal work"


def step_configs(quick: bool) -> list[StepConfig]:
    """(a) focal at the reference's sizes, (b) with the reference's equal work, (c) every row
    and baseline at the CPU scale, (d) focalpp at the FOCAL++ paper's sizes (its
    hyperparameter table: the paper scale); fp32 and bf16."""
    paper_scale, paper = _paper(quick)
    cpu_scale = "tiny" if quick else "cpu"
    configs = []
    for precision in ("fp32", "bf16"):
        configs += [
            StepConfig(
                "(a) focal, reference sizes",
                "focal.gin",
                paper_scale,
                bindings=paper,
                precision=precision,
                flops=True,
            ),
            StepConfig(
                "(d) focalpp, paper sizes",
                "focalpp.gin",
                paper_scale,
                precision=precision,
                flops=True,
            ),
        ]
    configs.append(
        StepConfig(
            EQUAL_WORK_NAME,
            "focal.gin",
            paper_scale,
            bindings=(*paper, *EQUAL_WORK),
            flops=False,  # the counter cannot follow the critic's gradient penalty (grad of grad)
        )
    )
    rows, precisions = (["focal"], ["fp32"]) if quick else ([*ROWS, *BASELINES], ["fp32", "bf16"])
    if not quick:  # compiling takes minutes on a CPU: the two configurations that tell
        configs += [
            StepConfig("(a) focal, reference sizes, compiled", "focal.gin", paper_scale,
                       bindings=paper, compile=True),
            StepConfig("(c) focal, compiled", "focal.gin", cpu_scale, compile=True),
        ]  # fmt: skip
    for precision in precisions:
        for row in rows:
            configs.append(StepConfig(f"(c) {row}", f"{row}.gin", cpu_scale, precision=precision))
        for phase in ("teachers", "student"):
            configs.append(
                StepConfig(
                    f"(c) mbml {phase}", "mbml.gin", cpu_scale, precision=precision, phase=phase
                )
            )
    return configs


def machine_limits(quick: bool) -> dict:
    """fp32 and bf16 matmul GFLOP/s on the paper-size step's shapes (rows × in × out)."""
    shapes = [(512, 256, 256)] if quick else [(4096, 256, 256), (16384, 200, 200), (4096, 281, 256)]
    device = torch.device("cpu")
    return {
        "fp32": matmul_peak(shapes, torch.float32, device),
        "bf16": matmul_peak(shapes, torch.bfloat16, device),
    }


def bench_train(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    limits = machine_limits(quick)
    warmup, repeats, block = (1, 2, 2) if quick else (5, 5, 10)
    rows = [
        {
            "config": "matmul peak",
            **{f"{k}_gflops": v["peak"] for k, v in limits.items()},
            "shapes": limits,
        }
    ]
    counted: dict[tuple, int] = {}
    for config in step_configs(quick):
        trainer = build_trainer(config)
        small = config.scale in ("cpu", "tiny") and not quick  # many short steps, 10 s
        ms = step_ms(trainer, warmup, repeats, block * (4 if small else 1), 10 if small else 30)
        row = {
            "config": config.name,
            "recipe": config.recipe,
            "scale": config.scale,
            "precision": config.precision,
            "ms_per_step": ms,
            "steps_per_s": 1e3 / ms,
        }
        if config.flops:
            # the count does not depend on precision: count once per configuration
            key = (config.recipe, config.scale, config.bindings)
            flops = counted[key] = counted.get(key) or step_flops(trainer)
            row.update(gflop_per_step=flops / 1e9, achieved_gflops=flops / ms / 1e6)
            # of the matching peak (under autocast only the matrix products run in bf16)
            peak = limits[config.precision]["peak"]
            row["fraction_of_matmul_peak"] = flops / ms / 1e6 / peak
        rows.append(row)
    _against_equal_work(rows)
    _table(
        "train: one gradient step (median of repeats after warm-up)",
        rows[1:],
        {
            "config": "{config}",
            "precision": "{precision}",
            "ms/step": "{ms_per_step:.1f}",
            "steps/s": "{steps_per_s:.1f}",
            "× (b)": "{speedup_vs_equal_work:.2f}",
            "GFLOP/step": "{gflop_per_step:.2f}",
            "of its peak": "{fraction_of_matmul_peak:.0%}",
        },
    )
    console.print(
        "matmul peak: "
        + ", ".join(f"{k} {v['peak']:.1f} GFLOP/s" for k, v in limits.items())
        + "; × (b): (b)'s time in this run over the row's, the reference's work done by our "
        "code on this machine (the in-process stand-in for the reference code)"
    )
    return rows


def row_configs(quick: bool) -> list[StepConfig]:
    """Every Table 1 row and baseline at the CPU scale in fp32 (MBML's two phases apart); the
    tiny scale's FOCAL and FOCAL++ when `quick`."""
    if quick:
        return [StepConfig(row, f"{row}.gin", "tiny") for row in ("focal", "focalpp")]
    configs = [StepConfig(row, f"{row}.gin", "cpu") for row in (*ROWS, *BASELINES)]
    return configs + [
        StepConfig(f"mbml {phase}", "mbml.gin", "cpu", phase=phase)
        for phase in ("teachers", "student")
    ]


def bench_rows(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    """ms per training step of every row, and its ratio to FOCAL's in the same run: the rows
    are timed in interleaved rounds (a block of steps each, round after round), so a change in
    the machine's speed during the run reaches every row alike; each row's median over rounds."""
    configs = row_configs(quick)
    trainers = [build_trainer(config) for config in configs]
    rounds, block = (2, 2) if quick else (7, 20)
    times: list[list[float]] = [[] for _ in trainers]
    for trainer in trainers:  # warm-up: first-call allocations, lazy modules
        step_ms(trainer, 2, 1, 2, 5.0)
    for _ in range(rounds):
        for trainer, measured in zip(trainers, times, strict=True):
            measured.append(step_ms(trainer, 0, 1, block, 60.0))
    focal = float(np.median(times[0]))
    rows = [
        {
            "config": config.name,
            "recipe": config.recipe,
            "scale": config.scale,
            "precision": config.precision,
            "ms_per_step": float(np.median(measured)),
            "ms_per_step_rounds": measured,
            "vs_focal": float(np.median(measured)) / focal,
        }
        for config, measured in zip(configs, times, strict=True)
    ]
    _table(
        "rows: one training step of each row, fp32 (median of interleaved rounds)",
        rows,
        {"config": "{config}", "ms/step": "{ms_per_step:.1f}", "× focal": "{vs_focal:.2f}"},
    )
    return rows


def _against_equal_work(rows: list[dict]) -> None:
    """`speedup_vs_equal_work` of the rows at the reference's sizes: (b)'s fp32 step in the
    same run over theirs. A ratio is only ever taken within one run on one machine."""
    equal = next((r for r in rows if r.get("config") == EQUAL_WORK_NAME), None)
    if equal is None:
        return
    for row in rows:
        if "reference sizes" in row.get("config", ""):
            row["speedup_vs_equal_work"] = equal["ms_per_step"] / row["ms_per_step"]


def bench_eval(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    """The meta-test of all Sparse-Point-Robot test tasks, full protocol (the paper scale's
    runs per task and 400-transition contexts), with paper-size and CPU-scale networks; and
    (not with --quick) Meta-World ML1 push's, CPU scale (50 test tasks, one 500-step episode
    each; its dataset is built first if the store has none, about 15 minutes). Each with the
    share of its time spent in the simulators' `step`."""
    paper_scale, paper = _paper(quick)
    configs = [
        ("reference sizes", "sparse_point_robot", paper_scale, paper),
        ("cpu scale", "sparse_point_robot", "tiny" if quick else "cpu", ("meta_test.runs = 3",)),
    ]
    if not quick:
        configs.append(("cpu scale", "ml1_push", "cpu", ()))
    rows = []
    for name, env, scale, bindings in configs:
        trainer = build_trainer(StepConfig(name, "focal.gin", scale, env, bindings=bindings))
        seconds, simulator = eval_split(trainer, 1 if quick else 5)
        meta_test = trainer.loop.meta_test
        rows.append(
            {
                "config": name,
                "env": env,
                "test_tasks": len(trainer.data.test_tasks),
                "runs_per_task": meta_test.runs,
                "context_transitions": meta_test.context_transitions,
                "seconds": seconds,
                "simulator_seconds": simulator,
                "simulator_share": simulator / seconds,
            }
        )
    _table(
        "eval: meta-test of every test task (median), and its time in the simulators' step",
        rows,
        {
            "env": "{env}",
            "networks": "{config}",
            "tasks × runs": "{test_tasks} × {runs_per_task}",
            "context": "{context_transitions}",
            "seconds": "{seconds:.2f}",
            "simulator s": "{simulator_seconds:.2f}",
            "simulator share": "{simulator_share:.0%}",
        },
    )
    return rows


def bench_memory(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    """Peak resident memory of a whole `tools/run.py` process at the reference's sizes
    (dataset load, training steps, a meta-test, checkpoint)."""
    paper_scale, paper = _paper(quick)
    rows = []
    # FOCAL++ at these sizes takes seconds per step on a CPU: its peak is reached in a few
    runs = [("focal.gin", paper, 4 if quick else 100)]
    if not quick:
        runs.append(("focalpp.gin", (), 5))  # the FOCAL++ paper's sizes (context batch 512)
    for recipe, sizes, steps in runs:
        with tempfile.TemporaryDirectory() as tmp:
            bindings = [*sizes, f"loop.steps = {steps}", "loop.eval_every = 0"]
            command = [
                *tool_command("run"),
                "--recipe",
                recipe,
                "--scale",
                paper_scale,
                "--out",
                str(Path(tmp) / "run"),
            ]
            for b in bindings:
                command += ["--gin_param", b]
            start = time.perf_counter()
            peak_kib = peak_rss_kib(command)
            record = read_run_record(Path(tmp) / "run")
        rows.append(
            {
                "recipe": recipe,
                "scale": paper_scale,
                "sizes": "FOCAL reference" if sizes else "paper scale",
                "precision": record.get("precision", {}).get("precision"),
                "steps": steps,
                "peak_rss_gib": peak_kib / 2**20,
                "process_seconds": time.perf_counter() - start,
            }
        )
    _table(
        "memory: peak resident set of a run (FOCAL at the reference's sizes, FOCAL++ at the "
        "paper's)",
        rows,
        {
            "recipe": "{recipe}",
            "sizes": "{sizes}",
            "precision": "{precision}",
            "steps": "{steps}",
            "peak GiB": "{peak_rss_gib:.2f}",
            "process s": "{process_seconds:.0f}",
        },
    )
    return rows


SWEEPS = {
    "sizes.meta_batch": ([4, 8, 16, 32, 64], "T"),
    "sizes.context_batch": ([64, 128, 256, 512, 1024], "E"),
    "sizes.latent_dim": ([5, 10, 20, 40], "Z"),
}


def bench_scaling(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    """Step time of (a) as T, E and Z grow one at a time; cost per T·(B + E) unit."""
    paper_scale, paper = _paper(quick)
    base = StepConfig("scaling", "focal.gin", paper_scale, bindings=paper)
    warmup, repeats, block = (1, 1, 1) if quick else (3, 3, 5)
    rows = []
    for binding, (values, symbol) in SWEEPS.items():
        values = values[:1] if quick else values
        times = sweep_step_ms(base, binding, values, warmup, repeats, block)
        for value, ms in zip(values, times, strict=True):
            t = value if symbol == "T" else (4 if quick else 16)
            e = value if symbol == "E" else (8 if quick else 1024)
            b = 8 if quick else 256
            rows.append(
                {
                    "binding": binding,
                    "value": value,
                    "ms_per_step": ms,
                    "us_per_task_transition": ms * 1e3 / (t * (b + e)),
                }
            )
    if figures_dir is not None:
        scaling_figures(rows, figures_dir)
    _table(
        "scaling: step time as one size grows (others at the reference's)",
        rows,
        {
            "binding": "{binding}",
            "value": "{value}",
            "ms/step": "{ms_per_step:.1f}",
            "µs per T·(B+E)": "{us_per_task_transition:.2f}",
        },
    )
    return rows


def scaling_figures(rows: list[dict], figures_dir: Path) -> list[Path]:
    """One PNG per swept size from the scaling rows (also from a saved bench JSON)."""
    written = []
    for binding, (_, symbol) in SWEEPS.items():
        mine = [r for r in rows if r["binding"] == binding]
        written.append(
            figures.curves(
                {"ms/step": np.array([r["value"] for r in mine], dtype=float)},
                {"ms/step": np.array([r["ms_per_step"] for r in mine])},
                title=f"step time against {symbol}, other sizes fixed",
                xlabel=f"{symbol} ({binding})",
                ylabel="milliseconds per step",
                path=figures_dir / f"scaling-{symbol}.png",
            )
        )
    return written


SECTIONS = {
    "train": bench_train,
    "rows": bench_rows,
    "profile": bench_profile,
    "encoder": bench_encoder,
    "precision": bench_precision,
    "eval": bench_eval,
    "memory": bench_memory,
    "scaling": bench_scaling,
    "quality": bench_quality,
    "gpu": bench_gpu,
    "seeds": bench_seeds,
    "seeds_eval": bench_seeds_eval,
}
