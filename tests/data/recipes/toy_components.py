"""Small real components for testing the registry and the run CLI (imported by the toy recipes)."""

from __future__ import annotations

import json

from registry import RunContext, register


@register("transition_encoder", "toy_linear")
class ToyLinear:
    """A linear map y = scale * x + shift."""

    def __init__(self, *, scale: float = 1.0, shift: float = 0.0):
        self.scale, self.shift = scale, shift

    def __call__(self, x: float) -> float:
        return self.scale * x + self.shift


@register("transition_encoder", "toy_square")
class ToySquare:
    """Squares its input."""

    def __call__(self, x: float) -> float:
        return x * x


@register("algorithm", "toy_algorithm")
class ToyAlgorithm:
    """Applies its encoder to `steps` inputs and writes the results to the run directory."""

    def __init__(self, *, run: RunContext, encoder=ToySquare, steps: int = 3, tag: str = "base"):
        self.run_context, self.encoder, self.steps, self.tag = run, encoder(), steps, tag

    def run(self) -> dict:
        values = [self.encoder(float(i)) for i in range(self.steps)]
        record = {"env": self.run_context.env, "seed": self.run_context.seed, "values": values}
        (self.run_context.run_dir / "result.json").write_text(json.dumps(record))
        return {"total": sum(values), "headline": f"toy total {sum(values):.1f}"}


@register("algorithm", "toy_dataset_algorithm")
class ToyDatasetAlgorithm:
    """Loads (building on first use) its environment's dataset and reports its size."""

    def __init__(self, *, run: RunContext, protocol: str = "checkpoints", quality: str = "expert"):
        from components.data.build import ensure_dataset

        self.dataset = ensure_dataset(run.env, protocol, seed=0)
        self.quality = quality

    def run(self) -> dict:
        data = self.dataset.quality(self.quality)
        return {"headline": f"{self.quality} transitions: {int(data.length.sum())}"}
