"""`other_behaviour` (UNICORN's behaviour-out-of-distribution context): the test task's context
is collected in it anew by the behaviour policy of ANOTHER task — for every test row a donor
drawn among the training tasks, its expert behaviour policy (the dataset keeps them; a scripted
dataset's expert is told the donor's goal) acting stochastically, as UNICORN's SAC checkpoints
do. z is inferred once from what the donor collected and the agent plays the scored episode.

Decisions: UNICORN rolls out one episode and averages over many donor checkpoints; we collect
`episodes` episodes (default: as many as the offline context holds, so that the two cells differ
only in who collected the context; one on Meta-World, UNICORN's own count) with one donor per
row, drawn per seed. Table 3's shift, a
context of another quality of the task's own behaviour, is the `distribution_shift` analysis."""

from __future__ import annotations

import numpy as np
import torch

from components.data.policies import expert_agent, keeps_experts
from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import NotApplicable, Scene
from registry import register
from registry.constraints import PositiveInt
from registry.validation import check_arguments

_SALT = 97


@register("test_context", "other_behaviour")
class OtherBehaviour:
    """A context collected by another task's expert behaviour policy.

    Args:
        episodes: episodes the donor collects (None: C // horizon).
    """

    reads_test_data = False

    def __init__(self, *, episodes: PositiveInt | None = None):
        check_arguments("other_behaviour", type(self).__init__, locals())
        self.episodes = episodes

    def __call__(self, scene: Scene) -> Returns:
        dataset = scene.dataset
        if dataset is None or not keeps_experts(dataset):
            raise NotApplicable(
                "the dataset keeps no behaviour policies to collect with (built before datasets "
                "kept them: move it away and build it again)"
            )
        train = [int(t) for t in dataset.split_indices("train")]
        agents = []
        for seed in scene.seeds:
            rng = np.random.default_rng(np.random.SeedSequence([seed, _SALT]))
            donors = [int(rng.choice([d for d in train if d != t])) for t in scene.tasks]
            agents.append(expert_agent(dataset, scene.family, donors, seed))
        actor = _Donors(agents, scene)
        collected = []
        for e in range(scene.collection_episodes(self.episodes)):
            collected.append(scene.play(None, episode=e, actor=actor))
        z = scene.infer_from(collected, _SALT + 1)
        return scene.play(z).returns


class _Donors:
    """Each seed's donors acting on its block of rows, each seed's noise from its own torch
    random stream (kept apart from the global one, which training goes on drawing from)."""

    def __init__(self, agents: list, scene: Scene):
        self.agents, self.block = agents, scene.block
        self.states = []
        for seed in scene.seeds:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(
                    int(np.random.SeedSequence([seed, _SALT + 2]).generate_state(1)[0])
                )
                self.states.append(torch.get_rng_state())

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        actions = []
        with torch.random.fork_rng(devices=[]):
            for k, agent in enumerate(self.agents):
                torch.set_rng_state(self.states[k])
                rows = obs[k * self.block : (k + 1) * self.block].cpu()
                with torch.no_grad():
                    action = agent.act(rows[:, None, :])[:, 0]  # one episode per donor
                actions.append(torch.as_tensor(action, dtype=torch.float32))
                self.states[k] = torch.get_rng_state()
        return torch.cat(actions).to(obs.device)
