"""`online_posterior` (PEARL's online adaptation, Rakelly et al. 2019, as its public code runs
the meta-test): the agent explores the test task with task vectors drawn from the prior N(0, I)
for its first `prior_episodes` episodes, one drawn anew for each; from then on z is inferred
after every episode from everything collected so far, and the episode after the last collection
episode is scored with the z inferred from all of them.

PEARL's code (`collect_paths`): the belief starts at the prior, every transition joins the
context, z is resampled after each trajectory, and once `num_exp_traj_eval` trajectories are in,
the posterior is inferred after every trajectory; the last trajectory's return is reported.
Its configurations: 600 steps at horizon 200 on MuJoCo (3 episodes, the first 2 from the
prior), 400 at horizon 20 on the sparse point robot (20 episodes, the first 5 from the prior).

Departures: our encoders give one z per context, so "inferred" is the task vector, not a draw
from a posterior; `episodes` counts the collection episodes before the scored one (default: as
many as the offline context holds, C // horizon, as every online protocol here), so the scored
episode is one more than PEARL counts in its step budget; the context drawn from them is never
larger than the offline protocol's C; the deterministic policy acts throughout (PEARL's
meta-test is deterministic too)."""

from __future__ import annotations

import torch

from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import Scene
from registry import register
from registry.constraints import PositiveInt
from registry.validation import check_arguments

_SALT = 6100  # apart from the other protocols' salts (each below 200), however many episodes


@register("test_context", "online_posterior")
class OnlinePosterior:
    """Explore from the prior, then infer z after every episode; score the next.

    Args:
        episodes: collection episodes before the scored one (None: C // horizon).
        prior_episodes: the first episodes played with prior draws before z is first inferred
            (PEARL's num_exp_traj_eval: 1 by default; the MuJoCo columns bind its 2, the
            sparse point robot's its 5); capped at `episodes`.
    """

    reads_test_data = False

    def __init__(self, *, episodes: PositiveInt | None = None, prior_episodes: PositiveInt = 1):
        check_arguments("online_posterior", type(self).__init__, locals())
        self.episodes, self.prior_episodes = episodes, prior_episodes

    def __call__(self, scene: Scene) -> Returns:
        collected = []
        for e in range(scene.collection_episodes(self.episodes)):
            if e < self.prior_episodes:
                z = scene.per_seed(
                    lambda g: torch.randn(scene.block, scene.latent_dim, generator=g), _SALT + e
                )
            else:
                z = scene.infer_from(collected, _SALT + 100 + e)  # from all collected so far
            collected.append(scene.play(z, episode=e))
        return scene.play(scene.infer_from(collected, _SALT + 100 + len(collected))).returns
