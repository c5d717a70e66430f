"""Does a representation loss rise while the run trains? A failing seed's sign.

An encoder taught only by its objective should see that objective fall, or stay, over the
second half of training; on Sparse-Point-Robot the seeds of the output-sum FOCAL++ that ended
far below the others were the ones whose contrastive loss rose there (docs/RESULTS.md). For
each logged `loss_*` term the encoder learns from (the representation terms: contrastive,
DML, an encoder's own), the second half of the train records is cut in thirds, and the term is
flagged as rising when the mean of the last third exceeds the mean of the first by more than
`margin` (a fraction of the first's magnitude) and by more than two standard errors of the
difference. It reads metrics.jsonl only, so it runs on any run directory, checkpoint or not.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from components.outputs.metrics import read_metrics
from registry import register
from registry.constraints import Fraction

# loss terms that do not teach the encoder: the shipped agents' (BRAC's actor-critic and
# divergence critic, BCQ's, checked against every registered agent by a test) and MBML's
# teachers' and distillation's
AGENT_TERMS = (
    "loss_q",
    "loss_v",
    "loss_policy",
    "loss_alpha",
    "loss_divergence_critic",
    "loss_actor",
    "loss_critic",
    "loss_vae",
    "loss_reward_model",
    "loss_transition_model",
    "loss_actor_distill",
    "loss_q_distill",
)


@dataclass(frozen=True)
class Trend:
    """One loss term over the second half: the means and spreads of its first and last thirds."""

    term: str
    first: float
    last: float
    standard_error: float
    rising: bool


def _mean_se(values: list[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, math.sqrt(var / n)


def trends(records: list[dict[str, Any]], *, margin: float = 0.05) -> list[Trend]:
    """The representation terms' trends over the second half of a run's train records (none
    with fewer than six records in that half: too few to tell)."""
    train = [r for r in records if r.get("kind") == "train"]
    half = train[len(train) // 2 :]
    third = len(half) // 3
    if third < 2:
        return []
    terms = sorted({k for r in half for k in r if k.startswith("loss_") and k not in AGENT_TERMS})
    found = []
    for term in terms:
        head = [float(r[term]) for r in half[:third] if term in r]
        tail = [float(r[term]) for r in half[-third:] if term in r]
        if len(head) < 2 or len(tail) < 2:
            continue
        (first, se_first), (last, se_last) = _mean_se(head), _mean_se(tail)
        se = math.hypot(se_first, se_last)
        rising = last - first > max(margin * abs(first), 2.0 * se)
        found.append(Trend(term, first, last, se, rising))
    return found


def run_trends(run_dir: Path, *, margin: float = 0.05) -> dict[str, Any]:
    """A run directory's trends as JSON: {"rising": [terms], "terms": {term: Trend}}."""
    found = trends(read_metrics(Path(run_dir)), margin=margin)
    return {
        "rising": [t.term for t in found if t.rising],
        "terms": {t.term: asdict(t) for t in found},
    }


@register("analysis", "representation_trend")
class RepresentationTrend:
    """Flags a representation loss that rises over the second half of training.

    Args:
        margin: the rise that counts, as a fraction of the first third's mean magnitude.
    """

    section = "representation"  # the report section that tables it

    def __init__(self, *, margin: Fraction = 0.05):
        self.margin = margin

    def __call__(self, trained, figures: Path) -> dict[str, Any]:
        return run_trends(trained.run_context.run_dir, margin=self.margin)
