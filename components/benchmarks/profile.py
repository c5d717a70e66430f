"""tools/bench.py --sections profile: one training step of FOCAL and of FOCAL++ split into its
parts (components/profiling.py), with each part's milliseconds and ATen operation count.

At the CPU scale a step launches thousands of small operations, and on a CPU each costs a few
microseconds whatever its size: the count tells where launching, not arithmetic, is the cost.
The parts' times are taken under the profiler (which slows each operation a little); the step
time beside them is taken without it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from torch.profiler import ProfilerActivity, profile

from components.benchmarks.tables import table
from components.benchmarks.training import StepConfig, build_trainer, step_ms
from components.outputs import figures
from components.profiling import OTHER, by_part, parts_recorded

# the parts a FOCAL-family step marks, in the order of a step
PARTS = (
    "context sampling",
    "query encoder",
    "key encoder",
    "objective",
    "metrics",
    "encoder backward",
    "RL batch sampling",
    "divergence critic",
    "critic",
    "actor",
    "value",
    "temperature",
    "optimiser steps",
    "target and EMA updates",
    OTHER,
)


def profile_step(trainer, steps: int) -> tuple[dict, float]:
    """{part: (ms, ops) per step} over `steps` profiled steps, and the profiled ms per step."""
    with parts_recorded(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            with trainer.autocast():
                trainer.train_step()
    events = prof.events()
    roots = [e for e in events if e.cpu_parent is None]
    total_ms = sum(e.cpu_time_total for e in roots) / 1e3
    parts = by_part(events, set(PARTS), total_ms)
    return {name: (p.ms / steps, p.ops / steps) for name, p in parts.items()}, total_ms / steps


def bench_profile(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    scale, steps = ("tiny", 2) if quick else ("cpu", 30)
    rows = []
    for row in ("focal", "focalpp"):
        trainer = build_trainer(StepConfig(row, f"{row}.gin", scale))
        ms = step_ms(trainer, 2 if quick else 10, 2 if quick else 5, 2 if quick else 20, 30.0)
        parts, profiled = profile_step(trainer, steps)
        for name in PARTS:
            if name in parts:
                part_ms, ops = parts[name]
                rows.append(
                    {
                        "config": row,
                        "part": name,
                        "ms": part_ms,
                        "ops": ops,
                        "share": part_ms / profiled,
                        "step_ms": ms,
                        "profiled_step_ms": profiled,
                    }
                )
    table(
        "profile: one training step by part, fp32 (ms under the profiler; ops: ATen calls)",
        rows,
        {
            "row": "{config}",
            "part": "{part}",
            "ms": "{ms:.2f}",
            "share": "{share:.0%}",
            "ops": "{ops:.0f}",
        },
    )
    if figures_dir is not None:
        profile_figure(rows, figures_dir)
    return rows


def profile_figure(rows: list[dict], figures_dir: Path) -> Path:
    """Horizontal bars: each part's ms per step, FOCAL beside FOCAL++."""
    import matplotlib.pyplot as plt

    names = [p for p in PARTS if any(r["part"] == p for r in rows)]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(names) + 1.2))
    y = np.arange(len(names))
    for offset, row in ((-0.2, "focal"), (0.2, "focalpp")):
        ms = {r["part"]: r["ms"] for r in rows if r["config"] == row}
        ax.barh(y + offset, [ms.get(n, 0.0) for n in names], height=0.4, label=row)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds per step (under the profiler)")
    ax.set_title("one training step by part, CPU scale, fp32")
    ax.legend()
    return figures.save(fig, Path(figures_dir) / "profile-parts.png")
