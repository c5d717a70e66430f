"""Theorem 3.1: matrix-form momentum contrast = average supervised logistic loss of the mean
task classifier whose rows are the key vectors (rescaled by 1/τ, appendix B); and the matrix
form = the sum of T InfoNCE terms (paper Eqs. InfoNCE and matrix-formMC).

One side calls the registered `matrix_moco` objective, the other a direct formula written from
the paper with explicit loops. Tolerances: float64, relative 1e-9 (rounding of a few hundred
operations; logits reach ~1e4, so absolute agreement is checked relative to the loss' size).
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given

import components.objectives.matrix_moco  # noqa: F401  (registers matrix_moco)
from components.objectives.embeddings import TaskEmbeddings
from registry import get
from tests.theory.strategies import meta_batches, temperatures

REL = 1e-9


def objective(tau: float, reduction: str):
    return get("objective", "matrix_moco")(temperature=tau, reduction=reduction)


def embeddings(query: np.ndarray, key: np.ndarray) -> TaskEmbeddings:
    q = torch.tensor(query, requires_grad=True)
    k = torch.tensor(key)
    return TaskEmbeddings(q, q.mean(1), torch.arange(len(q)), k, k.mean(1))


def logistic(v: list[float]) -> float:
    """ℓ(v) = log(1 + Σ_i exp(−v_i)), evaluated stably."""
    return float(np.logaddexp.reduce(np.concatenate([[0.0], -np.asarray(v)])))


def supervised_mean_classifier_loss(
    query_means: np.ndarray, key_means: np.ndarray, tau: float
) -> float:
    """L^μ_sup = (1/T) Σ_i ℓ({g_i − g_i′}_{i′≠i}), g = W z^q_i, W rows = key means / τ."""
    w = key_means / tau
    t = len(w)
    total = 0.0
    for i in range(t):
        g = [float(np.dot(w[j], query_means[i])) for j in range(t)]
        total += logistic([g[i] - g[j] for j in range(t) if j != i])
    return total / t


def infonce_terms(query_means: np.ndarray, key_means: np.ndarray, tau: float) -> list[float]:
    """Eq. InfoNCE with z^q = query mean i, positive its own key mean, negatives the others."""
    terms = []
    for i in range(len(query_means)):
        scores = np.array([np.dot(query_means[i], k) / tau for k in key_means])
        terms.append(-(scores[i] - np.logaddexp.reduce(scores)))
    return terms


@given(batch=meta_batches(max_batch=1), tau=temperatures)
def test_matrix_moco_equals_mean_classifier_loss(batch, tau):
    query, key = batch
    emb = embeddings(query, key)
    ours = objective(tau, "mean")(emb)["loss_contrastive"].item()
    expected = supervised_mean_classifier_loss(query[:, 0], key[:, 0], tau)
    assert np.isclose(ours, expected, rtol=REL, atol=REL * max(1.0, abs(expected)))


@given(batch=meta_batches(), tau=temperatures)
def test_equivalence_holds_for_batch_means(batch, tau):
    query, key = batch
    emb = embeddings(query, key)
    ours = objective(tau, "mean")(emb)["loss_contrastive"].item()
    expected = supervised_mean_classifier_loss(query.mean(1), key.mean(1), tau)
    assert np.isclose(ours, expected, rtol=REL, atol=REL * max(1.0, abs(expected)))


@given(batch=meta_batches(), tau=temperatures)
def test_equivalence_holds_for_gradients(batch, tau):
    """d/d(query embeddings) of both sides agree: the classifier view is the training signal."""
    query, key = batch
    emb = embeddings(query, key)
    objective(tau, "mean")(emb)["loss_contrastive"].backward()
    ours = emb.query.grad.numpy()

    q = torch.tensor(query, requires_grad=True)
    w = torch.tensor(key).mean(1) / tau  # mean task classifier, rows = key means / τ
    qm = q.mean(1)
    t = len(w)
    losses = []
    for i in range(t):
        margins = torch.stack([(w[i] - w[j]) @ qm[i] for j in range(t) if j != i])
        losses.append(torch.logsumexp(torch.cat([torch.zeros(1, dtype=q.dtype), -margins]), 0))
    (torch.stack(losses).sum() / t).backward()
    scale = max(1.0, float(np.abs(q.grad.numpy()).max()))
    np.testing.assert_allclose(ours, q.grad.numpy(), rtol=REL, atol=REL * scale)


@given(batch=meta_batches(), tau=temperatures)
def test_matrix_form_is_the_sum_of_infonce_terms(batch, tau):
    query, key = batch
    emb = embeddings(query, key)
    ours = objective(tau, "sum")(emb)["loss_contrastive"].item()
    expected = float(np.sum(infonce_terms(query.mean(1), key.mean(1), tau)))
    assert np.isclose(ours, expected, rtol=REL, atol=REL * max(1.0, abs(expected)))
