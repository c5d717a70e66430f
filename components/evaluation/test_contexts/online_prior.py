"""`online_prior` (SPC's online protocol, in the IQL multi-method code base the SPC paper runs
its baselines in): the agent explores the test task with task vectors drawn from the prior
N(0, I), one drawn anew for each collection episode, and nothing inferred while it collects; z
is then inferred once from everything collected and the scored episode is played with it.

It is not PEARL's online adaptation (`online_posterior`): PEARL infers the posterior after every
episode once its first ones are collected; here nothing is inferred until the end, so the
collection never benefits from what it has seen.

Decisions: `episodes` collection episodes before the scored one (default: as many as the
offline context holds, C // horizon, which is the anchors' own count on the point robots and
MuJoCo; the Meta-World column binds IDAQ's, docs/TEST_CONTEXTS.md); the context drawn from them
is never larger than the offline protocol's C. The collection uses the deterministic policy (the
one action every backbone offers; SPC's stochastic actor differs only in the actions' noise).
Prior draws are not bounded the way a trained encoder's z may be (tanh), so the collection sees
task vectors the policy never met in training: that is the protocol's point."""

from __future__ import annotations

import torch

from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import Scene
from registry import register
from registry.constraints import PositiveInt
from registry.validation import check_arguments

_SALT = 71  # this protocol's draws, apart from every other protocol's


@register("test_context", "online_prior")
class OnlinePrior:
    """Explore with prior z, infer once, score.

    Args:
        episodes: collection episodes before the scored one (None: C // horizon).
    """

    reads_test_data = False

    def __init__(self, *, episodes: PositiveInt | None = None):
        check_arguments("online_prior", type(self).__init__, locals())
        self.episodes = episodes

    def __call__(self, scene: Scene) -> Returns:
        collected = []
        for e in range(scene.collection_episodes(self.episodes)):
            z = scene.per_seed(
                lambda g: torch.randn(scene.block, scene.latent_dim, generator=g), _SALT + e
            )
            collected.append(scene.play(z, episode=e))
        z = scene.infer_from(collected, _SALT - 1)
        return scene.play(z).returns
