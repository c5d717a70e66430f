"""Benchmarks: each section prints a table and adds its rows to one JSON report.

    python tools/bench.py [--sections env ...] [--quick] [--json FILE]

Sections (figures go to --figures DIR when given):
  train    the machine's fp32 / bf16 matmul peak, then one training step (median ms) of
           (a) focal at the FOCAL reference's Sparse-Point-Robot sizes, (b) the same with the
           reference's equal work, (c) every row and baseline at the CPU scale, (d) focalpp
           at the FOCAL++ paper's sizes; fp32 and bf16 autocast; FLOPs and fraction of the
           peak; "× (b)": (b)'s time in the same run over the row's
  rows     every Table 1 row and baseline at the CPU scale in fp32, timed in interleaved
           rounds: ms / step and `vs_focal`, its time over focal's in the same run
  profile  one training step of focal and of focalpp at the CPU scale in fp32, split into its
           parts (context sampling, encoders, objective, critic, actor, optimiser steps, ...):
           ms and ATen operations per part (+ PNG)
  encoder  FOCAL++'s context encoder at the paper's sizes: query and key passes, and the
           sequence-wise branch by this project's layer and by PyTorch's; fraction of peak
  precision  fp32 vs bf16 on four steps of different size, and what 'auto' picks
  eval     the meta-test of all Sparse-Point-Robot test tasks, full protocol
  memory   peak resident memory of a run at the reference's sizes
  scaling  step time as meta-batch T, context batch E and latent Z grow (+ PNGs)
  quality  wall time from an empty dataset store to the paper's FOCAL++ return on the
           paper-comparable metric (CPU scale; minutes; not in the default sections)
  collect  all Sparse-Point-Robot behaviour policies trained and their rollouts saved, from a
           clean store, against a few tasks trained one after another (extrapolated to all);
           dataset quality (mean returns of random / medium / expert)
  numerics what portable numerics cost against free ones, each in processes of its own,
           alternated: FOCAL's and FOCAL++'s fp32 step, and a short Sparse-Point-Robot build
           (free in one piece; portable in blocks on workers; portable in one piece)
  gpu      (a) and (d) on a CUDA GPU in fp32, TF32 and bf16: ms / step, steps / s, peak GPU
           memory, hours per 100k steps, fraction of the GPU's matmul peak (needs CUDA; not in
           the default sections)
  seeds    K seeds trained as one model against K single runs one after another: step time,
           throughput, peak memory
  seeds_eval  the K seeds' meta-tests at once against seed by seed (Sparse-Point-Robot and
           Meta-World's published reach-wall)
  env   transitions per second per family: one gymnasium environment, and all test tasks
        batched (point robots: one numpy array op; MuJoCo: gymnasium vector envs, in-process
        "sync" and subprocess "async")

`--quick` runs every section at smoke-test size (the figures then mean nothing). The report
names the machine (CPU model, vector and matrix units, bf16 support, torch threads): timings
and ratios hold for that machine only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import gin
import numpy as np
import torch
from rich.console import Console
from rich.table import Table

import components.envs  # noqa: F401  (registers the families)
import components.machine as machine
from components.benchmarks.limits import count_flops
from components.benchmarks.numerics import bench_numerics
from components.benchmarks.sections import SECTIONS as TRAINING_SECTIONS
from components.cli.parser import ToolParser
from components.data.behaviour import rollout
from components.data.build import describe, ensure_dataset
from components.data.protocols import CheckpointRollouts
from components.data.replay import TaskReplay
from components.envs.ml1 import ML1Family
from components.envs.point_robot import PointRobotFamily
from components.outputs.console import run_tool
from components.outputs.run_dir import atomic_write_text, make_dirs
from components.transitions import Transitions
from registry import default_recipes_dir, get, names
from registry.columns import env_group
from registry.recipes import compose_columns

console = Console(highlight=False)


def steps_per_second(step: Callable[[], int], seconds: float, min_calls: int = 3) -> float:
    """Call `step` (which returns how many transitions it made) for about `seconds`."""
    step()  # warm-up
    done, calls, start = 0, 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < seconds:
        done += step()
        calls += 1
    return done / (time.perf_counter() - start)


def single_env_rate(family, seconds: float) -> float:
    """Transitions/s of one gymnasium environment (with its wrappers) under random actions."""
    rng = np.random.default_rng(0)
    env = family.make(0)
    env.reset(seed=0)

    def step() -> int:
        _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, family.act_dim))
        if terminated or truncated:
            env.reset()
        return 1

    rate = steps_per_second(step, seconds)
    env.close()
    return rate


def batched_env_rate(family, tasks, seconds: float, **kwargs) -> float:
    """Transitions/s of all `tasks` stepped together, reset at the horizon."""
    rng = np.random.default_rng(0)
    batch = family.make_batched(tasks, **kwargs)
    batch.reset(seed=0)
    steps = [0]

    def step() -> int:
        batch.step(rng.uniform(-1, 1, (len(tasks), family.act_dim)))
        steps[0] += 1
        if steps[0] % family.horizon == 0:
            batch.reset()
        return len(tasks)

    rate = steps_per_second(step, seconds)
    batch.close()
    return rate


def bench_families(quick: bool) -> list[str]:
    """Every family, of Meta-World's the ML1 ones with a column of their own (the other ML1
    families, and the published recipe's `ml1pub_*`, run the same code on the same or other
    simulator models; none when `quick`: 50 simulators to build)."""
    shipped = (
        set() if quick else {p.stem for p in (default_recipes_dir() / "envs").glob("ml1_*.gin")}
    )
    return [n for n in names("env") if env_group(n) not in METAWORLD_GROUPS or n in shipped]


METAWORLD_GROUPS = ("ml1", "ml1pub")


def bench_env(quick: bool) -> list[dict]:
    """Steps/s of one gymnasium env, and of all test tasks batched (sync and, for MuJoCo, async)."""
    seconds = 0.05 if quick else 2.0
    rows = []
    for name in bench_families(quick):
        family = get("env", name)(seed=0)
        tasks = family.split().test
        row = {"family": name, "single_steps_per_s": single_env_rate(family, seconds)}
        row["batched_tasks"] = len(tasks)
        row["batched_sync_steps_per_s"] = batched_env_rate(family, tasks, seconds)
        # point robots: one numpy op, no processes; ML1's 50 test tasks: 50 processes
        if not isinstance(family, (PointRobotFamily, ML1Family)):
            rate = batched_env_rate(family, tasks, seconds, asynchronous=True)
            row["batched_async_steps_per_s"] = rate
        rows.append(row)
    table = Table(title="env: transitions per second", title_justify="left")
    for column in ("family", "single", "batched tasks", "batched sync", "batched async"):
        table.add_column(column, justify="right" if column != "family" else "left")
    for r in rows:
        async_rate = r.get("batched_async_steps_per_s")
        table.add_row(
            r["family"],
            f"{r['single_steps_per_s']:,.0f}",
            str(r["batched_tasks"]),
            f"{r['batched_sync_steps_per_s']:,.0f}",
            f"{async_rate:,.0f}" if async_rate else "-",
        )
    console.print(table)
    return rows


def sequential_task_seconds(family, task, protocol: CheckpointRollouts, seed: int) -> float:
    """Seconds to train one task's behaviour SAC alone, with its checkpoint rollouts."""
    torch.manual_seed(seed)
    behaviour = protocol.behaviour
    agent = behaviour.agent(family, [task])
    env = family.make_batched([task] * protocol.episodes)
    steps = np.linspace(0, behaviour.env_steps, protocol.checkpoints).round().astype(int).tolist()
    start = time.perf_counter()
    behaviour.train(
        family,
        agent,
        [task],
        seed,
        checkpoint_steps=steps,
        on_checkpoint=lambda step: rollout(family, env, agent, protocol.episodes, seed=step),
    )
    return time.perf_counter() - start


