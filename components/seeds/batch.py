"""A learner's K seeds: which seeds it trains together, each seed's draws, and each seed seen as
a single run.

A learner holds one `SeedBatch` (`learner.seed_batch`); for a single run it holds one seed and
changes nothing. For K seeds (`tools/run.py --seeds`), the learner builds each seed's parts as
its single run would, stacks them (`layers.stack_modules`) and hands the batch each seed's random
stream, its per-seed sampler and single modules to load seed k's weights into (`begin`); the
batch then says where a step draws from (`drawing`), which generators a checkpoint keeps per
seed (`generators`), and lends the learner seed k's networks (`as_seed`) for that seed's
summary and analyses (and its meta-test where the K are not meta-tested at once:
`loop.seeds_together`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from components.seeds.layers import unstack_state
from components.seeds.streams import SeedStreams, drawing_from
from registry import RecipeError


class SeedBatch:
    """The seeds of one learner (`seeds`: the run's, or its one seed; `batched`: several).

    owner: the learner's class; one without `seed_batching = True` is refused K seeds, by name.
    """

    def __init__(self, seeds: tuple[int, ...], seed: int, owner: type):
        self.seeds = tuple(seeds) or (seed,)
        self.batched = bool(seeds)
        if self.batched and not getattr(owner, "seed_batching", False):
            raise RecipeError(
                f"{owner.__name__} cannot train several seeds in one process (--seeds): it "
                "has no seed-batched form; run its seeds as single runs, one process each"
            )
        self.streams: SeedStreams | None = None  # each seed's random stream
        self.sampler: Any = None  # each seed's draws of the data (a SeedSampler)
        self.views: dict[str, torch.nn.Module] = {}  # attribute -> a single module
        self.index: int | None = None  # the seed lent to the learner by `as_seed`

    def begin(self, streams: SeedStreams, sampler: Any, views: dict[str, torch.nn.Module]):
        """The seed-batched learner is built: its seeds' streams, sampler and single views."""
        self.streams, self.sampler, self.views = streams, sampler, views

    def seed(self, default: int) -> int:
        """The seed being evaluated: seed k's while `as_seed(k)` is active, else `default`."""
        return self.seeds[self.index] if self.index is not None else default

    def drawing(self) -> contextlib.AbstractContextManager:
        """Where a step's random draws come from: torch's generator for a single run, each
        seed's own stream for seeds trained together."""
        return drawing_from(self.streams) if self.streams else contextlib.nullcontext()

    def generators(self) -> dict[str, torch.Generator]:
        """Each seed's stream and sampler generator, named for a checkpoint (none if single)."""
        if self.streams is None:
            return {}
        return {
            name: generator
            for k, stream in enumerate(self.streams.generators)
            for name, generator in (
                (f"seed{k}.stream", stream),
                (f"seed{k}.sampler", self.seed_generators(k)["sampler"]),
            )
        }

    def seed_generators(self, k: int) -> dict[str, torch.Generator]:
        """Seed k's own generators, named as a single run's."""
        return {"sampler": self.sampler.generators[k]}

    @contextlib.contextmanager
    def as_seed(self, learner: Any, k: int) -> Iterator[Any]:
        """Inside, `learner`'s networks named in `views` are seed k's, as single modules."""
        batched = {name: getattr(learner, name) for name in self.views}
        try:
            for name, single in self.views.items():
                single.load_state_dict(unstack_state(batched[name].state_dict(), k))
                setattr(learner, name, single)
            self.index = k
            yield learner
        finally:
            for name, module in batched.items():
                setattr(learner, name, module)
            self.index = None
