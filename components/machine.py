"""What this machine is: the CPU's model and its vector and matrix units, the torch threads.

Timings are only comparable on one machine, so every benchmark and every automatic precision
choice names it. The CPU's units decide what bf16 costs: without bf16 instructions PyTorch
converts and multiplies in software (many times slower than fp32); AVX-512 BF16 and AMX run
bf16 matrix products natively.
"""

from __future__ import annotations

import os
import platform
from functools import cache
from pathlib import Path

# /proc/cpuinfo flags (x86) and Features (Arm) that run bf16 arithmetic natively
BF16_FLAGS = ("amx_bf16", "avx512_bf16", "avx_ne_convert", "bf16")


@cache
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_model() -> str:
    info = _cpuinfo()
    return info.get("model name") or info.get("Model") or platform.processor() or "unknown CPU"


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (empty where the OS does not list them)."""
    info = _cpuinfo()
    return frozenset((info.get("flags") or info.get("Features") or "").split())


def vector_units(flags: frozenset[str] | None = None) -> str:
    """The widest x86 vector / matrix units, e.g. 'AVX2', 'AVX-512', 'AVX-512 + AMX'."""
    flags = cpu_flags() if flags is None else flags
    if not flags:
        return "unknown"
    if "avx512f" in flags:
        units = "AVX-512"
    elif "avx2" in flags:
        units = "AVX2"
    elif "asimd" in flags:
        units = "NEON" + (" + SVE" if "sve" in flags else "")
    else:
        units = "SSE"
    return units + (" + AMX" if "amx_tile" in flags else "")


def bf16_units(flags: frozenset[str] | None = None) -> bool | None:
    """True where the CPU runs bf16 natively, False where it cannot, None where unknown."""
    flags = cpu_flags() if flags is None else flags
    if not flags:
        return None
    return any(f in flags for f in BF16_FLAGS)


def describe() -> dict:
    """The machine as a benchmark or a run records it."""
    import torch

    flags = cpu_flags()
    record = {
        "cpu": cpu_model(),
        "vector_units": vector_units(flags),
        "bf16_units": bf16_units(flags),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
    }
    if torch.cuda.is_available():
        record["gpu"] = torch.cuda.get_device_name()
    return record


def cpu(record: dict | None = None) -> str:
    """The CPU as a record names it: 'AMD EPYC (AVX-512, bf16 units)' (one model name covers
    machines with and without AVX-512 and bf16 units, which time and round differently)."""
    r = describe() if record is None else record
    bf16 = {True: "bf16 units", False: "no bf16 units", None: "bf16 units unknown"}
    return f"{r['cpu']} ({r['vector_units']}, {bf16[r['bf16_units']]})"


def summary(record: dict | None = None) -> str:
    """One line: 'AMD EPYC (AVX-512, bf16 units), 2 torch threads'."""
    r = describe() if record is None else record
    line = f"{cpu(r)}, {r['torch_threads']} torch threads"
    return line + (f", GPU {r['gpu']}" if r.get("gpu") else "")
