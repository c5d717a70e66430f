"""`online_prior` (PEARL's online adaptation, as the IQL multi-method code base SPC runs it):
the agent explores the test task with task vectors drawn from the prior N(0, I), one drawn
anew for each collection episode, and nothing inferred while it collects; z is then inferred
once from everything collected and the scored episode is played with it.

Decisions: as many collection episodes as the offline context holds (its C transitions); the
collection uses the deterministic policy (the one action every backbone offers; SPC's stochastic
actor differs only in the actions' noise). As in SPC, prior draws are not bounded the way a
trained encoder's z may be (tanh), so the collection sees task vectors the policy never met in
training: that is the protocol's point."""

from __future__ import annotations

import torch

from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import Scene
from registry import register

_SALT = 71  # this protocol's draws, apart from every other protocol's


@register("test_context", "online_prior")
class OnlinePrior:
    """Explore with prior z, infer once, score."""

    reads_test_data = False

    def __call__(self, scene: Scene) -> Returns:
        contexts, valid = [], []
        for e in range(scene.episodes):
            z = scene.per_seed(
                lambda g: torch.randn(scene.block, scene.latent_dim, generator=g), _SALT + e
            )
            episode = scene.play(z, episode=e)
            contexts.append(episode.context)
            valid.append(episode.alive)
        z = scene.infer(scene.draw(torch.cat(contexts, 1), torch.cat(valid, 1), _SALT - 1))
        return scene.play(z).returns
