"""The contract of a part that declares a seed-batched form: stacked, it must compute each
seed's rows as that seed's own member; one that mixes the seeds' rows is named."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from components.contracts import ContractError, check
from components.first_edition.batch_gate import BatchGate


class WholeBatchGate(nn.Module):
    """Weights normalised over every row of the first dimension: fine for one seed's tasks,
    wrong across seeds (one seed's weights depend on another's rows)."""

    seed_batching = True

    def __init__(self, *, latent_dim: int):
        super().__init__()
        self.score = nn.Linear(latent_dim, 1)

    def forward(self, per_transition: torch.Tensor) -> torch.Tensor:
        logits = self.score(per_transition).squeeze(-1)  # [T, B]
        flat = torch.softmax(logits.reshape(-1), 0).reshape(logits.shape)
        return flat * logits.numel()


class Undeclared(WholeBatchGate):
    seed_batching = False


def test_a_part_that_mixes_the_seeds_rows_breaks_its_contract():
    with pytest.raises(ContractError, match=r"seed 0's weights differ from its single member's"):
        check(WholeBatchGate, "attention", name="whole_batch_gate")


def test_the_same_part_without_the_declaration_is_not_held_to_it():
    check(Undeclared, "attention", name="undeclared")


def test_the_shipped_gate_keeps_its_promise():
    check(BatchGate, "attention")