def update_anatomy(family, behaviour, n_tasks: int, quick: bool) -> dict:
    """Milliseconds of one behaviour-SAC gradient step for one task and for `n_tasks` at once
    (median of repeats, on a replay of random transitions), and the batched step's FLOPs: the
    ceiling the per-step cost puts on the speed-up of training the tasks together."""
    torch.manual_seed(0)

    def step_ms(k: int) -> tuple[float, Callable[[], object]]:
        agent = behaviour.agent(family, family.all_tasks()[:k])
        replay = TaskReplay(
            n_tasks=k, capacity=1_000, obs_dim=family.obs_dim, act_dim=family.act_dim
        )
        for _ in range(1_000):
            replay.add(
                Transitions(
                    obs=np.random.randn(k, family.obs_dim),
                    action=np.random.uniform(-1, 1, (k, family.act_dim)),
                    reward=np.random.randn(k),
                    sparse_reward=np.zeros(k),
                    next_obs=np.random.randn(k, family.obs_dim),
                    terminated=np.zeros(k),
                    truncated=np.zeros(k),
                )
            )

        def step() -> object:
            return agent.update(replay.sample(behaviour.batch_size))

        repeats = 3 if quick else 200
        for _ in range(3 if quick else 20):
            step()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(repeats):
                step()
            times.append((time.perf_counter() - start) / repeats * 1e3)
        return float(np.median(times)), step

    one, _ = step_ms(1)
    batched, step = step_ms(n_tasks)
    flops = count_flops(step)
    return {
        "update_ms_one_task": one,
        "update_ms_all_tasks": batched,
        "update_gflop_all_tasks": flops / 1e9,
        "update_gflops_per_s_all_tasks": flops / batched / 1e6,
        "update_speedup": n_tasks * one / batched,
    }


