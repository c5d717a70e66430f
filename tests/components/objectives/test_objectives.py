"""Each objective against a direct formula on small inputs, plus masking and gradient flow."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from components.objectives.dml import FocalDML
from components.objectives.embeddings import TaskEmbeddings
from components.objectives.infonce import TransitionInfoNCE
from components.objectives.matrix_moco import MatrixMoCo
from registry import RecipeError, get


def embeddings(t=4, b=3, z=5, task=None, seed=0, keys=True):
    """float64 embeddings, so that comparisons against loops are exact to rounding."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(t, b, z, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(t, b, z, generator=g, dtype=torch.float64) if keys else None
    task = torch.arange(t) if task is None else torch.tensor(task)
    return TaskEmbeddings(q, q.mean(1), task, k, None if k is None else k.mean(1))


def test_registered_names():
    assert get("objective", "focal_dml") is FocalDML
    assert get("objective", "matrix_moco") is MatrixMoCo
    assert get("objective", "infonce") is TransitionInfoNCE


@pytest.mark.parametrize("form", ["reference", "paper"])
def test_dml_against_pair_loop(form):
    emb = embeddings(t=6, task=[0, 1, 0, 2, 1, 3])
    z, task = emb.query_mean.detach(), emb.task.tolist()
    pos, neg = [], []
    for i, j in itertools.combinations(range(6), 2):
        diff = z[i] - z[j]
        if form == "reference":
            d = float((diff**2).mean())
            (pos if task[i] == task[j] else neg).append(
                math.sqrt(d + 1e-3) if task[i] == task[j] else 1 / (d + 0.1)
            )
        else:
            d2 = float((diff**2).sum())
            (pos if task[i] == task[j] else neg).append(
                d2 if task[i] == task[j] else 2.0 / (d2**1.5 + 0.3)
            )
    expected = 10 * (sum(pos) / len(pos) + sum(neg) / len(neg))
    loss = FocalDML(form=form, weight=10, beta=2.0, n=3.0, eps=0.3)(emb)
    assert loss["loss_dml"].item() == pytest.approx(expected, rel=1e-10)
    assert int(loss["dml_positive_pairs"]) == 2


def test_dml_without_repeats_has_no_positive_term():
    out = FocalDML()(embeddings(t=4))
    assert float(out["dml_positive"]) == 0.0 and int(out["dml_positive_pairs"]) == 0


def test_matrix_moco_equals_sum_of_infonce_terms():
    emb = embeddings(t=5)
    q, k, tau = emb.query_mean, emb.key_mean, 0.5
    expected = 0.0
    for i in range(5):
        scores = torch.stack([q[i] @ k[j] / tau for j in range(5)])
        expected += -(scores[i] - torch.logsumexp(scores, 0))
    out = MatrixMoCo(temperature=tau)(emb)
    assert out["loss_contrastive"].item() == pytest.approx(expected.item(), rel=1e-12)
    mean = MatrixMoCo(temperature=tau, reduction="mean")(emb)["loss_contrastive"]
    assert mean.item() == pytest.approx(expected.item() / 5, rel=1e-12)


def test_matrix_moco_masks_repeated_tasks():
    emb = embeddings(t=4, task=[0, 1, 0, 2])
    q, k, tau = emb.query_mean, emb.key_mean, 0.5
    expected = 0.0
    for i in range(4):  # row 0 must not use row 2 (same task) as a negative, and vice versa
        allowed = [j for j in range(4) if j == i or emb.task[j] != emb.task[i]]
        scores = torch.stack([q[i] @ k[j] / tau for j in allowed])
        expected += -(scores[allowed.index(i)] - torch.logsumexp(scores, 0))
    out = MatrixMoCo(temperature=tau)(emb)
    assert out["loss_contrastive"].item() == pytest.approx(expected.item(), rel=1e-12)
    assert torch.isfinite(out["loss_contrastive"])


def test_infonce_against_loop():
    emb = embeddings(t=3, b=4)
    q, k, tau = emb.query, emb.key, 0.7
    terms = []
    for b in range(4):
        for i in range(3):
            scores = torch.stack([q[i, b] @ k[j, b] / tau for j in range(3)])
            terms.append(-(scores[i] - torch.logsumexp(scores, 0)))
    out = TransitionInfoNCE(temperature=tau)(emb)
    assert out["loss_contrastive"].item() == pytest.approx(
        torch.stack(terms).mean().item(), rel=1e-12
    )


@pytest.mark.parametrize("objective", [MatrixMoCo(), TransitionInfoNCE()])
def test_contrastive_objectives_need_a_key_encoder(objective):
    with pytest.raises(RecipeError, match=r"needs key .* no key encoder"):
        objective(embeddings(keys=False))


@pytest.mark.parametrize("objective", [FocalDML(), MatrixMoCo(), TransitionInfoNCE()])
def test_gradient_reaches_every_query_embedding(objective):
    emb = embeddings(t=4, task=[0, 1, 1, 2])
    out = objective(emb)
    (loss,) = [v for name, v in out.items() if name.startswith("loss_")]
    loss.backward()
    assert (emb.query.grad.abs().sum(-1) > 0).all()
    assert all(not v.requires_grad for name, v in out.items() if not name.startswith("loss_"))


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: FocalDML(form="squared"), "form must be 'reference' or 'paper'"),
        (
            lambda: MatrixMoCo(temperature=0.0),
            r"matrix_moco.temperature = 0.0: expected a finite float > 0",
        ),
        (lambda: MatrixMoCo(reduction="max"), "reduction must be 'sum' or 'mean'"),
        (lambda: TransitionInfoNCE(temperature=-1.0), r"infonce.temperature = -1.0: expected"),
    ],
)
def test_bad_settings(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()
