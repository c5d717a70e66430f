"""What every test-context protocol reads, and the three things they all do: play an episode of
every test row at once, infer z from a context, and draw a fixed-size context from what was
collected.

Rows are those of the meta-test (components/evaluation/meta_test.py): for K seeds trained
together, K blocks of N rows (each test task `runs` times), seed-major, so one call of the
seed-batched encoder or policy serves every seed. Every random draw of seed k (uniform actions,
prior z, donors, context draws) comes from seed k's own generator, so a seed's cells are the
same whether it was scored alone or beside others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from torch import nn

from components.data.context import ContextLayout
from components.data.sampler import TensorSampler
from components.data.store import QualityData
from components.envs.family import EnvFamily
from components.evaluation.episodes import Returns, checked_actions, rollout

# z for every row, fixed for the episode, or chosen before each step t, given a function that
# returns the episode's transitions so far ([R, t, F]; stacked only when asked for)
TaskVectors = torch.Tensor | Callable[[int, Callable[[], torch.Tensor]], torch.Tensor]


class NotApplicable(Exception):
    """A protocol that cannot score this run (e.g. no behaviour policy kept to collect with);
    the message says why, and the meta-test records it in the protocol's cell."""


@dataclass(frozen=True)
class Episode:
    """One episode of every row: its returns, and its transitions as context rows
    (`context` [R, H, F], the reward the context sees) with `alive` [R, H] marking real ones."""

    returns: Returns
    context: torch.Tensor
    alive: torch.Tensor

    @property
    def score(self) -> np.ndarray:
        """Per row, the return the agent is scored by (sparse on sparse families) [R]."""
        r = self.returns
        return r.sparse if r.sparse is not None else r.dense


