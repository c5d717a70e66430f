"""The machine's own limits: matmul throughput at the training step's shapes, the step's
floating-point operations counted by torch's FLOP counter, and a command's peak memory."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import torch
from torch.utils.flop_counter import FlopCounterMode

from components.checkout import checkout_env


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_gflops(
    shape: tuple[int, int, int],
    dtype: torch.dtype,
    device: torch.device,
    seconds: float = 0.5,
) -> float:
    """GFLOP/s of [m, k] @ [k, n] repeated for about `seconds` (after a warm-up)."""
    m, k, n = shape
    a = torch.randn(m, k, device=device).to(dtype)
    b = torch.randn(k, n, device=device).to(dtype)
    out = torch.empty(m, n, device=device, dtype=dtype)
    for _ in range(3):
        torch.mm(a, b, out=out)
    synchronize(device)
    calls, start = 0, time.perf_counter()
    while calls < 5 or time.perf_counter() - start < seconds:
        torch.mm(a, b, out=out)
        calls += 1
    synchronize(device)
    return 2.0 * m * k * n * calls / (time.perf_counter() - start) / 1e9


def matmul_peak(
    shapes: Sequence[tuple[int, int, int]], dtype: torch.dtype, device: torch.device
) -> dict[str, float]:
    """GFLOP/s per shape and their best, the peak the training step is compared with."""
    rates = {f"{m}x{k}x{n}": matmul_gflops((m, k, n), dtype, device) for m, k, n in shapes}
    return {**rates, "peak": max(rates.values())}


def count_flops(step: Callable[[], object]) -> int:
    """Floating-point operations of one call of `step` (forward and backward), as counted by
    `torch.utils.flop_counter` (matmuls and convolutions; elementwise ops are not counted)."""
    with FlopCounterMode(display=False) as counter:
        step()
    return int(counter.get_total_flops())


def peak_rss_kib(command: list[str]) -> int:
    """Peak resident KiB of `command`, measured by a fresh parent (RUSAGE_CHILDREN is the
    maximum over every child a process ever waited for)."""
    probe = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(done.stderr[-2000:])\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(done.returncode)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *command], capture_output=True, text=True, env=checkout_env()
    )
    if done.returncode != 0:
        raise RuntimeError(f"the measured run failed: {done.stderr}")
    return int(done.stdout.split()[-1])
