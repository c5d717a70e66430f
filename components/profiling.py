"""The named parts of a training step, for the step profile (`tools/bench.py --sections
profile`).

A training step marks its parts with `with part("critic"):`, or a method with
`@profiled("critic")` (so that the step itself reads as its algorithm). Outside a profile the
marker is a `nullcontext` (no work, nothing for a compiled step to trace); inside
`parts_recorded()` it is a profiler range, and `by_part` attributes each range's own time (its
time less that of the parts nested in it) and every ATen operation launched inside it to the
innermost part.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import TypeVar

import torch

F = TypeVar("F", bound=Callable)
_recording = False
OTHER = "rest of the step"  # what no marked part covers (Python between the parts, the loop)


def part(name: str):
    """A context that names a part of the step while a profile records, else does nothing."""
    return torch.profiler.record_function(name) if _recording else nullcontext()


def profiled(name: str) -> Callable[[F], F]:
    """Mark every call of the decorated function as the step's part `name` (`part`)."""

    def mark(function: F) -> F:
        @functools.wraps(function)
        def marked(*args, **kwargs):
            with part(name):
                return function(*args, **kwargs)

        return marked  # type: ignore[return-value]

    return mark


@contextmanager
def parts_recorded() -> Iterator[None]:
    """Inside: `part` opens profiler ranges."""
    global _recording
    _recording = True
    try:
        yield
    finally:
        _recording = False


@dataclass
class PartTime:
    ms: float = 0.0  # exclusive CPU time
    ops: int = 0  # ATen operations launched inside, nested parts excluded


def by_part(events: Iterable, names: set[str], total_ms: float) -> dict[str, PartTime]:
    """{part: its exclusive time and ATen operation count} over a profiler's `events()`
    (FunctionEvents, times in µs); what lies outside every part, of `total_ms`, is OTHER."""
    parts: dict[str, PartTime] = {}
    for event in events:
        owner = event.cpu_parent
        while owner is not None and owner.name not in names:
            owner = owner.cpu_parent
        if event.name in names:
            nested = sum(c.cpu_time_total for c in _child_parts(event, names))
            parts.setdefault(event.name, PartTime()).ms += (event.cpu_time_total - nested) / 1e3
        elif event.name.startswith("aten::"):
            parts.setdefault(owner.name if owner else OTHER, PartTime()).ops += 1
    covered = sum(p.ms for p in parts.values())
    parts.setdefault(OTHER, PartTime()).ms = max(0.0, total_ms - covered)
    return parts


def _child_parts(event, names: set[str]) -> list:
    """The nearest parts nested in `event` (through unnamed events)."""
    found = []
    for child in event.cpu_children:
        found += [child] if child.name in names else _child_parts(child, names)
    return found
