"""`non_prior` (CSRO's non-prior context): the agent explores the test task knowing nothing, its
first steps uniformly random, and z is inferred from what it collected; then it plays the scored
episode with z from all of it.

CSRO's code collects until half of its step budget with uniform actions in [-1, 1], the rest with
the actor, z held at 0 until it is inferred after the second scored episode; SPC's version takes
101 random steps of 600 and infers z after every step. We follow CSRO's budget (a binding,
`random_fraction` of the collected steps random) and infer z after every collection episode,
between the two in cost, from everything collected so far (z = 0 before the first). As many
collection episodes as the offline context holds (its C transitions); the deterministic policy
acts (the one action every backbone offers)."""

from __future__ import annotations

import torch

from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import Scene
from registry import register
from registry.constraints import Fraction
from registry.validation import check_arguments

_SALT = 53


@register("test_context", "non_prior")
class NonPrior:
    """Explore from nothing (random first), infer z after each episode, score.

    Args:
        random_fraction: the share of the collected steps, from the first, that act
            uniformly at random (CSRO: 0.5).
    """

    reads_test_data = False

    def __init__(self, *, random_fraction: Fraction = 0.5):
        check_arguments("non_prior", type(self).__init__, locals())
        self.random_fraction = random_fraction

    def __call__(self, scene: Scene) -> Returns:
        horizon, episodes = scene.family.horizon, scene.episodes
        random_total = round(self.random_fraction * episodes * horizon)
        uniform = scene.uniform_actions(_SALT)
        contexts, valid = [], []
        z = scene.zeros()
        for e in range(episodes):
            episode = scene.play(
                z,
                episode=e,
                random_steps=min(horizon, max(0, random_total - e * horizon)),
                uniform=uniform,
            )
            contexts.append(episode.context)
            valid.append(episode.alive)
            z = scene.infer(scene.draw(torch.cat(contexts, 1), torch.cat(valid, 1), _SALT + 1 + e))
        return scene.play(z).returns
