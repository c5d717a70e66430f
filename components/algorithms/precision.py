"""The training step's numeric precision, chosen by the machine: `loop.precision = 'auto'`.

bf16 autocast halves a large step on CPUs with bf16 matrix units (AMX, AVX-512 BF16) and on
GPUs, but it is several times slower where bf16 is emulated and slows small steps everywhere
(docs/PERFORMANCE.md). So 'auto' does not guess: on a CPU without bf16 units it takes fp32;
otherwise it times a few fp32 and bf16 steps of the run's own step from the same state and the
same random draws (in turn, twice each, the fastest of each counting), and takes bf16 only
where it is at least `MIN_SPEEDUP` times faster and its first step's losses agree with fp32's
within `LOSS_RTOL`. The measurement is cached per machine
and step size (the networks' shapes and batch sizes), so later runs of that size start at once;
runs that start together take turns at it, so that they agree and no two trials run at once.
On CUDA, fp32 matrix products use TF32 (`torch.set_float32_matmul_precision('high')`, as
PyTorch recommends for training) under 'auto'; an explicit 'fp32' keeps full fp32.
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

import components.machine as machine
import components.numerics as numerics
from components.outputs.checkpoint import restore_rng_state, rng_state
from components.outputs.run_dir import atomic_write_text
from registry import RecipeError

AUTO = "auto"
PRECISIONS = {"fp32": None, "bf16": torch.bfloat16}
LOSS_RTOL = 0.05  # bf16 keeps 8 bits of mantissa: one step's losses agree within about 2%
# bf16 only where clearly faster: small steps time within ±10% of each other from run to run,
# and a coin-flip choice would give one machine's runs different numbers for no real gain
MIN_SPEEDUP = 1.1
ROUNDS = 2  # trials of each precision, interleaved


@dataclass(frozen=True)
class Trial:
    """One precision's measured step: milliseconds per step and the first step's losses."""

    ms_per_step: float
    losses: dict[str, float]


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision a run trains in, what was asked for, and why."""

    precision: str
    requested: str
    reason: str
    bf16_speedup: float | None = None  # fp32 ms / bf16 ms per step, where measured
    loss_gap: float | None = None  # the largest relative difference of the first losses

    def describe(self) -> str:
        return f"precision: {self.precision} ({self.reason})"

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def time_step(learner, autocast: Callable[[], Any], step: int, seconds: float = 0.5) -> Trial:
    """Time the learner's step under `autocast()` (one warm-up step, whose losses are kept, then
    at least two steps and about `seconds`), then put back its networks, optimisers and random
    states: the run goes on as if nothing had happened."""
    saved = {"step": step, **copy.deepcopy(learner.parts_state())}
    rng = rng_state(learner.generators())
    try:
        with autocast():
            first = learner.train_step()
        losses = loss_values(first)
        steps, start = 0, time.perf_counter()
        while steps < 2 or time.perf_counter() - start < seconds:
            with autocast():
                last = learner.train_step()
            steps += 1
        float(next(iter(last.values()), torch.zeros(())).sum())  # wait for the device
        ms = (time.perf_counter() - start) / steps * 1e3
    finally:
        learner.load_parts_state(saved)
        restore_rng_state(rng, learner.generators())
    return Trial(ms, losses)


def loss_values(metrics: dict[str, torch.Tensor]) -> dict[str, float]:
    """A step's losses as numbers, one per loss, or one per seed where K seeds train together
    (`loss_q[2]`: seed index 2), so that a precision trial holds bf16 to fp32 on every seed."""
    values = {}
    for name, value in metrics.items():
        if not name.startswith("loss_"):
            continue
        if value.numel() == 1:
            values[name] = float(value)
        else:
            values.update({f"{name}[{k}]": float(v) for k, v in enumerate(value.flatten())})
    return values


def cache_file() -> Path:
    """$FOCALPP_CACHE/precision.json, else <user cache dir>/focalpp/precision.json."""
    root = os.environ.get("FOCALPP_CACHE")
    if root is None:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "focalpp"
    return Path(root).expanduser() / "precision.json"


def machine_key(device: torch.device, size_key: str) -> str:
    """The cache key: this machine, this torch, and the step's sizes."""
    if device.type == "cuda":
        where = torch.cuda.get_device_name(device)
    else:
        where = f"{machine.cpu_model()} {machine.vector_units()} x{torch.get_num_threads()}"
    raw = f"{where}|torch {torch.__version__}|{device.type}|{size_key}"
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def choose(
    requested: str,
    device: torch.device,
    size_key: str,
    trial: Callable[[str], Trial],
    *,
    cache: Path | None = None,
    bf16_units: bool | None = None,
) -> PrecisionChoice:
    """The precision for a run that asked for `requested` ('fp32', 'bf16' or 'auto');
    `trial(precision)` measures the run's step in a precision and leaves its state as it was.
    `bf16_units`: whether the CPU has them (default: read from the CPU's flags)."""
    if requested != AUTO:
        return PrecisionChoice(requested, requested, "set by loop.precision")
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")  # TF32 for fp32 matmuls
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        return PrecisionChoice("fp32", AUTO, "this GPU has no bf16; fp32 with TF32")
    if bf16_units is None:
        bf16_units = machine.bf16_units()
    if device.type == "cpu" and bf16_units is False:
        units = machine.vector_units()
        return PrecisionChoice("fp32", AUTO, f"no bf16 units on this CPU ({units})")
    path = cache or cache_file()
    key = machine_key(device, size_key)
    # One measurement at a time per machine: runs of one size that start together (a study's
    # seed groups) take the first one's choice, and no trial is timed beside another.
    with _measuring(path):
        known = _read(path)
        if key in known:
            return PrecisionChoice(**{**known[key], "reason": known[key]["reason"] + ", cached"})
        choice = measured(*interleaved(trial))
        known[key] = choice.to_dict()
        atomic_write_text(path, json.dumps(known, indent=1, sort_keys=True))
    return choice


