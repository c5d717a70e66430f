"""An algorithm of one's own: context-conditioned behaviour cloning (docs/EXTENDING.md, §5).

A context encoder reads a task's context; a policy maps (s, z) to an action and learns to
imitate the dataset's actions; the cloning loss trains the encoder too (z is not detached), so
z learns what tells the tasks' behaviour apart. What it writes: its networks, one step, and
what a checkpoint holds. What the framework does for it: the loop (steps, learning-rate decay,
meta-tests, metrics, checkpoints, exact resume, precision, compile), the context and RL
batches, the meta-test and the summary. It trains one seed per process (no `seed_batching`):
`--seeds` is refused, naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from components.algorithms.context_learner import ContextLearner
from components.algorithms.loop import TrainingLoop
from components.algorithms.sizes import Sizes
from components.contracts import check_parts
from components.data.tasks import TaskData
from components.encoders.context import ContextEncoder
from registry import register
from registry.constraints import PositiveFloat, PositiveInt
from registry.validation import check_arguments


class Policy(nn.Module):
    """a = tanh(MLP([s, z])): deterministic, within the action bounds of every family."""

    def __init__(self, obs_dim: int, act_dim: int, latent_dim: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim + latent_dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, act_dim),
            nn.Tanh(),
        )

    def forward(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, z], -1))

    def act(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """What the meta-test calls (ContextLearner.act): obs [N, F], z [N, Z] -> [N, A]."""
        with torch.no_grad():
            return self(obs, z)


@register("algorithm", "context_bc")
class ContextBC(ContextLearner):
    """Behaviour cloning conditioned on a task vector inferred from the context.

    Args:
        data, loop: handed by the experiment (`task_data.*`, `loop.*`).
        sizes: Z and what one step draws (`sizes.*`).
        encoder: context encoder class (gin: `@context_encoder`).
        lr: Adam learning rate of the encoder and the policy.
        hidden: the policy's width.
    """

    def __init__(
        self,
        *,
        data: TaskData,
        loop: TrainingLoop,
        sizes: Callable[..., Sizes] = Sizes,
        encoder: Callable[..., nn.Module] = ContextEncoder,
        lr: PositiveFloat = 1e-3,
        hidden: PositiveInt = 64,
    ):
        check_arguments("context_bc", ContextBC.__init__, locals())  # each value's constraint
        super().__init__(data, loop, sizes(), context_next_obs=True)
        z = self.sizes.latent_dim
        # the encoder against its kind's contract, then on a real context of this dataset
        check_parts((encoder, "context_encoder", {"sizes": self.layout.sizes, "latent_dim": z}))
        torch.manual_seed(self.run_context.seed)
        self.encoder = encoder(sizes=self.layout.sizes, latent_dim=z).to(self.device)
        self.check_encoder(self.encoder, encoder)
        dims = (self.family.obs_dim, self.family.act_dim, z, hidden)
        self.agent = Policy(*dims).to(self.device)
        params = [*self.encoder.parameters(), *self.agent.parameters()]
        self.opt = torch.optim.Adam(params, lr=lr)

    def train_step(self) -> dict[str, torch.Tensor]:
        tasks = self.sample_tasks(self.sizes.meta_batch, replace=True)  # [T]
        z = self.encoder(self.layout.tensor(self.sample_context(tasks))).mean  # [T, Z]
        batch = self.sample_rl(tasks)  # [T, B, ·]
        z = z[:, None, :].expand(-1, batch.obs.shape[1], -1)  # [T, B, Z]
        loss = (self.agent(batch.obs, z) - batch.action).pow(2).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return {"loss_bc": loss.detach()}

    # --- what the loop sets, watches, saves and restores -----------------------------------
    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.opt]

    def parts(self) -> dict[str, nn.Module]:
        return {"encoder": self.encoder, "policy": self.agent}

    def parts_state(self) -> dict[str, Any]:
        return {
            "encoder": self.encoder.state_dict(),
            "agent": self.agent.state_dict(),
            "optimizers": {"bc": self.opt.state_dict()},
        }

    def load_weights(self, state: dict[str, Any]) -> None:
        self.step = state["step"]
        self.encoder.load_state_dict(state["encoder"])
        self.agent.load_state_dict(state["agent"])

    def load_parts_state(self, state: dict[str, Any]) -> None:
        self.load_weights(state)
        self.opt.load_state_dict(state["optimizers"]["bc"])
