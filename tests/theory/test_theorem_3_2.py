"""Theorem 3.2 (better surrogate): L_sup(E) ≤ L_sup^μ(E) ≤ L_un(E) on finite task sets.

A task set: T distinct tasks, each with n per-transition embeddings E(c) (uniform within a task,
tasks uniform). ℓ is the logistic loss ℓ(v) = log(1 + Σ exp(−v_i)).
- L_sup: the multinomial logistic loss of g = W E(c), minimised over W (convex; L-BFGS from
  W = 0 in float64).
- L_sup^μ: the same loss at W = the task means μ_i — computed by the registered `infonce`
  objective with every transition as a query and the task means as keys (τ = 1).
- L_un: E ℓ({E(c)·(E(c⁺) − E(c⁻_j))}_j), c, c⁺ from the same task, one c⁻ from each other task,
  computed exactly by enumerating every (c, c⁺, negatives) combination.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import components.objectives.infonce  # noqa: F401  (registers infonce)
from components.objectives.embeddings import TaskEmbeddings
from registry import get

values = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)


@st.composite
def task_sets(draw):
    """[T, n, Z] float64 embeddings: T ∈ 2..4 tasks, n ∈ 1..3 transitions, Z ∈ 1..3."""
    t, n, z = draw(st.integers(2, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    scale = draw(st.sampled_from([0.1, 1.0, 3.0]))
    return draw(arrays(np.float64, (t, n, z), elements=values)) * scale


def logistic(v: np.ndarray) -> float:
    return float(np.logaddexp.reduce(np.concatenate([[0.0], -v])))


def mean_classifier_loss(e: np.ndarray) -> float:
    """L_sup^μ through the registered objective (the code recipes train with)."""
    q = torch.tensor(e)
    keys = q.mean(1, keepdim=True).expand_as(q).contiguous()  # [T, n, Z]: key[j, b] = μ_j
    emb = TaskEmbeddings(q, q.mean(1), torch.arange(len(q)), keys, q.mean(1))
    return get("objective", "infonce")(temperature=1.0)(emb)["loss_contrastive"].item()


def mean_classifier_loss_direct(e: np.ndarray) -> float:
    mu = e.mean(1)
    t = len(e)
    terms = [
        logistic(np.array([(mu[i] - mu[j]) @ c for j in range(t) if j != i]))
        for i in range(t)
        for c in e[i]
    ]
    return float(np.mean(terms))


def supervised_loss_minimised(e: np.ndarray) -> float:
    """inf_W of the multinomial logistic loss of W E(c) (convex in W), by L-BFGS from 0."""
    x = torch.tensor(e.reshape(-1, e.shape[2]))
    labels = torch.arange(len(e)).repeat_interleave(e.shape[1])
    w = torch.zeros(len(e), e.shape[2], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS(
        [w],
        max_iter=1_000,
        tolerance_grad=1e-12,
        tolerance_change=1e-15,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w.T, labels)
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return torch.nn.functional.cross_entropy(x @ w.T, labels).item()


def unsupervised_loss_enumerated(e: np.ndarray) -> float:
    t = len(e)
    terms = []
    for i in range(t):
        others = [j for j in range(t) if j != i]
        for c, c_pos in itertools.product(e[i], e[i]):
            for negatives in itertools.product(*(e[j] for j in others)):
                terms.append(logistic(np.array([c @ (c_pos - c_neg) for c_neg in negatives])))
    return float(np.mean(terms))


@given(e=task_sets())
def test_registered_mean_classifier_loss_matches_the_definition(e):
    assert np.isclose(
        mean_classifier_loss(e), mean_classifier_loss_direct(e), rtol=1e-10, atol=1e-12
    )


@given(e=task_sets())
def test_supervised_le_mean_classifier_le_unsupervised(e):
    l_sup, l_mu, l_un = (
        supervised_loss_minimised(e),
        mean_classifier_loss(e),
        unsupervised_loss_enumerated(e),
    )
    # L-BFGS stops near, not at, the infimum: allow its tolerance (1e-7 relative) on the left.
    assert l_sup <= l_mu + 1e-7 * max(1.0, l_mu)
    # Jensen's inequality is exact: float64 rounding only.
    assert l_mu <= l_un + 1e-10 * max(1.0, l_un)


def test_the_inequalities_can_be_strict():
    e = np.array(
        [[[1.0, 0.0], [0.5, 0.2]], [[0.0, 1.0], [-0.3, 0.8]], [[-1.0, -1.0], [-0.2, -0.9]]]
    )
    l_sup, l_mu, l_un = (
        supervised_loss_minimised(e),
        mean_classifier_loss(e),
        unsupervised_loss_enumerated(e),
    )
    assert l_sup < l_mu - 1e-3 and l_mu < l_un - 1e-3


def test_repeated_task_labels():
    """With a task repeated in the meta-batch, the mean classifier has two equal rows, so its
    loss is at least log 2 for every context of that task however good E is, while L_sup stays
    at that floor too; the chain still holds, but L_sup^μ no longer measures how well E
    separates tasks. This is why matrix_moco masks repeated tasks (test_objectives)."""
    a = np.array([[2.0, 0.0], [2.2, 0.1]])
    e = np.stack([a, a, np.array([[-2.0, 0.0], [-2.1, 0.2]])])  # tasks 0 and 1 are the same task
    l_mu, l_un = mean_classifier_loss_direct(e), unsupervised_loss_enumerated(e)
    assert l_mu <= l_un + 1e-12
    distinct = mean_classifier_loss_direct(e[1:])  # the same embeddings without the repeat
    assert distinct < 0.01 and l_mu > np.log(2) * 2 / 3 - 1e-9