def bench_collect(quick: bool) -> list[dict]:
    """Batched collection of every Sparse-Point-Robot task vs tasks trained one by one."""
    family_name, n_sequential = "sparse_point_robot", 2
    bindings = ["behaviour_sac.env_steps = 60", "checkpoints.episodes = 2"] if quick else []
    compose_columns(family_name, "cpu", bindings)
    with tempfile.TemporaryDirectory() as root:
        start = time.perf_counter()
        dataset = ensure_dataset(family_name, "checkpoints", 0, root=Path(root))
        batched = time.perf_counter() - start
        qualities = {row["quality"]: row for row in describe(dataset)}
    family = get("env", family_name)(seed=0)
    protocol = get("dataset", "checkpoints")()
    tasks = family.all_tasks()
    per_task = [sequential_task_seconds(family, t, protocol, 0) for t in tasks[:n_sequential]]
    sequential = float(np.mean(per_task)) * len(tasks)
    anatomy = update_anatomy(family, protocol.behaviour, len(tasks), quick)
    row = {
        "family": family_name,
        "tasks": len(tasks),
        "env_steps_per_task": protocol.behaviour.env_steps,
        "batched_seconds": batched,
        "sequential_seconds_measured": per_task,
        "sequential_seconds_extrapolated": sequential,
        "speedup": sequential / batched,
        **anatomy,
        **{f"{q}_mean_sparse_return": qualities[q]["mean_sparse_return"] for q in qualities},
        **{f"{q}_mean_return": qualities[q]["mean_return"] for q in qualities},
    }
    table = Table(title="collect: all behaviour policies of one family", title_justify="left")
    for column in ("what", "value"):
        table.add_column(column)
    table.add_row("tasks × SAC steps", f"{len(tasks)} × {protocol.behaviour.env_steps:,}")
    table.add_row("batched: train + rollouts + save", f"{batched:.1f} s")
    table.add_row(f"one by one ({n_sequential} measured, × {len(tasks)})", f"{sequential:.0f} s")
    table.add_row("speed-up", f"{row['speedup']:.1f}×")
    table.add_row(
        "one SAC gradient step: 1 task / all tasks",
        f"{anatomy['update_ms_one_task']:.1f} / {anatomy['update_ms_all_tasks']:.1f} ms "
        f"({anatomy['update_speedup']:.1f}×)",
    )
    table.add_row(
        "all tasks' step: GFLOP, GFLOP/s",
        f"{anatomy['update_gflop_all_tasks']:.2f}, {anatomy['update_gflops_per_s_all_tasks']:.0f}",
    )
    for q in ("random", "medium", "expert", "mixed"):
        table.add_row(
            f"{q}: mean sparse / dense return",
            f"{qualities[q]['mean_sparse_return']:.2f} / {qualities[q]['mean_return']:.2f}",
        )
    console.print(table)
    gin.clear_config()
    return [row]


SECTIONS: dict[str, Callable[[bool, Path | None], list[dict]]] = {
    "env": lambda quick, figures_dir: bench_env(quick),
    "collect": lambda quick, figures_dir: bench_collect(quick),
    **TRAINING_SECTIONS,
    "numerics": bench_numerics,
}
DEFAULT = [name for name in SECTIONS if name not in ("quality", "gpu")]


def main(argv: Sequence[str] | None = None) -> int:
    p = ToolParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sections", nargs="+", choices=sorted(SECTIONS), default=DEFAULT)
    p.add_argument("--quick", action="store_true", help="smoke-test sizes; figures mean nothing")
    p.add_argument("--json", type=Path, help="write the report here")
    p.add_argument("--figures", type=Path, help="write the sections' PNGs here")
    p.add_argument("--debug", action="store_true", help="full tracebacks")
    return run_tool(execute, p.parse_args(argv))


def execute(args: argparse.Namespace) -> int:
    if args.figures:
        make_dirs(args.figures, "figures folder")  # a file in the way is named, status 2
    report = {"machine": machine.describe(), "quick": args.quick, "sections": {}}
    console.print(f"machine: {machine.summary(report['machine'])}")
    for section in args.sections:
        report["sections"][section] = SECTIONS[section](args.quick, args.figures)
        if args.json:  # after each section: a long benchmark stopped midway keeps its results
            atomic_write_text(args.json, json.dumps(report, indent=2))
    if args.json:
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
