"""MBML's triplet loss on known inputs."""

from __future__ import annotations

import torch

from components.objectives.triplet import Triplet, triplet_loss


def test_known_values():
    anchor = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    positive = torch.tensor([[1.0, 0.0], [3.0, 0.0]])  # squared distances 1, 9
    negative = torch.tensor([[0.0, 2.0], [0.0, 1.0]])  # squared distances 4, 1
    # row 0: max(0, 1 - 4 + 1) = 0; row 1: max(0, 9 - 1 + 1) = 9
    assert float(triplet_loss(anchor, positive, negative, margin=1.0)) == 4.5
    assert float(triplet_loss(anchor, positive, negative, margin=0.0)) == 4.0


def test_satisfied_triplets_give_nothing_and_violations_push_the_right_way():
    anchor = torch.zeros(1, 2, requires_grad=True)
    positive, negative = torch.tensor([[2.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    loss = Triplet(margin=0.5)(anchor, positive, negative)["loss_triplet"]
    loss.backward()
    # descending the loss moves the anchor toward the positive and away from the negative
    step = -anchor.grad[0]
    assert float(step @ positive[0]) > 0 and float(step @ negative[0]) < 0
    far = Triplet(margin=0.5)(torch.tensor([[2.0, 0.1]]), positive, negative)["loss_triplet"]
    assert float(far) == 0.0
