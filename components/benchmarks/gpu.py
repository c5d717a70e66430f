"""The `gpu` section of tools/bench.py: the paper scale on a CUDA GPU.

One training step of (a) `focal` at the FOCAL reference's Sparse-Point-Robot sizes and (d)
`focalpp` at the FOCAL++ paper's sizes, each in full fp32, in fp32 with TF32 matrix products
(what `loop.precision = 'auto'` allows on CUDA) and with bf16 autocast: milliseconds per step
(median of timed blocks after warm-up, the device synchronised around every step), steps per
second, the GPU memory the step holds at its peak (`torch.cuda.max_memory_allocated`), the
hours 100k steps take, and the fraction of the GPU's matmul peak measured in the same run.
Needs a CUDA GPU; not in the default sections.
"""

from __future__ import annotations

from pathlib import Path

import torch

from components.benchmarks.limits import count_flops, matmul_peak
from components.benchmarks.tables import console, table
from components.benchmarks.training import PAPER_SPR, StepConfig, build_trainer, step_ms
from registry import FocalppError

STEPS = 100_000  # the reference's FOCAL training length on Sparse-Point-Robot
PEAK_SHAPES = [(8192, 8192, 8192), (4096, 256, 256), (32768, 128, 384)]
# (name, recipe, bindings): the two paper-scale steps of the `train` section
CONFIGS = [
    ("(a) focal, reference sizes", "focal.gin", PAPER_SPR),
    ("(d) focalpp, paper sizes", "focalpp.gin", ()),
]
# precision label -> (the trainer's `loop.precision`, matmul precision for fp32 products)
PRECISIONS = {"fp32": ("fp32", "highest"), "tf32": ("fp32", "high"), "bf16": ("bf16", "highest")}


def bench_gpu(quick: bool, figures_dir: Path | None = None) -> list[dict]:
    if not torch.cuda.is_available():
        raise FocalppError(
            "the gpu section times the paper scale on a CUDA GPU, and this PyTorch sees none; "
            "run it on a machine with one (the other sections run on the CPU)"
        )
    device = torch.device("cuda")
    scale = "tiny" if quick else "paper"
    peaks = {
        "fp32": matmul_peak(PEAK_SHAPES, torch.float32, device)["peak"],
        "bf16": matmul_peak(PEAK_SHAPES, torch.bfloat16, device)["peak"],
    }
    torch.set_float32_matmul_precision("high")
    peaks["tf32"] = matmul_peak(PEAK_SHAPES, torch.float32, device)["peak"]
    rows = []
    for name, recipe, bindings in CONFIGS:
        for label, (precision, matmul) in PRECISIONS.items():
            torch.set_float32_matmul_precision(matmul)
            trainer = build_trainer(
                StepConfig(name, recipe, scale, bindings=() if quick else bindings,
                           precision=precision),
                device="cuda",
            )  # fmt: skip
            torch.cuda.reset_peak_memory_stats()
            ms = step_ms(trainer, warmup=3 if quick else 10, repeats=5, block=20)
            flops = count_flops(lambda trainer=trainer: _step(trainer))
            rows.append(
                {
                    "config": name,
                    "precision": label,
                    "ms_per_step": ms,
                    "steps_per_s": 1e3 / ms,
                    "hours_per_100k_steps": ms * STEPS / 3.6e6,
                    "peak_gpu_gib": torch.cuda.max_memory_allocated() / 2**30,
                    "gflop_per_step": flops / 1e9,
                    "fraction_of_peak": flops / (ms / 1e3) / (peaks[label] * 1e9),
                }
            )
            trainer.loop.meta_test.close()
            del trainer
            torch.cuda.empty_cache()
    torch.set_float32_matmul_precision("highest")
    table(
        f"gpu: one training step on {torch.cuda.get_device_name()}",
        rows,
        {
            "config": "{config}",
            "precision": "{precision}",
            "ms/step": "{ms_per_step:.1f}",
            "steps/s": "{steps_per_s:.1f}",
            "h / 100k steps": "{hours_per_100k_steps:.2f}",
            "peak GPU GiB": "{peak_gpu_gib:.2f}",
            "GFLOP/step": "{gflop_per_step:.2f}",
            "of its peak": "{fraction_of_peak:.1%}",
        },
    )
    console.print(
        f"matmul peak: fp32 {peaks['fp32']:,.0f}, tf32 {peaks['tf32']:,.0f}, "
        f"bf16 {peaks['bf16']:,.0f} GFLOP/s"
    )
    return [{"config": "matmul peak", "gflops": peaks}, *rows]


def _step(trainer) -> None:
    with trainer.autocast():
        trainer.train_step()
