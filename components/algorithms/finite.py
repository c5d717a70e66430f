"""Finiteness of a training run, and where a NaN or an infinity first appeared.

A run that goes non-finite must stop, and the message must name the part that produced the
first bad value: by the time a loss is read (every `log_every` steps) a NaN made by one part has
spread through every later one and, through the optimisers, into every network upstream, so the
losses alone would blame the wrong part.

`FiniteWatch` keeps three kinds of evidence, all cheap:
- while a training step runs, a forward hook on each part that is called (the encoders, the
  objective) and on each of its direct children that is a registered component other than a
  plain network (a transition encoder, a gate) records whether its output tensors are all
  finite: one on-device flag per call, no synchronisation;
- after each step, the step's loss terms (already computed, kept by reference), in the order
  the step computed them: these place a NaN made inside the actor-critic's update (loss_q: the
  critic; loss_v: the value; loss_policy: the policy);
- at each check (the loop's logging steps, and before every checkpoint), every parameter,
  gradient and floating buffer of every part, with the losses summed since the last check.
The first of the flags and step losses that is not finite gives the step and the module (or
loss) where the first non-finite value appeared; the tensors and summed losses say how far it
has spread, and catch what no output shows (a network whose weights went non-finite with no
forward call since). Hooks on every network of the actor-critic as well would name
them more finely but cost about 10% of a CPU-scale FOCAL step (eight calls a step on an Intel
Xeon); these cost about 1-3%.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

import torch
from rich.markup import escape
from torch import nn

from components.outputs.checkpoint import CHECKPOINT
from components.outputs.console import err
from registry import FocalppError, entry_of


@dataclass(frozen=True)
class Findings:
    """What a check found non-finite; empty when all is well."""

    first: str | None  # the module whose output went non-finite first, with its step
    losses: dict[str, float]  # loss terms (summed since the last check) that are not finite
    tensors: dict[str, list[str]]  # part -> its non-finite parameters / gradients / buffers

    def __bool__(self) -> bool:
        return bool(self.first or self.losses or self.tensors)

    def describe(self, steps: str) -> str:
        """Where the first non-finite value appeared, then how far it had spread by the check;
        `steps` is the range checked, e.g. '3-4'."""
        said = [f"a non-finite value first appeared in {self.first}"] if self.first else []
        by_value: dict[str, list[str]] = {}  # 'nan', 'inf', '-inf' (nan != nan as a key)
        for name, value in self.losses.items():
            by_value.setdefault(str(value), []).append(name)
        said += [f"{', '.join(names)} became {v} in steps {steps}" for v, names in by_value.items()]
        if self.tensors:
            parts = [
                f"{part}: {len(bad)} ({', '.join(bad[:2])}{', …' if len(bad) > 2 else ''})"
                for part, bad in self.tensors.items()
            ]
            said.append(f"non-finite tensors in {'; '.join(parts)}")
        return "; ".join(said)


class FiniteWatch:
    """Watches the named parts of a learner (see the module's docstring).

    `parts`: name → module, in the order a training step uses them (None entries are skipped).
    Hooks record only between `begin(step)` and `end()`, so meta-tests, analyses and precision
    trials add nothing.
    """

    def __init__(self, parts: Mapping[str, nn.Module | None]):
        self.parts = {name: module for name, module in parts.items() if module is not None}
        # (step, what, tensor, is_flag): a hook's finiteness flag, or a step's loss value
        self._evidence: list[tuple[int, str, torch.Tensor, bool]] = []
        self._step: int | None = None
        self._handles = []
        for name, module in self.parts.items():
            for label, watched in _watched_modules(name, module):
                self._handles.append(watched.register_forward_hook(self._hook(label)))

    @classmethod
    def of(cls, learner, seeds: bool) -> FiniteWatch:
        """The watch of a learner's parts (`learner.parts()`; an algorithm of one's own written
        before `parts` existed has its losses checked still); K seeds trained together
        (`seeds`) are checked seed by seed from their losses (`stop_diverged_seeds`)."""
        parts = learner.parts() if hasattr(learner, "parts") and not seeds else {}
        return cls(parts)

    def _hook(self, label: str):
        def record(module, inputs, output) -> None:
            if self._step is None:
                return
            tensors = [t for t in _tensors(output) if t.is_floating_point()]
            if tensors:
                flat = torch.cat([t.detach().reshape(-1) for t in tensors])  # one check, not k
                ok = torch.isfinite(flat).all()
                self._evidence.append((self._step, f"the output of {label}", ok, True))

        return record

    def begin(self, step: int) -> None:
        """The training step `step` (counted from 1) starts."""
        self._step = step

    def end(self, metrics: Mapping[str, torch.Tensor]) -> None:
        """The step ends with these metrics; its `loss_*` terms are kept by reference."""
        for name, value in metrics.items():
            if name.startswith("loss_"):
                self._evidence.append((self._step, name, value, False))
        self._step = None

    def check(self, losses: Mapping[str, torch.Tensor]) -> Findings:
        """Everything recorded since the last check, the losses summed since then, and every
        tensor of every part now; forgets the records."""
        evidence, self._evidence = self._evidence, []
        first = None
        if evidence:
            flags = [
                t if is_flag else torch.isfinite(t.detach().float()) for *_, t, is_flag in evidence
            ]
            ok = torch.stack(flags)
            if not bool(ok.all()):
                step, what, *_ = evidence[int((~ok).nonzero()[0])]
                first = f"{what} at step {step}"
        bad_losses = {}
        if losses:  # one synchronisation for all of them
            values = torch.stack([v.detach().float() for v in losses.values()]).tolist()
            bad_losses = {k: v for k, v in zip(losses, values, strict=True) if not math.isfinite(v)}
        tensors = {}
        for name, module in self.parts.items():
            bad = _non_finite_tensors(module)
            if bad:
                tensors[_label(name, module)] = bad
        if first is None and tensors:  # weights went bad with no forward call since
            first = f"{next(iter(tensors))}'s tensors"
        return Findings(first, bad_losses, tensors)

    def forget(self) -> None:
        """Drop what was recorded since the last check (seeds trained together are checked
        seed by seed from their losses instead)."""
        self._evidence = []

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _watched_modules(name: str, module: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """The part and those of its direct children that are registered components other than
    plain networks (a transition encoder, a gate, a divergence critic; not an MLP: the
    actor-critic's networks are placed by their losses, at no cost), each with a label for
    messages. A child's hook fires before its parent's (it returns first), so the innermost bad
    output is the one named."""
    yield _label(name, module), module
    for child_name, child in module.named_children():
        entry = entry_of(type(child))
        if entry is not None and entry.kind != "network":
            yield _label(f"{name}.{child_name}", child), child


def _label(name: str, module: nn.Module) -> str:
    """`encoder (@context_encoder)`, or the class name for an unregistered module."""
    entry = entry_of(type(module))
    return f"{name} ({f'@{entry.name}' if entry else type(module).__name__})"


def _tensors(value) -> Iterator[torch.Tensor]:
    """Every tensor in an output: a tensor, a dataclass (Encoded, a policy sample), a mapping
    (an objective's terms) or a sequence of them."""
    if isinstance(value, torch.Tensor):
        yield value
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            yield from _tensors(getattr(value, f.name))
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _tensors(v)
    elif isinstance(value, tuple | list):
        for v in value:
            yield from _tensors(v)


def _non_finite_tensors(module: nn.Module) -> list[str]:
    """Names of the module's parameters, gradients and floating buffers that hold a NaN or an
    infinity (one reduction each: this runs at logging steps only)."""
    named = []
    for name, p in module.named_parameters():
        named.append((name, p))
        if p.grad is not None:
            named.append((f"{name}.grad", p.grad))
    named += [(n, b) for n, b in module.named_buffers() if b.is_floating_point()]
    if not named:
        return []
    ok = torch.stack([torch.isfinite(t.detach()).all() for _, t in named]).tolist()
    return [name for (name, _), fine in zip(named, ok, strict=True) if not fine]


class TrainingDiverged(FocalppError):
    """A loss became NaN or infinite."""


def kept(run_dir: Path) -> str:
    """What a stopped run leaves to go back to."""
    checkpoint = Path(run_dir) / CHECKPOINT
    if checkpoint.exists():
        return f"the last good checkpoint is {checkpoint}"
    return "no checkpoint had been written yet"


def stop_diverged_seeds(runs: list, losses: dict[str, torch.Tensor], steps: str) -> None:
    """Of K seeds trained together (`runs`: RunRecords), stop each seed still training whose
    summed losses over `steps` are not finite (each seed's numbers depend on its own alone);
    raise TrainingDiverged once none trains."""
    for run in [r for r in runs if r.stopped is None]:
        bad = {k: float(run.value(v)) for k, v in losses.items()}
        bad = {k: v for k, v in bad.items() if not math.isfinite(v)}
        if bad:
            what = ", ".join(f"{k} became {v}" for k, v in bad.items())
            run.stopped = f"{what} in steps {steps}"
            err.print(
                f"[yellow]seed {run.seed} stopped:[/] {escape(run.stopped)}; "
                f"{escape(kept(run.run_dir))}; the other seeds go on"
            )
    if all(run.stopped is not None for run in runs):
        every = "; ".join(f"seed {r.seed}: {r.stopped}" for r in runs)
        raise TrainingDiverged(
            f"every seed's losses went non-finite ({every}); lower the learning rates or the "
            "reward scale of the recipe"
        )


def check_losses(
    watch: FiniteWatch | None, runs: list, losses: dict[str, torch.Tensor], steps: str, run_dir
) -> None:
    """The loop's check of the losses summed over `steps` (and, for a single run, of every
    watched part's tensors): a single run that went non-finite stops, naming where the first
    non-finite value appeared; of K seeds trained together (`runs`), those whose losses did."""
    if runs and runs[0].index is not None:
        if watch is not None:
            watch.forget()  # its evidence does not tell the seeds apart
        stop_diverged_seeds(runs, losses, steps)
        return
    findings = watch.check(losses) if watch else None
    if findings:
        raise TrainingDiverged(
            f"{findings.describe(steps)}; training stopped and {kept(run_dir)}. Lower the "
            "learning rates or the reward scale of the recipe, or fix the part named"
        )
