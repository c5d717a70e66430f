from __future__ import annotations

import numpy as np
import pytest
import torch

from components.envs import sparsify


@pytest.mark.parametrize(
    ("reward", "goal_radius", "expected"),
    [
        (-0.1, -0.2, 0.5),  # inside the goal circle: (−0.1 + 0.2)/0.2
        (0.0, -0.2, 1.0),  # at the goal
        (-0.2, -0.2, 0.0),  # on the boundary: r > g is false
        (-0.5, -0.2, 0.0),  # outside
        (9.0, 6.0, 0.5),  # positive radius (Cheetah-Fwd-Back): (9 − 6)/6
        (6.0, 6.0, 0.0),
        (3.0, 6.0, 0.0),
        (4.5, 3.0, 0.5),  # Ant-Fwd-Back radius 3
    ],
)
def test_known_values(reward, goal_radius, expected):
    assert sparsify(reward, goal_radius) == pytest.approx(expected, abs=1e-15)


def test_batched_numpy_and_torch_agree():
    r = np.array([-1.0, -0.3, -0.15, -0.05, 0.0])
    expected = np.array([0.0, 0.0, 0.25, 0.75, 1.0])
    np.testing.assert_allclose(sparsify(r, -0.2), expected, atol=1e-15)
    t = sparsify(torch.tensor(r), -0.2)
    assert isinstance(t, torch.Tensor)
    np.testing.assert_allclose(t.numpy(), expected, atol=1e-15)
    assert not np.signbit(sparsify(r, -0.2)).any()  # zeros are +0.0


def test_none_is_dense_and_zero_is_an_error():
    assert sparsify(-3.0, None) == -3.0
    with pytest.raises(ValueError, match="goal_radius must be non-zero"):
        sparsify(-3.0, 0.0)
