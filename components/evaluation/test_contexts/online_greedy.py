"""`online_greedy` (IDAQ's greedy online adaptation, Wang et al. 2023, which GCC's code shares):
the agent explores the test task by trying the task vectors of training tasks, keeps an episode
in its context only when it beats the best return so far, and plays the scored episode with the
z that earned the best return.

Steps, per test row (IDAQ's `OMRLOnlineAdaptAlgorithm.collect_paths`, simplified to what a
batched meta-test can do in lockstep):
1. Hypotheses: each training task's z, inferred by the encoder from C of its offline
   transitions.
2. Phase 1 (the first `explore_fraction` of the collection episodes, rounded up, and never all
   of them): each episode tries the z of a training task — among `candidates` drawn at random,
   the one farthest from those the row has tried (the first: the first candidate). The
   best-return episode is kept as the context, its z as the best z.
3. Phase 2 (the rest, at least one): z is inferred from the kept context — transitions of the
   test task — and an episode played; it joins the context, and its z becomes the best, only
   if its return beats the best so far.
4. Scored: one episode with the best z.

IDAQ on Meta-World ML1 (its `cpearl-ml1.json` and `run_ml1.sh`): 5,000 steps at horizon 500, 10
episodes, the first 5 exploring, the 10th scored with the best z: `episodes = 9` collection
episodes before the scored one, which the Meta-World column binds. On the point robot and
MuJoCo the default, as many as the offline context holds (C // horizon: 20 and 3), is near IDAQ's
own (20 and 5).

Decisions: the return compared is the one the agent sees (sparse on sparse families); the
deterministic policy throughout, as in IDAQ; fewer than two collection episodes cannot explore
and then choose, so the protocol does not score such a run (its cell says why). IDAQ's phase 2
samples z from a posterior; our encoders give one z per context, so phase 2 re-infers it
instead. IDAQ's revert goes back to the context before the best episode joined it; ours keeps
the best one (`kept_after`)."""

from __future__ import annotations

import math

import numpy as np
import torch

from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import NotApplicable, Scene
from registry import RecipeError, register
from registry.constraints import Fraction, PositiveInt
from registry.validation import check_arguments

_SALT = 89