@dataclass
class Scene:
    """One meta-test's rows and networks, as a protocol sees them.

    Args:
        family, env: the test tasks' family and one batched environment over every row.
        layout: how a transition becomes a context row.
        encoder, act: the (seed-batched) context encoder and `act(obs, z)`, deterministic.
        device: where the networks live.
        seeds: the K seeds, in block order.
        test_tasks: the test tasks (dataset indices).
        positions: the test task (a position in `test_tasks`) of each row of one block [N].
        context_transitions: the offline protocol's context size (C); an online protocol
            collects C // horizon episodes unless its `episodes` binding says otherwise.
        data: the test tasks' offline data; for a protocol that reads none, a stand-in that
            raises on any use (sealed.py), or None where the meta-test has none.
        dataset: the run's dataset (its kept behaviour policies), where known.
        train: the training tasks' data, where known.
    """

    family: EnvFamily
    env: Any
    layout: ContextLayout
    encoder: nn.Module
    act: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    device: torch.device
    seeds: Sequence[int]
    test_tasks: Sequence[int]
    positions: torch.Tensor
    context_transitions: int
    data: QualityData | Any = None
    dataset: Any = None
    train: TensorSampler | None = None

    @property
    def block(self) -> int:
        """Rows per seed (N)."""
        return len(self.positions)

    @property
    def tasks(self) -> list[int]:
        """The dataset task of each row of one block [N]."""
        return [self.test_tasks[i] for i in self.positions.tolist()]

    @property
    def rows(self) -> int:
        """All rows (K·N)."""
        return len(self.seeds) * self.block

    @property
    def episodes(self) -> int:
        """Episodes an online protocol collects unless bound otherwise: as many as the offline
        context holds (C // horizon, at least one)."""
        return max(1, self.context_transitions // self.family.horizon)

    def collection_episodes(self, asked: int | None) -> int:
        """The episodes a protocol collects before the scored one: `asked` (its `episodes`
        binding), else `episodes`."""
        return self.episodes if asked is None else asked

    def generator(self, k: int, salt: int) -> torch.Generator:
        """Seed k's own generator for one purpose (`salt`), the same alone or beside others."""
        state = np.random.SeedSequence([self.seeds[k], salt]).generate_state(1)[0]
        return torch.Generator().manual_seed(int(state))

    def reset_seeds(self, episode: int | None) -> list[int]:
        """Row i of seed s resets with s + i in the scored episode (`episode` None), as the
        offline protocol's; with s + i + (e + 1)·N in collection episode e, so that no two
        episodes of a row start alike."""
        shift = 0 if episode is None else (episode + 1) * self.block
        return [s + i + shift for s in self.seeds for i in range(self.block)]

    @torch.no_grad()
    def infer(self, context: torch.Tensor) -> torch.Tensor:
        """z [R, Z] from contexts [R, C, F] (the encoder's task vector)."""
        return self.encoder(context).mean

    @property
    def latent_dim(self) -> int:
        if not hasattr(self, "_latent_dim"):
            probe = torch.zeros(len(self.seeds), 1, sum(self.layout.sizes), device=self.device)
            self._latent_dim = int(self.infer(probe).shape[-1])
        return self._latent_dim

    def zeros(self) -> torch.Tensor:
        """z = 0 for every row: what an agent holds before it has seen anything."""
        return torch.zeros(self.rows, self.latent_dim, device=self.device)

    def per_seed(self, draw: Callable[[torch.Generator], torch.Tensor], salt: int) -> torch.Tensor:
        """`draw(generator)` -> [N, ...] for each seed's block, concatenated [R, ...]."""
        blocks = [draw(self.generator(k, salt)) for k in range(len(self.seeds))]
        return torch.cat(blocks).to(self.device)

    def uniform_actions(self, salt: int) -> Callable[[int], torch.Tensor]:
        """Uniform actions over the action box [R, A] per call (±`family.action_bound`), each
        seed's from its own generator."""
        generators = [self.generator(k, salt) for k in range(len(self.seeds))]
        act_dim, bound = self.layout.act_dim, float(self.family.action_bound)

        def draw(_: int) -> torch.Tensor:
            blocks = [torch.rand(self.block, act_dim, generator=g) for g in generators]
            return ((torch.cat(blocks) * 2 - 1) * bound).to(self.device)

        return draw

    def play(
        self,
        z: TaskVectors,
        *,
        episode: int | None = None,
        random_steps: int = 0,
        uniform: Callable[[int], torch.Tensor] | None = None,
        actor: Callable[[torch.Tensor], torch.Tensor] | None = None,
        record: bool = True,
    ) -> Episode:
        """One episode of every row with the deterministic policy under `z` (or `actor(obs)`'s
        actions, another policy's); its first `random_steps` steps take `uniform(t)`'s actions
        instead. `episode`: the collection episode's index (its reset seeds), None for the
        scored episode. `record`: keep the transitions (`Episode.context`; else empty)."""
        rows: list[torch.Tensor] = []
        alive: list[np.ndarray] = []
        now: dict[str, torch.Tensor] = {}

        def policy(obs: np.ndarray) -> np.ndarray:
            t = len(rows)
            o = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
            zt = z(t, lambda: torch.stack(rows, 1)) if callable(z) else z
            if t < random_steps and uniform is not None:
                action = uniform(t)
            elif actor is not None:  # another policy's actions: z plays no part
                action = checked_actions(actor(o).cpu(), torch.zeros(()))
            else:
                with torch.no_grad():
                    action = checked_actions(self.act(o, zt).cpu(), zt)
            now["obs"], now["action"] = o, action.to(self.device, torch.float32)
            return action.cpu().numpy()

        def observe(t: int, step) -> None:
            reward = step.sparse_reward if self.layout.sparse else step.reward
            as_tensor = lambda x: torch.as_tensor(x, dtype=torch.float32, device=self.device)  # noqa: E731
            transition = SimpleNamespace(
                obs=now["obs"], action=now["action"], next_obs=as_tensor(step.obs),
                reward=as_tensor(reward),
            )  # fmt: skip
            rows.append(self.layout.tensor(transition))
            alive.append(np.asarray(step.alive, dtype=bool))

        returns = rollout(
            self.family,
            self.env,
            policy,
            seed=self.reset_seeds(episode),
            observe=observe if record else None,
        )
        if not record:
            empty = torch.zeros(self.rows, 0, sum(self.layout.sizes), device=self.device)
            return Episode(returns, empty, torch.zeros(self.rows, 0, dtype=torch.bool))
        context = torch.stack(rows, 1)
        return Episode(returns, context, torch.as_tensor(np.stack(alive, 1), device=self.device))

    def infer_from(self, episodes: Sequence[Episode], salt: int) -> torch.Tensor:
        """z [R, Z] from a context drawn (`draw`) from everything the rows collected in
        `episodes`."""
        context = torch.cat([e.context for e in episodes], 1)
        return self.infer(self.draw(context, torch.cat([e.alive for e in episodes], 1), salt))

    def draw(self, context: torch.Tensor, valid: torch.Tensor, salt: int) -> torch.Tensor:
        """A context for every row from what it collected: `context` [R, M, F] with `valid`
        [R, M]. Where every row kept all M transitions and M ≤ C (= `context_transitions`) they
        are the context, as collected; else C of each row's valid ones, drawn with replacement
        (the offline protocol's draw) from seed k's generator: a context never larger than the
        offline protocol's, however many episodes were collected."""
        if bool(valid.all()) and context.shape[1] <= self.context_transitions:
            return context
        count = valid.sum(1)  # [R]
        if bool((count == 0).any()):
            raise ValueError("a row collected no transition to infer z from")
        order = torch.argsort((~valid).to(torch.int8), dim=1, stable=True)  # valid first
        u = self.per_seed(
            lambda g: torch.rand(self.block, self.context_transitions, generator=g), salt
        )
        index = order.gather(1, (u * count[:, None]).long().clamp_max(count[:, None] - 1))
        return context.gather(1, index[..., None].expand(-1, -1, context.shape[-1]))
