"""`non_prior` (CSRO's non-prior context, Gao et al. 2023): the agent explores the test task
knowing nothing, its first steps uniformly random, and z is inferred from what it collected;
then it plays the scored episode with z from all of it.

CSRO's code (`collect_np_online_paths`) alternates an exploration episode (stochastic actor,
each action replaced by a uniform one in [-1, 1] while fewer than half its step budget has gone)
with a scored episode that does not join the context, z held at 0 until the posterior is
inferred from the exploration episodes; the last scored episode counts. Its configurations: 400
steps at horizon 20 on the point robot (20 rounds), 600 at horizon 200 on MuJoCo (3 rounds).
SPC's version takes 101 random steps of 600 and infers z after every step.

Departures: the exploration episodes run back to back and only the last episode is scored (no
scored episode between them); `episodes` of them before the scored one (default: as many as the
offline context holds, C // horizon: CSRO's own count of rounds on the point robot and MuJoCo;
the Meta-World column binds IDAQ's); the first `random_fraction` of the collected steps are
random (CSRO: half), z inferred after every collection episode from everything collected so far
(z = 0 before the first), from a context never larger than the offline protocol's C; the
deterministic policy acts (the one action every backbone offers)."""

from __future__ import annotations

from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import Scene
from registry import register
from registry.constraints import Fraction, PositiveInt
from registry.validation import check_arguments

_SALT = 53


@register("test_context", "non_prior")
class NonPrior:
    """Explore from nothing (random first), infer z after each episode, score.

    Args:
        random_fraction: the share of the collected steps, from the first, that act
            uniformly at random (CSRO: 0.5).
        episodes: collection episodes before the scored one (None: C // horizon).
    """

    reads_test_data = False

    def __init__(self, *, random_fraction: Fraction = 0.5, episodes: PositiveInt | None = None):
        check_arguments("non_prior", type(self).__init__, locals())
        self.random_fraction, self.episodes = random_fraction, episodes

    def __call__(self, scene: Scene) -> Returns:
        horizon = scene.family.horizon
        episodes = scene.collection_episodes(self.episodes)
        random_total = round(self.random_fraction * episodes * horizon)
        uniform = scene.uniform_actions(_SALT)
        collected = []
        z = scene.zeros()
        for e in range(episodes):
            episode = scene.play(
                z,
                episode=e,
                random_steps=min(horizon, max(0, random_total - e * horizon)),
                uniform=uniform,
            )
            collected.append(episode)
            z = scene.infer_from(collected, _SALT + 1 + e)
        return scene.play(z).returns
