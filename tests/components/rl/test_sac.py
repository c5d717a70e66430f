from __future__ import annotations

import pytest
import torch
from torch import nn

from components.rl.batched_mlp import BatchedMLP
from components.rl.sac import TaskBatchedSAC, TaskConditionedSAC
from components.transitions import Transitions


def batch(k=3, b=8, obs_dim=2, act_dim=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    return Transitions(
        r(k, b, obs_dim),
        r(k, b, act_dim).tanh(),
        r(k, b),
        r(k, b),
        r(k, b, obs_dim),
        torch.zeros(k, b),
        torch.zeros(k, b),
    )


def test_batched_mlp_equals_independent_mlps():
    torch.manual_seed(0)
    net = BatchedMLP(n_models=3, in_features=4, out_features=2, hidden=(5,))
    x = torch.randn(3, 7, 4)
    y = net(x)
    for k in range(3):
        first, last = net.layers
        ref = torch.relu(x[k] @ first.weight[k] + first.bias[k]) @ last.weight[k] + last.bias[k]
        torch.testing.assert_close(y[k], ref)


def test_each_task_gets_only_its_own_gradient():
    torch.manual_seed(0)
    agent = TaskBatchedSAC(n_tasks=3, obs_dim=2, act_dim=2, hidden=(8,))
    a, b = batch(seed=0), batch(seed=1)
    mixed = Transitions(
        **{f: torch.cat([getattr(a, f)[:1], getattr(b, f)[1:]]) for f in a.as_dict()}
    )

    def grads(data):
        agent.zero_grad(set_to_none=False)
        torch.manual_seed(123)
        loss, _ = agent.critic_loss(data)
        losses = agent.actor_and_alpha_losses(data)
        (loss + losses["loss_actor"]).backward()
        return {n: p.grad.clone() for n, p in agent.named_parameters() if p.grad is not None}

    ga, gm = grads(a), grads(mixed)
    for name, g in ga.items():
        if name.startswith("critic."):  # twin critics: models k and K + k belong to task k
            task0 = g[[0, 3]]
            torch.testing.assert_close(task0, gm[name][[0, 3]])
            assert not torch.allclose(g[[1, 4]], gm[name][[1, 4]])
        elif name.startswith("actor."):
            torch.testing.assert_close(g[0], gm[name][0])
            assert not torch.allclose(g[1:], gm[name][1:])


def test_update_moves_targets_and_not_inputs():
    torch.manual_seed(0)
    agent = TaskBatchedSAC(n_tasks=2, obs_dim=2, act_dim=2, hidden=(8,), tau=0.5)
    data = batch(k=2)
    before = {f: v.clone() for f, v in data.as_dict().items()}
    target = [p.clone() for p in agent.critic_target.parameters()]
    info = agent.update(data)
    assert set(info) >= {"loss_critic", "loss_actor", "loss_alpha", "entropy"}
    assert all(not p.requires_grad for p in agent.critic_target.parameters())
    pairs = zip(target, agent.critic_target.parameters(), agent.critic.parameters(), strict=True)
    for old, new, online in pairs:  # Polyak step toward the critic after its update
        torch.testing.assert_close(new, old + 0.5 * (online.detach() - old))
    for f, v in data.as_dict().items():
        assert torch.equal(before[f], v)


def test_log_prob_matches_torch_distribution():
    torch.manual_seed(0)
    agent = TaskBatchedSAC(n_tasks=2, obs_dim=2, act_dim=2, hidden=(8,))
    obs = torch.randn(2, 5, 2)
    torch.manual_seed(1)
    action, logp, _ = agent.policy(obs)
    mean, log_std = agent.actor(obs).chunk(2, -1)
    dist = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.clamp(-5, 2).exp()),
        [torch.distributions.TanhTransform(cache_size=1)],
    )
    torch.testing.assert_close(logp, dist.log_prob(action).sum(-1), rtol=1e-4, atol=1e-4)
    assert isinstance(agent, nn.Module)


@pytest.mark.parametrize("conditioned", [False, True])
def test_behaviour_sac_learns_point_robot_tasks(conditioned):
    import components.envs  # noqa: F401
    from components.data.behaviour import rollout, train_behaviour
    from registry import get

    torch.manual_seed(0)
    family = get("env", "sparse_point_robot")(seed=0)
    tasks = family.all_tasks()[:4]
    sizes = dict(n_tasks=4, obs_dim=2, act_dim=2, hidden=(32, 32), target_entropy=-6.0)
    if conditioned:  # one network told each task's goal
        agent = TaskConditionedSAC(task_features=family.task_vectors(tasks), **sizes)
    else:
        agent = TaskBatchedSAC(**sizes)
    env = family.make_batched([t for t in tasks for _ in range(5)])
    returns = {}

    def on_checkpoint(step):
        returns[step] = rollout(family, env, agent, 5, seed=step).returns.mean(1)  # [K]

    train_behaviour(
        family,
        tasks,
        agent,
        env_steps=600,
        start_steps=100,
        batch_size=64,
        checkpoint_steps=[0, 600],
        on_checkpoint=on_checkpoint,
        seed=0,
    )
    # every task's policy improves its dense return by far (the untrained policy wanders)
    assert (returns[600] > returns[0] + 5).all(), returns


def test_conditioned_sac_shares_one_network_and_copies_it_per_task():
    """Every task's loss reaches the one shared network; a per-task copy of it (how a dataset's
    policies are replayed) acts exactly as the shared one told each task's features."""
    torch.manual_seed(0)
    features = torch.randn(3, 4)
    shared = TaskConditionedSAC(
        n_tasks=3, obs_dim=2, act_dim=2, hidden=(8,), task_features=features
    )
    assert shared.actor.layers[0].weight.shape[0] == 1  # one model
    batch = Transitions(
        obs=torch.randn(3, 5, 2), action=torch.rand(3, 5, 2) * 2 - 1, reward=torch.randn(3, 5),
        sparse_reward=torch.zeros(3, 5), next_obs=torch.randn(3, 5, 2),
        terminated=torch.zeros(3, 5), truncated=torch.zeros(3, 5),
    )  # fmt: skip
    q = shared.q_values(shared.critic, batch.obs, batch.action)
    assert q.shape == (2, 3, 5)
    for task in range(3):  # each task's Q reaches the shared critic
        shared.critic.zero_grad()
        q[:, task].sum().backward(retain_graph=True)
        assert shared.critic.layers[0].weight.grad.abs().sum() > 0
    copies = TaskConditionedSAC(
        n_tasks=3, obs_dim=2, act_dim=2, hidden=(8,), task_features=features, shared=False
    )
    copies.actor.load_state_dict(
        {k: v.expand(3, *v.shape[1:]) for k, v in shared.actor.state_dict().items()}
    )
    obs = torch.randn(3, 7, 2)
    torch.testing.assert_close(
        copies.act(obs, deterministic=True), shared.act(obs, deterministic=True)
    )
    with pytest.raises(ValueError, match=r"task_features must be \[n_tasks = 3, P\]"):
        TaskConditionedSAC(n_tasks=3, obs_dim=2, act_dim=2, task_features=torch.zeros(2, 4))
