"""docs/EXTENDING.md's example algorithm (examples/extending/context_bc.py): written as the page
shows, with nothing but its networks, its step and its checkpoint, it trains under a decaying
learning rate, resumes exactly after a SIGKILL, is refused by name for `--seeds`, and a learner
that skips a check the framework relies on is refused before training, naming the call."""

from __future__ import annotations

import json

from components.outputs.checkpoint import load_checkpoint
from tests.conftest import ROOT, cli
from tests.tools.test_resume import ONE_THREAD, final, start_run, wait_for_step

EXAMPLE = ROOT / "examples" / "extending"
STEPS = 60


def flags(data_root, *extra: str, recipe=EXAMPLE / "context_bc.gin") -> list[str]:
    bindings = (
        f"task_data.root = '{data_root}'",
        f"loop.steps = {STEPS}",
        "loop.eval_every = 20",
        "loop.log_every = 5",
        "loop.checkpoint_every = 10",
        "loop.lr_decay = 'cosine'",
        "loop.lr_floor = 0.1",
    )
    return [
        "--recipe",
        str(recipe),
        "--plugin",
        str(EXAMPLE / "context_bc.py"),
        "--scale",
        "tiny",
        *(arg for b in bindings for arg in ("--gin_param", b)),
        *extra,
    ]


def test_the_example_algorithm_decays_its_learning_rate_and_resumes_exactly(tiny_data, tmp_path):
    whole = tmp_path / "whole"
    r = cli("run", *flags(tiny_data), "--out", str(whole), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    checkpoint = load_checkpoint(whole)
    (group,) = checkpoint["optimizers"]["bc"]["param_groups"]
    # the loop recorded the base rate and decayed it: cosine to 0.1 of 1e-3 over the run
    assert group["base_lr"] == 1e-3 and abs(group["lr"] - 1e-4) < 1e-6
    losses = [json.loads(x) for x in (whole / "metrics.jsonl").read_text().splitlines()]
    assert sum("loss_bc" in r for r in losses) == STEPS // 5

    killed = tmp_path / "killed"
    proc = start_run([*flags(tiny_data), "--out", str(killed)])
    wait_for_step(killed, 35, proc)
    proc.kill()
    proc.wait()
    r = cli("run", "--resume", str(killed), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert final(killed) == final(whole)


def test_the_example_algorithm_is_refused_several_seeds_by_name(tiny_data, tmp_path):
    out = str(tmp_path / "run-s{seed}")
    r = cli("run", *flags(tiny_data, "--seeds", "0,1"), "--out", out, env=ONE_THREAD)
    assert r.returncode == 2
    assert "ContextBC cannot train several seeds in one process (--seeds)" in r.stderr
    assert not list(tmp_path.iterdir())


SKIPPING = """
import torch
from context_bc import ContextBC, Policy
from components.algorithms.context_learner import ContextLearner
from components.algorithms.sizes import Sizes
from components.encoders.context import ContextEncoder
from registry import register


@register("algorithm", "bc_without_contract")
class WithoutContract(ContextBC):
    def __init__(self, *, data, loop, sizes=Sizes, encoder=ContextEncoder, lr=1e-3, hidden=64):
        ContextLearner.__init__(self, data, loop, sizes(), context_next_obs=True)
        z = self.sizes.latent_dim
        self.encoder = encoder(sizes=self.layout.sizes, latent_dim=z)
        self.check_encoder(self.encoder, encoder)
        self.agent = Policy(self.family.obs_dim, self.family.act_dim, z, hidden)
        self.opt = torch.optim.Adam(self.encoder.parameters(), lr=lr)


@register("algorithm", "bc_without_real_context")
class WithoutRealContext(ContextBC):
    def check_encoder(self, encoder, factory):
        pass
"""


def test_a_learner_that_skips_a_check_is_refused_naming_the_call(tiny_data, tmp_path):
    plugin = tmp_path / "skipping.py"
    plugin.write_text(SKIPPING)
    expected = {
        "bc_without_contract": "WithoutContract built its encoder (@context_encoder, kind "
        "'context_encoder') without checking its contract: call check_parts((factory, "
        "'context_encoder', sizes))",
        "bc_without_real_context": "WithoutRealContext built its encoder without reading a real "
        "context through it: call self.check_encoder(encoder, factory)",
    }
    for name, message in expected.items():
        out, recipe = tmp_path / name, tmp_path / f"{name}.gin"
        example = (EXAMPLE / "context_bc.gin").read_text()
        recipe.write_text(example.replace("context_bc", name))
        extra = ("--plugin", str(plugin))
        args = (*flags(tiny_data, *extra, recipe=recipe), "--out", str(out))
        # skipping check_parts needs a process of its own: contracts checked stay checked in it
        r = cli("run", *args, env=ONE_THREAD, process=name == "bc_without_contract")
        assert r.returncode == 2, r.stdout + r.stderr
        assert message in r.stderr
        assert not (out / "checkpoint.pt").exists()