@register("test_context", "online_greedy")
class OnlineGreedy:
    """Try training tasks' z, keep what earns more, score with the best.

    Args:
        explore_fraction: the share of the collection episodes in phase 1 (rounded up; at
            least one, and one fewer than all).
        candidates: training tasks drawn per phase-1 episode, of which the farthest is tried
            (IDAQ: 5).
        episodes: collection episodes before the scored one, at least 2 (None: C // horizon).
    """

    reads_test_data = False

    def __init__(
        self,
        *,
        explore_fraction: Fraction = 0.5,
        candidates: PositiveInt = 5,
        episodes: PositiveInt | None = None,
    ):
        check_arguments("online_greedy", type(self).__init__, locals())
        if episodes == 1:
            raise RecipeError(
                "online_greedy.episodes = 1: expected at least 2 (it explores with training "
                "tasks' z, then infers from the test task before it chooses)"
            )
        self.explore_fraction, self.candidates = explore_fraction, candidates
        self.episodes = episodes

    def __call__(self, scene: Scene) -> Returns:
        if scene.train is None:
            raise NotApplicable("the meta-test was given no training tasks' data")
        episodes = scene.collection_episodes(self.episodes)
        if episodes < 2:
            raise NotApplicable(
                f"{episodes} collection episode: it cannot both explore and choose (the "
                f"offline context holds {scene.context_transitions} transitions, one "
                f"{scene.family.horizon}-step episode); bind online_greedy.episodes ≥ 2"
            )
        explore = exploring_episodes(self.explore_fraction, episodes)
        hypotheses = self.hypotheses(scene)  # [R, M, Z]: each row's seed's training z
        rows = torch.arange(scene.rows, device=scene.device)
        tried: list[torch.Tensor] = []
        contexts, valid, scores = [], [], []
        best = torch.full((scene.rows,), -np.inf, dtype=torch.float64)
        best_z = scene.zeros()
        kept = torch.zeros(scene.rows, 0, dtype=torch.bool)  # [R, episodes so far]
        for e in range(episodes):
            if e < explore:
                z = self.farthest(scene, hypotheses, tried, rows, e)
                tried.append(z)
            else:
                context = torch.cat(contexts, 1)
                mask = torch.cat(valid, 1) & _per_step(kept, valid).to(scene.device)
                z = scene.infer(scene.draw(context, mask, _SALT + 1 + e))
            episode = scene.play(z, episode=e)
            score = torch.as_tensor(episode.score, dtype=torch.float64)
            better = score > best
            contexts.append(episode.context)
            valid.append(episode.alive)
            scores.append(score)
            kept = kept_after(kept, better, exploring=e < explore)
            best = torch.where(better, score, best)
            best_z = torch.where(better.to(scene.device)[:, None], z, best_z)
        return scene.play(best_z).returns

    def hypotheses(self, scene: Scene) -> torch.Tensor:
        """Each row's candidate task vectors: every training task's z under the row's seed's
        encoder, from C of the task's offline transitions, [R, M, Z]."""
        train, k = scene.train, len(scene.seeds)
        m = train.n_tasks
        tasks = torch.arange(m, device=train.device).expand(k, m)  # [K, M]
        generators = [scene.generator(i, _SALT) for i in range(k)]

        def uniform(n: int) -> torch.Tensor:  # [K, M, n], seed i's block from its generator
            return torch.stack([torch.rand(m, n, generator=g) for g in generators])

        batch = train.gather(
            tasks, scene.context_transitions, replace=True, sparse=scene.layout.sparse,
            uniform=uniform,
        )  # fmt: skip
        context = scene.layout.tensor(batch).flatten(0, 1).to(scene.device)  # [K·M, C, F]
        z = scene.infer(context).reshape(k, m, -1)
        return z.repeat_interleave(scene.block, 0)  # [R, M, Z]

    def farthest(
        self,
        scene: Scene,
        hypotheses: torch.Tensor,
        tried: list[torch.Tensor],
        rows: torch.Tensor,
        episode: int,
    ) -> torch.Tensor:
        """Per row, of `candidates` training tasks drawn at random, the z farthest from those
        it has tried (its nearest tried z the farthest away)."""
        m = hypotheses.shape[1]
        drawn = scene.per_seed(
            lambda g: torch.randint(0, m, (scene.block, self.candidates), generator=g),
            _SALT + 100 + episode,
        )  # [R, c]
        candidates = hypotheses[rows[:, None], drawn]  # [R, c, Z]
        if not tried:
            return candidates[:, 0]
        used = torch.stack(tried, 1)  # [R, u, Z]
        nearest = torch.cdist(candidates, used).min(-1).values  # [R, c]
        return candidates[rows, nearest.argmax(-1)]


def exploring_episodes(fraction: float, episodes: int) -> int:
    """Phase 1's episodes of `episodes` ≥ 2: the `fraction`, rounded up, at least one and at
    most all but one (phase 2 infers from the test task before the protocol chooses)."""
    return min(episodes - 1, max(1, math.ceil(fraction * episodes)))


def kept_after(kept: torch.Tensor, better: torch.Tensor, *, exploring: bool) -> torch.Tensor:
    """The episodes a row keeps in its context, [R, E + 1], after the episode whose return
    beat the row's best so far where `better` [R]: while exploring (phase 1) the single best
    episode, this one where it is better, else the one kept before; then (phase 2) those kept
    before and this one only where it is better (an episode that does not beat the best is
    left out, and the context reverts to what it was)."""
    if exploring:
        keep = torch.zeros(kept.shape[0], kept.shape[1] + 1, dtype=torch.bool)
        keep[:, :-1] = kept & ~better[:, None]
        keep[:, -1] = better
        return keep
    return torch.cat([kept, better[:, None]], 1)


def _per_step(kept: torch.Tensor, valid: list[torch.Tensor]) -> torch.Tensor:
    """Episode flags [R, E] spread over each episode's steps, [R, E·H]."""
    return torch.cat([kept[:, e : e + 1].expand_as(v) for e, v in enumerate(valid)], 1)