@contextmanager
def _measuring(path: Path):
    """Hold the precision cache's lock (the kernel drops it when the process ends, however
    it ends; the empty lock file left behind is harmless)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def interleaved(trial: Callable[[str], Trial], rounds: int = ROUNDS) -> tuple[Trial, Trial]:
    """fp32's and bf16's trials taken in turn, `rounds` of each, and each precision's fastest
    (with its first trial's losses): a burst of other work on the machine slows one trial, not
    every trial of one precision, and a choice made once is cached for every later run."""
    times: dict[str, list[Trial]] = {"fp32": [], "bf16": []}
    for _ in range(rounds):
        for precision in times:
            times[precision].append(trial(precision))
    fp32, bf16 = (Trial(min(t.ms_per_step for t in ts), ts[0].losses) for ts in times.values())
    return fp32, bf16


def measured(fp32: Trial, bf16: Trial) -> PrecisionChoice:
    """bf16 where it is clearly faster and its losses agree with fp32's, else fp32."""
    speedup = fp32.ms_per_step / bf16.ms_per_step
    gaps = [
        abs(bf16.losses.get(k, float("nan")) - v) / max(abs(v), 1.0) for k, v in fp32.losses.items()
    ]
    gap = max(gaps, default=0.0)
    gap = gap if gap == gap else float("inf")  # a NaN loss in bf16: no agreement
    timed = f"bf16 {bf16.ms_per_step:.1f} ms vs fp32 {fp32.ms_per_step:.1f} ms per step"
    if speedup < MIN_SPEEDUP:
        reason = f"measured: {timed}"
        return PrecisionChoice("fp32", AUTO, reason, round(speedup, 3), round(gap, 4))
    if gap > LOSS_RTOL:
        reason = f"measured: {timed}, but losses differ by {gap:.1%} (> {LOSS_RTOL:.0%})"
        return PrecisionChoice("fp32", AUTO, reason, round(speedup, 3), round(gap, 4))
    reason = f"measured: {timed}, losses within {gap:.1%}"
    return PrecisionChoice("bf16", AUTO, reason, round(speedup, 3), round(gap, 4))


def _read(path: Path) -> dict:
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):  # none yet, or unreadable: measure again and rewrite it
        return {}
    return known if isinstance(known, dict) else {}


def portable() -> bool:
    return numerics.mode() == numerics.PORTABLE


class StepPrecision:
    """A run's step precision (`loop.precision`): as asked, or for 'auto' settled by `choose`
    before the first step; `choice` goes into every checkpoint, so a resumed run keeps it."""

    def __init__(self, requested: str, device: torch.device):
        if requested not in (*PRECISIONS, AUTO):
            raise RecipeError(
                f"loop.precision = {requested!r}: expected one of {sorted([*PRECISIONS, AUTO])}"
            )
        self.requested, self.device = requested, device
        self.choice: PrecisionChoice | None = None

    def autocast(self, precision: str | None = None):
        """The step's autocast (a no-op for fp32): `precision`, else the run's choice, else the
        request ('auto' not settled yet: fp32)."""
        if precision is None:
            precision = self.choice.precision if self.choice else self.requested
        dtype = PRECISIONS.get(precision)
        return torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None)

    def trial(self, learner, precision: str, step: int, seconds: float = 0.5) -> Trial:
        """The learner's step timed in `precision`, its state then put back (`time_step`)."""
        return time_step(learner, lambda: self.autocast(precision), step, seconds)

    def settle(self, learner, step: int) -> PrecisionChoice:
        """The run's choice (kept where a resumed checkpoint brought one). With portable
        numerics a step is fp32: a bf16 step rounds by the CPU's bf16 units."""
        if self.choice is None and self.device.type == "cpu" and portable():
            if self.requested == "bf16":
                raise RecipeError(
                    "loop.precision = 'bf16' with portable numerics: a bf16 step rounds by the "
                    "CPU's bf16 units, so it gives other bits on other CPUs; use 'fp32' (or "
                    "'auto'), or --numerics free"
                )
            reason = "portable numerics: fp32, the same bits on every CPU"
            self.choice = PrecisionChoice("fp32", self.requested, reason)
        if self.choice is None:
            trial = lambda p: self.trial(learner, p, step)  # noqa: E731
            self.choice = choose(self.requested, self.device, learner.size_key(), trial)
        return self.choice
