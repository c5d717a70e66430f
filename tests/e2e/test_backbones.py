"""Every context method of the FOCAL trainer runs on the IQL backbone by one line
(`focal.agent = @iql`), at the tiny scale; a run killed on it resumes exactly; the critics'
LayerNorm option, on either backbone, is in effect and needs no parameter of its own."""

from __future__ import annotations

import json

import pytest
import torch

from components.outputs.checkpoint import load_checkpoint
from components.reports.paper import ROWS
from components.rl.batched_mlp import BatchedMLP
from components.rl.networks import MLP
from tests.conftest import cli, run_row
from tests.tools.test_resume import ONE_THREAD, STEPS, final, flags, start_run, wait_for_step

IQL = ("focal.agent = @iql",)
PLUGIN = ("components.rl.iql",)
SUCCESSORS = ("corro", "csro", "unicorn", "unicorn_sup")
REFERENCES = ("reference_no_context", "reference_oracle")
METHODS = [*ROWS, *SUCCESSORS, *REFERENCES]


@pytest.mark.parametrize("method", METHODS)
def test_every_context_method_runs_on_iql(method, tiny_data, tmp_path):
    metrics, algorithm = run_row(
        f"{method}.gin", "sparse_point_robot", tiny_data, tmp_path / "run", bindings=IQL,
        plugins=PLUGIN,
    )  # fmt: skip
    assert type(algorithm.agent).__name__ == "IQL"
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    train = [r for r in map(json.loads, lines) if r["kind"] == "train"]
    assert {"loss_v", "loss_q", "loss_policy"} <= set(train[-1])  # IQL's three losses
    assert metrics["headline"].startswith("test ")


@pytest.mark.parametrize("agent", ["brac", "iql"])
def test_the_critics_layer_norm_is_a_binding_with_no_parameters(agent, tiny_data, tmp_path):
    def built(name, *extra):
        _, algorithm = run_row(
            "focal.gin", "sparse_point_robot", tiny_data, tmp_path / name, train=False,
            bindings=(f"focal.agent = @{agent}", *extra), plugins=PLUGIN,
        )  # fmt: skip
        return algorithm.agent

    plain, normed = built("plain"), built("normed", f"{agent}.layer_norm = True")
    shapes = lambda a: {k: v.shape for k, v in a.state_dict().items()}  # noqa: E731
    assert shapes(plain) == shapes(normed)  # a checkpoint's layout is the same either way
    assert any(isinstance(m, torch.nn.LayerNorm) for m in normed.v.modules())
    assert normed.q.layer_norm and not plain.q.layer_norm


def test_a_layer_normed_critic_ignores_the_scale_of_its_first_layer():
    """LayerNorm removes a hidden layer's scale: multiplying the first layer's weights and bias
    by 7 leaves Q unchanged with it, and changes Q without it (the check can fail)."""
    torch.manual_seed(0)
    x = torch.randn(2, 16, 5)
    for net in (
        BatchedMLP(n_models=2, in_features=5, out_features=1, hidden=(8, 8), layer_norm=True),
        MLP(in_features=5, out_features=1, hidden=(8, 8), layer_norm=True),
    ):
        plain = BatchedMLP(n_models=2, in_features=5, out_features=1, hidden=(8, 8))
        plain.load_state_dict(net.state_dict()) if isinstance(net, BatchedMLP) else None
        before = net(x).detach()
        scaled = [plain] if isinstance(net, BatchedMLP) else []
        plain_before = plain(x).detach()
        with torch.no_grad():
            for p in list(net.parameters())[:2]:
                p.mul_(7.0)
            for module in scaled:
                for p in list(module.parameters())[:2]:
                    p.mul_(7.0)
        torch.testing.assert_close(net(x), before, rtol=1e-4, atol=1e-5)
        if scaled:
            assert not torch.allclose(plain(x), plain_before, rtol=1e-3)


def test_iql_killed_then_resumed_ends_as_never_stopped(tiny_data, tmp_path):
    """FOCAL++ on IQL, SIGKILLed past a checkpoint and resumed: the same log and meta-test as
    the run never stopped (tests/tools/test_resume.py does the same on BRAC)."""
    args = [arg.replace("focalpp.gin", "focalpp_iql.gin") for arg in flags(tiny_data)]
    r = cli("run", *args, "--out", str(tmp_path / "whole"), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    killed = tmp_path / "killed"
    proc = start_run([*args, "--out", str(killed)])
    wait_for_step(killed, 65, proc)
    proc.kill()
    proc.wait()
    assert 50 <= load_checkpoint(killed)["step"] < STEPS
    r = cli("run", "--resume", str(killed), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert final(killed) == final(tmp_path / "whole")


@pytest.mark.parametrize(
    ("method", "why"),
    [
        ("batch_pearl", "Batch PEARL is SAC with no behaviour regularisation"),
        ("contextual_bcq", "Contextual BCQ is FOCAL's encoder trained through BCQ's critic"),
        ("mbml", "its teachers and student are BCQ by construction"),
    ],
)
def test_a_method_that_is_its_learner_refuses_iql_saying_why(method, why):
    """The three baselines whose learner is the method have no IQL form: `focal.agent = @iql`
    is refused when composed, with the recipe's reason and the flag that asked for it."""
    from registry import RecipeError, compose

    with pytest.raises(RecipeError, match=rf"{method}.gin fixes `focal.agent`.*{why}.*--gin_param"):
        compose(f"{method}.gin", env="sparse_point_robot", scale="tiny", bindings=IQL)
    compose(f"{method}.gin", env="sparse_point_robot", scale="tiny")  # as written: composes
