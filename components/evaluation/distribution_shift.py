"""Table 3 for a trained run: its test return when the test contexts come from each quality of
the dataset (trained on one quality, e.g. expert; tested with expert, medium, random contexts).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from registry import register


@register("analysis", "distribution_shift")
class ShiftAnalysis:
    """Args:
    qualities: the test-context qualities (default: every quality of the run's dataset).
    """

    section = "shift"  # the report section that tables it

    def __init__(self, *, qualities: Sequence[str] | None = None):
        self.qualities = qualities

    def __call__(self, trained, figures: Path) -> dict:
        qualities = self.qualities or trained.data.dataset.qualities
        shift = {}
        for quality in qualities:
            result = trained.evaluate(data=trained.data.dataset.quality(quality))
            shift[quality] = {"mean": result.mean, "std": result.std}
            if result.paper_returns is not None:
                shift[quality]["paper_mean"] = float(result.paper_returns.mean())
        return {"train_quality": trained.data.quality, "shift": shift}
