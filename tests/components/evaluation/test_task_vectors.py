"""Task-vector diagnostics on synthetic task vectors whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from components.evaluation.task_vectors import (
    decoding_error,
    identification_accuracy,
    nearest_task_error,
    variance_ratio,
)


def encoded(y: np.ndarray, draws: int, noise: float, seed: int = 0) -> np.ndarray:
    """z [draws, T, 5]: a fixed linear map of the task parameters y [T, 1], plus noise."""
    rng = np.random.default_rng(seed)
    w = np.array([[0.3, -1.2, 0.7, 0.05, 2.0]])
    return (y @ w)[None] + rng.normal(scale=noise, size=(draws, len(y), 5))


def flat(z, y):
    return z.reshape(-1, z.shape[-1]), np.broadcast_to(y, (z.shape[0], *y.shape)).reshape(-1, 1)


ANGLES = np.linspace(0.0, 180.0, 100)[:, None]  # degrees, 1.8° apart
TRAIN, TEST = ANGLES[::5].repeat(1, 0), ANGLES[2::5]  # test goals lie between training goals


def test_a_linear_encoding_decodes_to_near_zero_error_and_a_shuffled_one_does_not():
    z_train, z_test = encoded(TRAIN, 8, 1e-3), encoded(TEST, 8, 1e-3, seed=1)
    exact = decoding_error(*flat(z_train, TRAIN), *flat(z_test, TEST))
    assert exact < 0.05  # degrees
    shuffled = z_train[:, np.random.default_rng(2).permutation(len(TRAIN))]
    blind = decoding_error(*flat(shuffled, TRAIN), *flat(z_test, TEST))
    assert blind > 20.0  # a uniform guess over 0-180° errs by 45° on average


def test_a_nonlinear_but_separable_encoding_is_identified_but_not_linearly_decoded():
    """Tasks at angles encoded by a fast-turning code: every task has its own z (identified),
    but no linear read-out recovers the angle — the failure this diagnostic exists for."""
    code = lambda y: np.concatenate([np.sin(y / 3.0), np.cos(y / 3.0)], -1)  # noqa: E731
    rng = np.random.default_rng(0)
    z_train = code(TRAIN)[None] + rng.normal(scale=1e-3, size=(8, len(TRAIN), 2))
    z_test = code(TEST)[None] + rng.normal(scale=1e-3, size=(8, len(TEST), 2))
    assert identification_accuracy(z_test) == 1.0
    assert decoding_error(*flat(z_train, TRAIN), *flat(z_test, TEST)) > 20.0


def test_identification_and_nearest_task_error():
    z = encoded(TEST, 8, 1e-3)
    assert identification_accuracy(z) == 1.0
    same = np.zeros((8, len(TEST), 5)) + np.random.default_rng(0).normal(size=(8, 1, 5))
    assert identification_accuracy(same) <= 1.0 / len(TEST) + 1e-9  # all tied: task 0 always
    centres = encoded(TRAIN, 1, 0.0)[0]
    # test goals lie 3.6° from the nearest training goals on either side
    assert nearest_task_error(*flat(z, TEST), centres, TRAIN) == pytest.approx(3.636, abs=0.01)
    with pytest.raises(ValueError, match="2 draws"):
        identification_accuracy(z[:1])


def test_variance_ratio_is_scale_free_and_known():
    z = np.array([[[0.0], [10.0]], [[2.0], [12.0]]])  # 2 draws, 2 tasks, 1 dim
    spread = variance_ratio(z)
    assert spread.within == 1.0 and spread.between == 25.0 and spread.ratio == 0.04
    scaled = variance_ratio(7.0 * z + 3.0)
    assert scaled.within == pytest.approx(49.0) and scaled.ratio == pytest.approx(0.04)
    fixed = variance_ratio(np.zeros((2, 3, 4)))  # z = 0 for every task: no ratio to give
    assert (fixed.within, fixed.between, fixed.ratio) == (0.0, 0.0, None)


@pytest.mark.parametrize("parameters", [1, 3])
def test_decoding_error_is_scikit_learns_scaled_ridge(parameters):
    """The closed form is StandardScaler + Ridge, a constant dimension of z included."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(parameters)
    z_train, z_test = rng.normal(size=(60, 6)) * 3.0 + 1.0, rng.normal(size=(25, 6))
    z_train[:, 2] = z_test[:, 2] = 0.7  # a dimension the encoder never moves
    w = rng.normal(size=(6, parameters))
    y_train = z_train @ w + rng.normal(scale=0.3, size=(60, parameters))
    y_test = z_test @ w
    for alpha in (1e-3, 10.0):
        model = make_pipeline(StandardScaler(), Ridge(alpha=alpha)).fit(z_train, y_train)
        expected = np.abs(model.predict(z_test).reshape(y_test.shape) - y_test).mean()
        assert decoding_error(z_train, y_train, z_test, y_test, alpha=alpha) == pytest.approx(
            expected, rel=1e-9
        )
