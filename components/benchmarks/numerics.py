"""The `numerics` section of tools/bench.py: what portable numerics cost, against free ones.

Numerics are a property of a process (set before torch loads, components/numerics.py), so each
measurement runs in a process of its own, the two kinds alternated round after round so that a
change in the machine's speed reaches both alike; every figure is a ratio within one sitting.

- step: one fp32 training step of FOCAL and of FOCAL++ at the CPU scale (median ms), free (the
  machine's fastest kernels, all its cores as torch threads: how `--numerics free` trains)
  against portable (one thread, the kernels every x86 CPU shares); and one update of a
  behaviour policy at the long builds' sizes, which a build makes per environment step: one
  task's own SAC (the Fwd-Back families: 256-256, batch 256) and the conditioned SAC of
  Sparse-Cheetah-Vel (one network for 100 tasks, 256-256, 16 transitions per task);
- threads: the same steps portable with the products cut into bands on every core
  (components/products.py: the same bits as on one thread);
- build: the same short Sparse-Point-Robot build (`tools/collect.py`, timed as a whole
  command), free in one piece on all cores against portable in its two blocks on one worker
  process per core (how a build runs now), and portable in one piece on one worker (the
  numerics alone, without the blocks' parallelism).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import components.machine as machine
import components.numerics as numerics
import components.products as products
from components.benchmarks.commands import tool_command
from components.benchmarks.tables import table as _table
from components.data.blocks import build_cores

ROOT = Path(__file__).resolve().parents[2]
STEP_ROWS = ("focal", "focalpp")


def step_times(quick: bool) -> dict[str, float]:
    """In the measuring process: median ms per fp32 step of each of STEP_ROWS."""
    from components.benchmarks.training import StepConfig, build_trainer, step_ms

    scale = "tiny" if quick else "cpu"
    trainers = {row: build_trainer(StepConfig(row, f"{row}.gin", scale)) for row in STEP_ROWS}
    block = 2 if quick else 30
    for trainer in trainers.values():
        step_ms(trainer, 2, 1, 2, 5.0)  # warm-up
    times = {row: step_ms(trainer, 0, 3, block, 60.0) for row, trainer in trainers.items()}
    return {
        **times,
        UPDATE: behaviour_update_ms(quick),
        CONDITIONED: behaviour_update_ms(quick, conditioned=True),
    }


UPDATE = "behaviour_update"  # one behaviour-policy SAC update at the long builds' sizes
CONDITIONED = "conditioned_update"  # the same of Sparse-Cheetah-Vel's conditioned learner


def behaviour_update_ms(quick: bool, conditioned: bool = False) -> float:
    """Median ms of one behaviour SAC update at the long builds' sizes: what a long build does
    per environment step. One task's `TaskBatchedSAC` (Ant's 27 observations and 8 actions,
    256-256, batch 256), or `conditioned`: Sparse-Cheetah-Vel's `TaskConditionedSAC` (100 tasks
    told their velocity, 20 observations and 6 actions, 256-256, 16 transitions per task)."""
    import torch

    from components.rl.sac import TaskBatchedSAC, TaskConditionedSAC
    from components.transitions import Transitions

    if conditioned:
        tasks, obs, act, batch = (10, 20, 6, 4) if quick else (100, 20, 6, 16)
        features = torch.linspace(-1.7, 1.7, tasks)[:, None]
        agent = TaskConditionedSAC(
            n_tasks=tasks, obs_dim=obs, act_dim=act, hidden=(256, 256), task_features=features
        )
    else:
        tasks, obs, act, batch = 1, 27, 8, 32 if quick else 256
        agent = TaskBatchedSAC(n_tasks=1, obs_dim=obs, act_dim=act, hidden=(256, 256))
    g = torch.Generator().manual_seed(0)
    data = Transitions(
        obs=torch.randn(tasks, batch, obs, generator=g),
        action=torch.rand(tasks, batch, act, generator=g) * 2 - 1,
        reward=torch.randn(tasks, batch, generator=g),
        sparse_reward=torch.zeros(tasks, batch),
        next_obs=torch.randn(tasks, batch, obs, generator=g),
        terminated=torch.zeros(tasks, batch),
        truncated=torch.zeros(tasks, batch),
    )
    times = []
    for i in range(6 if quick else 45):
        began = time.perf_counter()
        agent.update(data)
        if i >= (1 if quick else 5):  # warm-up left out
            times.append(1000 * (time.perf_counter() - began))
    return float(np.median(times))


BANDED = "portable, products on every core"  # portable steps, products on all cores


def _env(mode: str) -> dict[str, str]:
    """A measuring process's environment: portable (products on one thread, or on every core
    for BANDED), or free with torch's own thread count."""
    env = numerics.child_env(numerics.PORTABLE if mode == BANDED else mode)
    if mode != numerics.FREE:
        env[products.THREADS_ENV] = str(build_cores() if mode == BANDED else 1)
    if mode == numerics.FREE:
        for threads in numerics.THREADS:
            env.pop(threads, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _measure_steps(mode: str, quick: bool) -> dict[str, float]:
    script = (
        "import json\nfrom components.benchmarks.numerics import step_times\n"
        f"print(json.dumps(step_times({quick})))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_env(mode), cwd=ROOT
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the {mode} step measurement failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


BUILDS = {  # name: (numerics, extra bindings)
    "free, one piece": (numerics.FREE, ("behaviour_sac.blocks = 1",)),
    "portable, two blocks on workers": (numerics.PORTABLE, ()),
    "portable, one piece, one worker": (numerics.PORTABLE, ("behaviour_sac.blocks = 1",)),
    "portable, one piece, products on every core": (BANDED, ("behaviour_sac.blocks = 1",)),
}


def _numerics(mode: str) -> str:
    return numerics.PORTABLE if mode == BANDED else mode


def _measure_build(name: str, quick: bool) -> float:
    """Seconds of the whole `tools/collect.py` command, as a process of its own (this
    benchmark times the real command: its start, the workers it starts, the build)."""
    mode, extra = BUILDS[name]
    scale, steps = ("tiny", ()) if quick else ("cpu", ("behaviour_sac.env_steps = 1500",))
    bindings = [a for b in (*steps, *extra) for a in ("--gin_param", b)]
    with tempfile.TemporaryDirectory() as store:
        args = ["--env", "sparse_point_robot", "--scale", scale, "--out", store]
        began = time.perf_counter()
        proc = subprocess.run(
            tool_command("collect", [*args, *bindings, "--numerics", _numerics(mode)]),
            capture_output=True,
            text=True,
            env=_env(mode),
            cwd=ROOT,
        )
        seconds = time.perf_counter() - began
    if proc.returncode != 0:
        raise RuntimeError(f"the build '{name}' failed: {proc.stderr[-2000:]}")
    return seconds


def bench_numerics(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    rounds = 1 if quick else 3
    steps: dict[str, list[dict[str, float]]] = {
        numerics.FREE: [],
        numerics.PORTABLE: [],
        BANDED: [],
    }
    builds: dict[str, list[float]] = {name: [] for name in BUILDS}
    for _ in range(rounds):
        for mode, kept in steps.items():
            kept.append(_measure_steps(mode, quick))
        for name, kept in builds.items():
            kept.append(_measure_build(name, quick))
    cpu = machine.summary()
    rows = []
    names = {row: f"step {row}, fp32, cpu scale" for row in STEP_ROWS}
    names[UPDATE] = "behaviour SAC update, 256-256, batch 256 (a long build's step)"
    names[CONDITIONED] = "conditioned SAC update, 100 tasks × 16 (Sparse-Cheetah-Vel's step)"
    for row, config in names.items():
        free = float(np.median([r[row] for r in steps[numerics.FREE]]))
        pinned = float(np.median([r[row] for r in steps[numerics.PORTABLE]]))
        banded = float(np.median([r[row] for r in steps[BANDED]]))
        rows.append(
            {
                "config": config,
                "free_ms": free,
                "portable_ms": pinned,
                "portable_vs_free": pinned / free,
                "banded_ms": banded,
                "banded_vs_portable": banded / pinned,
                "product_threads": build_cores(),
                "rounds": rounds,
                "machine": cpu,
            }
        )
    free_build = float(np.median(builds["free, one piece"]))
    for name, kept in builds.items():
        rows.append(
            {
                "config": f"build: {name}",
                "seconds": float(np.median(kept)),
                "seconds_rounds": kept,
                "vs_free_build": float(np.median(kept)) / free_build,
                "rounds": rounds,
                "machine": cpu,
            }
        )
    _table(
        f"numerics: portable against free, {rounds} alternated rounds ({cpu})",
        rows,
        {
            "config": "{config}",
            "free ms": "{free_ms:.1f}",
            "portable ms": "{portable_ms:.1f}",
            "portable ÷ free": "{portable_vs_free:.2f}",
            "products on every core, ms": "{banded_ms:.1f}",
            "÷ one thread": "{banded_vs_portable:.2f}",
            "build s": "{seconds:.1f}",
            "÷ free build": "{vs_free_build:.2f}",
        },
    )
    return rows
