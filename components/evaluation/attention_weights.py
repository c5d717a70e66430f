"""Figure 4c: do batch-attention weights single out the transitions that carry reward?

On sparse data most transitions have zero reward and say nothing about the goal. A useful batch
attention gives the rewarded ones more weight: the ROC AUC of the weights as a score for
"non-zero reward" measures it (0.5: blind, 1: every rewarded transition outweighs every other;
the paper reports 0.969 on the relabeled Sparse-Point-Robot), and the two weight densities show
it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from components.data.context import ContextLayout
from components.data.sampler import TensorSampler
from components.evaluation.modes import eval_mode
from registry import register
from registry.constraints import PositiveInt


@dataclass(frozen=True)
class AttentionWeights:
    """weights [N] of N labelled context transitions; rewarded [N] (non-zero sparse reward)."""

    weights: np.ndarray
    rewarded: np.ndarray

    @property
    def auc(self) -> float | None:
        """ROC AUC of the weights for rewarded vs unrewarded; None if one class is missing."""
        return weights_auc(self.weights, self.rewarded)

    def densities(self, bins: PositiveInt = 50) -> dict[str, np.ndarray]:
        """Histogram densities of the weights of each class on shared bin edges."""
        edges = np.histogram_bin_edges(self.weights, bins=bins)
        out = {"edges": edges}
        for name, mask in (("rewarded", self.rewarded), ("unrewarded", ~self.rewarded)):
            if mask.any():
                out[name] = np.histogram(self.weights[mask], bins=edges, density=True)[0]
        return out


def weights_auc(weights: np.ndarray, rewarded: np.ndarray) -> float | None:
    rewarded = np.asarray(rewarded, dtype=bool)
    if rewarded.all() or not rewarded.any():
        return None
    # the area under the ROC curve as the Mann-Whitney U (ties count half), scikit-learn's
    # roc_auc_score's number without its 2 s import at the start of every analysing run
    _, position, counts = np.unique(
        np.asarray(weights, dtype=np.float64), return_inverse=True, return_counts=True
    )
    ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[position.reshape(-1)]  # mean rank of ties
    positives = int(rewarded.sum())
    negatives = rewarded.size - positives
    u = ranks[rewarded.reshape(-1)].sum() - positives * (positives + 1) / 2.0
    return float(u / (positives * negatives))


@torch.no_grad()
def attention_weights(
    encoder: nn.Module,
    sampler: TensorSampler,
    layout: ContextLayout,
    *,
    context_batch: int,
    draws: PositiveInt = 4,
) -> AttentionWeights:
    """The encoder's batch weights on `draws` context batches of every task of `sampler`,
    labelled by whether each transition's sparse reward is non-zero."""
    with eval_mode(encoder):
        positions = torch.arange(sampler.n_tasks, device=sampler.device).repeat(draws)
        batch = sampler.sample(positions, context_batch, sparse=layout.sparse)
        weights = encoder(layout.tensor(batch)).weights  # [T·D, B]
    rewarded = batch.sparse_reward.reshape(weights.shape) != 0
    return AttentionWeights(
        weights.reshape(-1).float().cpu().numpy(), rewarded.reshape(-1).cpu().numpy()
    )


@register("analysis", "attention_auc")
class AttentionAnalysis:
    """Figure 4c for a trained run: AUC of batch weights for rewarded transitions, and the
    two weight densities (`attention_densities.png`).

    Args:
        draws: context batches per training task.
        bins: histogram bins of the densities.
    """

    section = "attention_auc"  # the report section that tables it

    def __init__(self, *, draws: PositiveInt = 4, bins: PositiveInt = 50):
        self.draws, self.bins = draws, bins

    def __call__(self, trained, figures: Path) -> dict:
        result = attention_weights(
            trained.encoder,
            trained.train,
            trained.layout,
            context_batch=trained.sizes.context_batch,
            draws=self.draws,
        )
        gated = bool(np.ptp(result.weights) > 0)  # an encoder without a gate weighs all alike
        record = {
            "attention_auc": result.auc,
            "attention_gated": gated,
            "rewarded_fraction": float(result.rewarded.mean()),
        }
        if gated:
            d = result.densities(self.bins)
            series = {k: v for k, v in d.items() if k != "edges"}
            # imported when used, as sklearn is: matplotlib costs ~0.7 s of start-up
            from components.outputs.figures import densities as density_figure

            figure = density_figure(
                d["edges"],
                series,
                title=f"batch-attention weights (AUC {result.auc:.3f})"
                if result.auc is not None
                else "batch-attention weights",
                xlabel="weight",
                path=figures / "attention_densities.png",
            )
            record["attention_figure"] = figure.name
        return record
