"""Each BCQ loss reaches the parameters it trains and no others."""

from __future__ import annotations

import torch

from tests.components.rl.test_bcq import agent
from tests.components.rl.test_brac import Z, batch

PARTS = ("vae_encoder", "vae_decoder", "actor", "q", "actor_target", "q_target")


def reached(bcq, loss: torch.Tensor, z: torch.Tensor) -> set[str]:
    bcq.zero_grad(set_to_none=True)
    z.grad = None
    loss.backward()
    names = {n for n in PARTS for p in getattr(bcq, n).parameters() if p.grad is not None}
    return names | ({"z"} if z.grad is not None else set())


def inputs():
    b = batch()
    z = torch.randn(b.obs.shape[0], Z).requires_grad_()
    zb = z[:, None, :].expand(-1, b.obs.shape[1], -1)
    x_q = torch.cat([b.obs, zb], -1)
    return b, z, x_q, x_q.detach(), torch.cat([b.next_obs, zb], -1).detach()


def test_vae_loss_trains_the_vae_only():
    bcq = agent()
    b, z, _, x, _ = inputs()
    assert reached(bcq, bcq.vae_loss(x, b.action)["loss_vae"], z) == {"vae_encoder", "vae_decoder"}


def test_q_loss_trains_the_critics_and_the_task_vector_only():
    bcq = agent()
    b, z, x_q, _, x_next = inputs()
    assert reached(bcq, bcq.q_loss(x_q, b, x_next)["loss_q"], z) == {"q", "z"}


def test_actor_loss_trains_the_actor_only():
    bcq = agent()
    _, z, _, x, _ = inputs()
    assert reached(bcq, bcq.actor_loss(x)["loss_actor"], z) == {"actor"}


def test_each_optimiser_takes_its_own_learning_rate():
    bcq = agent(lr=1e-3, actor_lr=5e-4)
    rates = {name: opt.param_groups[0]["lr"] for name, opt in bcq.optimizers().items()}
    assert rates == {"vae": 1e-3, "actor": 5e-4, "q": 1e-3}
