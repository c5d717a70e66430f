"""One random stream per seed, for the random draws of a seed-batched step.

A part draws its noise with `randn_like(t)` or `rand(*shape)` from this module. Outside a
batched step they are torch's own (`torch.randn_like`, `torch.rand`: the single run's numbers,
bit for bit). Inside `with drawing_from(streams):` the first dimension is read as K seeds'
rows, seed-major, and seed k's rows are drawn from seed k's generator: the numbers seed k's
single run draws at that point, provided the generators were seeded as the single runs'
global generator (`SeedStreams.capture`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import torch

_ACTIVE: ContextVar[SeedStreams | None] = ContextVar("seed_streams", default=None)


class SeedStreams:
    """K generators, seed k's at index k.

    Args:
        generators: one per seed, on the device the draws are made on.
    """

    def __init__(self, generators: Sequence[torch.Generator]):
        if not generators:
            raise ValueError("seed streams need at least one generator (one per seed)")
        self.generators = list(generators)

    @property
    def seeds(self) -> int:
        """K."""
        return len(self.generators)

    @staticmethod
    def capture(device: torch.device | str = "cpu") -> torch.Generator:
        """A generator in the state of torch's global generator of `device` now: what a single
        run would draw from next."""
        device = torch.device(device)
        g = torch.Generator(device=device)
        if device.type == "cpu":
            g.set_state(torch.get_rng_state())
        else:
            g.set_state(torch.cuda.get_rng_state(device))
        return g

    def rows(self, total: int) -> int:
        """Rows per seed of a first dimension of `total` (an error if K does not divide it)."""
        if total % self.seeds:
            raise ValueError(
                f"a seed-batched draw of {total} rows cannot be split among {self.seeds} seeds: "
                "the first dimension must hold every seed's rows, seed-major"
            )
        return total // self.seeds

    def randn(self, shape: Sequence[int], *, dtype=None, device=None) -> torch.Tensor:
        """Standard normal draws of `shape` ([K·R, ...]), seed k's R rows from generator k."""
        return self._draw(torch.randn, shape, dtype, device)

    def rand(self, shape: Sequence[int], *, dtype=None, device=None) -> torch.Tensor:
        """Uniform [0, 1) draws of `shape`, seed k's rows from generator k."""
        return self._draw(torch.rand, shape, dtype, device)

    def _draw(self, draw, shape: Sequence[int], dtype, device) -> torch.Tensor:
        r = self.rows(shape[0])
        return torch.cat(
            [draw(r, *shape[1:], generator=g, dtype=dtype, device=device) for g in self.generators]
        )

    def state(self) -> list[torch.Tensor]:
        """Every generator's state (a checkpoint keeps them)."""
        return [g.get_state() for g in self.generators]

    def set_state(self, states: Sequence[torch.Tensor]) -> None:
        if len(states) != self.seeds:
            raise ValueError(f"{len(states)} generator states for {self.seeds} seeds")
        for g, s in zip(self.generators, states, strict=True):
            g.set_state(s)


@contextmanager
def drawing_from(streams: SeedStreams) -> Iterator[SeedStreams]:
    """Inside, `randn_like` and `rand` draw seed by seed from `streams`."""
    token = _ACTIVE.set(streams)
    try:
        yield streams
    finally:
        _ACTIVE.reset(token)


def active() -> SeedStreams | None:
    """The streams in force, or None outside a seed-batched step."""
    return _ACTIVE.get()


def randn_like(t: torch.Tensor) -> torch.Tensor:
    """`torch.randn_like(t)`, or seed by seed from the active streams."""
    streams = _ACTIVE.get()
    if streams is None:
        return torch.randn_like(t)
    return streams.randn(t.shape, dtype=t.dtype, device=t.device)


def rand(*shape: int, dtype=None, device=None) -> torch.Tensor:
    """`torch.rand(*shape)`, or seed by seed from the active streams."""
    streams = _ACTIVE.get()
    if streams is None:
        return torch.rand(*shape, dtype=dtype, device=device)
    return streams.rand(shape, dtype=dtype, device=device)
