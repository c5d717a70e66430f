"""Process-wide settings that make CPU training faster without changing any result.

`tune_allocator()` keeps glibc from returning every large freed block to the kernel: PyTorch on
CPU frees and reallocates megabyte-sized activations every step, and by default each of those
is a fresh mmap whose pages fault in again. Raising the mmap and trim thresholds keeps them in
the heap (measured: about 20% faster behaviour-SAC updates here, docs/DATASETS.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024  # glibc's ceiling for M_MMAP_THRESHOLD on 64-bit


def tune_allocator() -> bool:
    """Raise glibc's mmap/trim thresholds; returns False where there is no glibc (no effect)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl, macOS, Windows: nothing to tune
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)) and bool(
        mallopt(M_TRIM_THRESHOLD, 16 * MMAP_THRESHOLD_MAX)
    )


def resolve_device(name: str):
    """'auto' (CUDA if available, else CPU), 'cpu', 'cuda' or 'cuda:N' -> a torch.device.

    Portable numerics (components/numerics.py) are the CPU's: in a process that has them, 'auto'
    is the CPU and a GPU is refused, since a GPU's kernels round otherwise and a run recorded as
    portable would not be."""
    import torch

    import components.numerics as numerics
    from registry import FocalppError

    portable = numerics.mode() == numerics.PORTABLE
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() and not portable else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise FocalppError(
            f"device {name!r} was asked for, but this PyTorch sees no CUDA GPU; "
            "use --device cpu (or auto)"
        )
    if name.startswith("cuda") and portable:
        raise numerics.NumericsError(
            f"device {name!r} with portable numerics: they hold for CPU runs only (a GPU "
            "rounds otherwise); use --numerics free for a GPU run, or --device cpu"
        )
    try:
        return torch.device(name)
    except RuntimeError as e:
        raise FocalppError(f"unknown device {name!r}: expected auto, cpu, cuda or cuda:N") from e
