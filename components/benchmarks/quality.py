"""The `quality` section of tools/bench.py: minutes from an empty dataset store to FOCAL++ at
the paper's Sparse-Point-Robot return (12.96, Table 1) on the paper-comparable metric (the
formula the paper's point-robot numbers were scored with, DECISIONS §1), at the CPU scale.

Two FOCAL++ runs, each from its own empty store: the paper's row (`focalpp.gin`) and the same
row coupled (the critic's gradient let into the encoder, cosine learning-rate decay: the
variant that reaches the paper's number at this scale, docs/RESULTS.md). Each is a
`tools/run.py` process meta-tested every 1,000 steps and stopped at the first meta-test at or
above the target; "not reached" when the run ends below it.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from components.benchmarks.commands import tool_command
from components.checkout import checkout_env
from components.reports.paper import TABLE1

console = Console(highlight=False, width=max(120, Console().width))
ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {
    "focalpp (the paper's row)": (),
    "focalpp, coupled": ("focal.detach_z = False", "loop.lr_decay = 'cosine'"),
}


def time_to_target(bindings: tuple[str, ...], target: float, quick: bool) -> dict:
    """Run FOCAL++ from an empty store until a meta-test reaches `target`."""
    scale = "tiny" if quick else "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = [*tool_command("run"), "--recipe", "focalpp.gin"]
        command += ["--scale", scale, "--out", str(run_dir)]
        for binding in (f"loop.eval_every = {1 if quick else 1000}", *bindings):
            command += ["--gin_param", binding]
        env = checkout_env({**os.environ, "FOCALPP_DATA": str(Path(tmp) / "data")})
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        reached, best, metric = None, (float("-inf"), 0), None
        log = run_dir / "metrics.jsonl"
        while True:
            finished = proc.poll() is not None
            lines = log.read_text().splitlines() if log.exists() else []
            for record in (json.loads(line) for line in lines):
                if record["kind"] != "eval":
                    continue
                # the paper's own formula where the family has one: its Table 1 number
                has_paper = "paper_return_mean" in record
                metric = "paper_return_mean" if has_paper else "test_return_mean"
                if record[metric] > best[0]:
                    best = (record[metric], record["step"])
            if best[0] >= target:
                reached = time.perf_counter() - start
                proc.terminate()
                break
            if finished:
                break
            time.sleep(1.0)
        _, stderr = proc.communicate()
        if proc.returncode not in (0, -15) and reached is None:
            raise RuntimeError(f"the timed run failed: {stderr.decode()[-2000:]}")
    return {
        "scale": scale,
        "target": target,
        "metric": metric,
        "reached_seconds": reached,
        "best_return": best[0],
        "best_step": best[1],
        "wall_seconds": time.perf_counter() - start,
    }


def bench_quality(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    target = TABLE1[("sparse_point_robot", "focalpp")][0]
    rows = [
        {"variant": name, "bindings": list(bindings), **time_to_target(bindings, target, quick)}
        for name, bindings in VARIANTS.items()
    ]
    table = Table(title="quality: minutes from an empty store to the paper's FOCAL++ return")
    for column in ("variant", "target (metric)", "reached after", "best (step)", "wall"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for r in rows:
        reached = r["reached_seconds"]
        table.add_row(
            r["variant"],
            f"{r['target']:.2f} ({r['metric']})",
            f"{reached / 60:.1f} min" if reached is not None else "not reached",
            f"{r['best_return']:.2f} ({r['best_step']})",
            f"{r['wall_seconds'] / 60:.1f} min",
        )
    console.print(table)
    return rows
