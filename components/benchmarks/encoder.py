"""The `encoder` and `precision` sections of tools/bench.py.

encoder: FOCAL++'s context encoder at the paper's sizes (16 tasks × 512 context transitions,
sequence attention d_model 128, 8 heads, 3 blocks, dropout 0.1), its query pass (forward and
backward) and its key pass (forward), and the sequence-wise branch alone computed by this
project's layer (`short_attention.encoder_layer`) and by PyTorch's `TransformerEncoderLayer`
in the same run: milliseconds, GFLOP counted and the fraction of the fp32 matmul peak.

precision: what `loop.precision = 'auto'` would choose for four steps of different size —
fp32 and bf16 timed from the same state, the first step's losses compared.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from einops import rearrange
from rich.console import Console
from rich.table import Table

import components.machine as machine
from components.algorithms.precision import measured
from components.benchmarks.limits import count_flops, matmul_peak
from components.benchmarks.training import PAPER_SPR, StepConfig, build_trainer

console = Console(highlight=False, width=max(120, Console().width))
# the paper-size encoder's matrix products: tokens × d_model × (3 d_model, 2 d_model)
ENCODER_SHAPES = [(32768, 128, 384), (32768, 128, 256), (32768, 256, 128)]


def median_ms(fn: Callable[[], object], warmup: int, repeats: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def bench_encoder(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    scale = "tiny" if quick else "paper"
    trainer = build_trainer(StepConfig("encoder", "focalpp.gin", scale, precision="fp32"))
    tasks = trainer.train.sample_tasks(trainer.sizes.meta_batch, replace=False)
    sample = trainer.train.sample(tasks, trainer.sizes.context_batch, sparse=trainer.layout.sparse)
    context = trainer.layout.tensor(sample)
    encoder, key = trainer.encoder, trainer.key_encoder
    # the sequence-attention layer against PyTorch's: the output-sum variant's transformer branch
    variant = build_trainer(
        StepConfig("encoder", "first_edition/focalpp_output_sum.gin", scale, precision="fp32")
    )
    branch = next(b.transition for b in variant.encoder.branches if hasattr(b.transition, "blocks"))

    def pytorch_layers() -> torch.Tensor:  # the branch as nn.TransformerEncoder computes it
        t = context.shape[0]
        x = rearrange(branch.tokenizer(context), "t b l d -> (t b) l d")
        out = rearrange(branch.blocks(x), "(t b) l d -> t b l d", t=t)
        return branch.head(out.mean(-2))

    passes = {
        "FOCAL++ encoder (attention blocks), query (forward + backward)": lambda: (
            encoder(context).per_transition.sum().backward()
        ),
        "FOCAL++ encoder (attention blocks), key (forward)": lambda: key(context),
        "output-sum variant's sequence attention, this project's layer (fwd + bwd)": lambda: (
            branch(context).sum().backward()
        ),
        "output-sum variant's sequence attention, PyTorch's layer (fwd + bwd)": lambda: (
            pytorch_layers().sum().backward()
        ),
    }
    shapes = [(512, 8, 24)] if quick else ENCODER_SHAPES
    peak = matmul_peak(shapes, torch.float32, torch.device("cpu"))["peak"]
    warmup, repeats = (1, 1) if quick else (2, 5)
    rows = []
    for name, fn in passes.items():
        ms = median_ms(fn, warmup, repeats)
        flops = count_flops(fn)
        rows.append(
            {
                "pass": name,
                "tasks": int(context.shape[0]),
                "transitions_per_task": int(context.shape[1]),
                "ms": ms,
                "gflop": flops / 1e9,
                "fraction_of_fp32_peak": flops / ms / 1e6 / peak,
                "fp32_peak_gflops": peak,
            }
        )
        encoder.zero_grad(set_to_none=True)
    table = Table(title=f"encoder: FOCAL++'s context encoder ({scale} sizes, fp32)")
    for column in ("pass", "ms", "GFLOP", "of fp32 peak"):
        table.add_column(column, justify="left" if column == "pass" else "right")
    for r in rows:
        table.add_row(
            r["pass"], f"{r['ms']:.1f}", f"{r['gflop']:.2f}", f"{r['fraction_of_fp32_peak']:.0%}"
        )
    console.print(table)
    console.print(f"fp32 matmul peak on the encoder's shapes: {peak:.1f} GFLOP/s")
    return rows


def bench_precision(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    small, paper_scale, paper = ("tiny", "tiny", ()) if quick else ("cpu", "paper", PAPER_SPR)
    configs = [
        StepConfig("(a) focal, reference sizes", "focal.gin", paper_scale, bindings=paper),
        StepConfig("(d) focalpp, paper sizes", "focalpp.gin", paper_scale),
        StepConfig("(c) focal, CPU scale", "focal.gin", small),
        StepConfig("(c) focalpp, CPU scale", "focalpp.gin", small),
    ]
    units = machine.bf16_units()
    seconds = 0.0 if quick else 3.0
    rows = []
    for config in configs:
        trainer = build_trainer(config)
        fp32 = trainer.loop.step_precision.trial(trainer, "fp32", trainer.loop.step, seconds)
        bf16 = trainer.loop.step_precision.trial(trainer, "bf16", trainer.loop.step, seconds)
        choice = measured(fp32, bf16)
        auto = choice.precision if units is not False else "fp32 (no bf16 units: not timed)"
        rows.append(
            {
                "config": config.name,
                "fp32_ms": fp32.ms_per_step,
                "bf16_ms": bf16.ms_per_step,
                "bf16_speedup": fp32.ms_per_step / bf16.ms_per_step,
                "loss_gap": choice.loss_gap,
                "auto": auto,
            }
        )
    table = Table(title=f"precision: what 'auto' chooses on {machine.summary()}")
    for column in ("step", "fp32 ms", "bf16 ms", "bf16 speed-up", "loss gap", "auto"):
        table.add_column(column, justify="left" if column in ("step", "auto") else "right")
    for r in rows:
        table.add_row(
            r["config"],
            f"{r['fp32_ms']:.1f}",
            f"{r['bf16_ms']:.1f}",
            f"{r['bf16_speedup']:.2f}×",
            f"{r['loss_gap']:.1%}",
            r["auto"],
        )
    console.print(table)
    return rows
