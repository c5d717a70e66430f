"""Benchmarks: each section prints a table and adds its rows to one JSON report.

    python tools/bench.py [--sections env ...] [--quick] [--json FILE]

Sections:
  env   transitions per second per family: one gymnasium environment, and all test tasks
        batched (point robots: one numpy array op; MuJoCo: gymnasium vector envs, in-process
        "sync" and subprocess "async")

`--quick` runs every section at smoke-test size (the figures then mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import components.envs  # noqa: E402, F401  (registers the families)
from components.envs.point_robot import PointRobotFamily  # noqa: E402
from components.reporting.run_dir import atomic_write_text  # noqa: E402
from registry import get, names  # noqa: E402

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


def bench_env(quick: bool) -> list[dict]:
    """Steps/s of one gymnasium env, and of all test tasks batched (sync and, for MuJoCo, async)."""
    seconds = 0.05 if quick else 2.0
    rows = []
    for name in names("env"):
        family = get("env", name)(seed=0)
        tasks = family.split().test
        row = {"family": name, "single_steps_per_s": single_env_rate(family, seconds)}
        row["batched_tasks"] = len(tasks)
        row["batched_sync_steps_per_s"] = batched_env_rate(family, tasks, seconds)
        if not isinstance(family, PointRobotFamily):  # point robots: one numpy op, no processes
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


SECTIONS: dict[str, Callable[[bool], list[dict]]] = {"env": bench_env}


def machine() -> dict:
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sections", nargs="+", choices=sorted(SECTIONS), default=sorted(SECTIONS))
    p.add_argument("--quick", action="store_true", help="smoke-test sizes; figures mean nothing")
    p.add_argument("--json", type=Path, help="write the report here")
    args = p.parse_args(argv)
    report = {"machine": machine(), "quick": args.quick, "sections": {}}
    for section in args.sections:
        report["sections"][section] = SECTIONS[section](args.quick)
    if args.json:
        atomic_write_text(args.json, json.dumps(report, indent=2))
        console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
