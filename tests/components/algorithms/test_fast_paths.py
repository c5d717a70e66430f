"""The optional fast paths compute the plain path's numbers: bf16 autocast within bf16's
precision, `torch.compile` within float rounding (both on a fixed batch and seed)."""

from __future__ import annotations

import shutil

import pytest
import torch

from components.rl.networks import MLP
from registry import RecipeError
from tests.conftest import run_row


def first_step_losses(tiny_data, tmp_path, name, *bindings):
    _, trainer = run_row(
        "focalpp.gin",
        "sparse_point_robot",
        tiny_data,
        tmp_path / name,
        bindings=bindings,
        train=False,
    )
    with trainer.autocast():
        metrics = trainer.train_step()
    return {k: float(v) for k, v in metrics.items() if k.startswith("loss_")}


def test_bf16_autocast_gives_the_fp32_losses_within_bf16_precision(tiny_data, tmp_path):
    plain = first_step_losses(tiny_data, tmp_path, "fp32")
    fast = first_step_losses(tiny_data, tmp_path, "bf16", "loop.precision = 'bf16'")
    assert fast.keys() == plain.keys()
    for name, value in plain.items():
        # bf16 keeps 8 bits of mantissa: a few parts in a thousand per op, ~2% after a step
        assert fast[name] == pytest.approx(value, rel=5e-2, abs=1e-3), name
    assert fast != plain  # autocast did run in bf16


def test_unknown_precision_is_refused(tiny_data, tmp_path):
    with pytest.raises(RecipeError, match=r"loop.precision = 'fp8'.*bf16"):
        first_step_losses(tiny_data, tmp_path, "fp8", "loop.precision = 'fp8'")


@pytest.mark.skipif(
    not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")),
    reason="torch.compile's CPU back end needs a C++ compiler",
)
def test_compiled_network_matches_the_plain_one():
    """What `loop.compile` does to each network: same outputs and gradients."""
    torch.manual_seed(0)
    plain = MLP(in_features=7, out_features=3, hidden=(16, 16))
    compiled = MLP(in_features=7, out_features=3, hidden=(16, 16))
    compiled.load_state_dict(plain.state_dict())
    compiled.compile()
    x = torch.randn(5, 9, 7)
    out_plain, out_compiled = plain(x), compiled(x)
    torch.testing.assert_close(out_compiled, out_plain, rtol=1e-5, atol=1e-6)
    out_plain.square().sum().backward()
    out_compiled.square().sum().backward()
    for a, b in zip(plain.parameters(), compiled.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6)
    assert list(compiled.state_dict()) == list(plain.state_dict())  # checkpoints unchanged
