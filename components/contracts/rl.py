"""Contracts of the learning parts: task-conditioned agents, divergence critics, behaviour
learners and their settings, and network building blocks."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Protocol

import torch
from torch import nn

from components.contracts.core import (
    Broken,
    at_any_parameters,
    build,
    contract,
    has_methods,
    loss_terms,
    reaches,
    round_trip,
    target_of,
    tensor,
)
from components.contracts.seeds import batches_like_singles
from components.transitions import Transitions

T, B, N, F, A, Z = 3, 8, 2, 2, 2, 3


class Agent(Protocol):
    def act(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor: ...
    def update(self, batch: Transitions, z: torch.Tensor) -> Mapping[str, torch.Tensor]: ...
    def optimizers(self) -> Mapping[str, torch.optim.Optimizer]: ...


class Divergence(Protocol):
    def estimate(self, x: torch.Tensor, data_action, policy_action) -> torch.Tensor: ...
    def loss(self, x: torch.Tensor, data_action, policy_action) -> Mapping[str, torch.Tensor]: ...


class BehaviourLearner(Protocol):
    def act(self, obs: torch.Tensor) -> torch.Tensor: ...
    def update(self, batch: Transitions) -> Mapping[str, torch.Tensor]: ...


class Behaviour(Protocol):
    """A frozen dataclass of settings (env_steps, ...) that the dataset protocols read."""


class Network(Protocol):
    """A torch.nn.Module with explicit sizes."""


def transitions(tasks: int, seed: int = 4) -> Transitions:
    g = torch.Generator().manual_seed(seed)

    def draw(*shape):
        return torch.rand(*shape, generator=g) * 2 - 1

    return Transitions(
        obs=draw(tasks, B, F),
        action=draw(tasks, B, A) * 0.9,
        reward=draw(tasks, B),
        sparse_reward=draw(tasks, B).clamp(min=0),
        next_obs=draw(tasks, B, F),
        terminated=torch.zeros(tasks, B),
        truncated=torch.zeros(tasks, B),
    )


def _fold_updates(each: list[tuple]) -> tuple:
    """K seeds' (batch, z) as one seed-major batch and z."""
    batches, zs = zip(*each, strict=True)
    folded = {
        f: torch.cat([getattr(b, f) for b in batches]) for f in Transitions.__dataclass_fields__
    }
    return Transitions(**folded), torch.cat(zs)


def _trained_by_some_optimizer(module: nn.Module, optimizers: Mapping) -> None:
    if not isinstance(optimizers, Mapping) or not optimizers:
        raise Broken(
            "return its optimizers by name from optimizers()", f"it returned {optimizers!r}"
        )
    stepped = {id(p) for opt in optimizers.values() for g in opt.param_groups for p in g["params"]}
    idle = [n for n, p in module.named_parameters() if p.requires_grad and id(p) not in stepped]
    if idle:
        raise Broken(
            "give every trainable parameter to one of its optimizers",
            f"{idle[:4]} are in none, so they never learn",
            "add them to an optimizer, or freeze them (requires_grad_(False))",
        )


@contract("agent", Agent)
def probe_agent(factory, given) -> None:
    sizes = {k: given.get(k, v) for k, v in (("obs_dim", F), ("act_dim", A), ("latent_dim", Z))}

    def make():
        return build(factory, "be built as cls(obs_dim=, act_dim=, latent_dim=)", **sizes)

    agent = make()
    g = torch.Generator().manual_seed(5)
    obs = torch.randn(T, N, sizes["obs_dim"], generator=g)
    z_act = torch.randn(T, N, sizes["latent_dim"], generator=g).tanh()

    def acts_within_bounds(m, when: str) -> None:
        action = tensor(m.act(obs, z_act), (T, N, sizes["act_dim"]), "actions [T, N, A]")
        if not bool((action.abs() <= 1.0 + 1e-6).all()):
            raise Broken(
                "act within the action bounds [-1, 1]",
                f"it returned |a| up to {action.abs().max():.3g}{when}",
            )

    at_any_parameters(agent, acts_within_bounds)
    _trained_by_some_optimizer(agent, agent.optimizers())
    batch = transitions(T)
    if (sizes["obs_dim"], sizes["act_dim"]) != (F, A):
        batch = dataclasses.replace(
            batch,
            obs=torch.randn(T, B, sizes["obs_dim"], generator=g),
            next_obs=torch.randn(T, B, sizes["obs_dim"], generator=g),
            action=torch.rand(T, B, sizes["act_dim"], generator=g) * 1.8 - 0.9,
        )
    z = torch.randn(T, sizes["latent_dim"], generator=g).tanh().requires_grad_()
    before = {n: p.detach().clone() for n, p in agent.named_parameters() if p.requires_grad}
    loss_terms(agent.update(batch, z), "update(batch, z)")
    if z.grad is None:
        raise Broken(
            "let its critic loss reach z when z requires grad (recipes that train the encoder "
            "through the critic rely on it)",
            "z has no gradient after update",
        )
    moved = [
        n for n, p in agent.named_parameters() if n in before and not torch.equal(p, before[n])
    ]
    if not moved:
        raise Broken("change its parameters in update()", "no parameter changed")
    round_trip(make, agent, lambda m: m.act(obs, z_act))

    def seed_inputs(k: int):
        seeded = transitions(T, seed=20 + k)
        if (sizes["obs_dim"], sizes["act_dim"]) != (F, A):
            seeded = batch
        return seeded, torch.randn(T, sizes["latent_dim"], generator=g).tanh()

    batches_like_singles(
        make, seed_inputs, lambda m, b, z: m.update(b, z), fold=_fold_updates, what="update terms"
    )


@contract("divergence", Divergence)
def probe_divergence(factory, given) -> None:
    x_dim = given.get("in_features", F + Z)

    def make():
        return build(
            factory, "be built as cls(in_features=, act_dim=)", in_features=x_dim, act_dim=A
        )

    critic = make()
    batch = transitions(T)
    x = torch.randn(T, B, x_dim, generator=torch.Generator().manual_seed(6))
    policy_action = batch.action.flip(1)
    at_any_parameters(
        critic,
        lambda m, when: tensor(
            m.estimate(x, batch.action, policy_action), (T, B), "a per-state estimate [T, B]"
        ),
    )
    losses = loss_terms(critic.loss(x, batch.action, policy_action), "loss(x, data, policy)")
    reaches(sum(losses.values()), critic, "its loss")
    round_trip(make, critic, lambda m: m.estimate(x, batch.action, policy_action))

    def seed_inputs(k: int):
        seeded = transitions(T, seed=30 + k)
        xk = torch.randn(T, B, x_dim, generator=torch.Generator().manual_seed(40 + k))
        return xk, seeded.action, seeded.action.flip(1)

    batches_like_singles(make, seed_inputs, lambda m, *a: m.loss(*a), what="loss terms")


@contract("behaviour_learner", BehaviourLearner)
def probe_behaviour_learner(factory, given) -> None:
    def make():
        return build(
            factory,
            "be built as cls(n_tasks=, obs_dim=, act_dim=)",
            n_tasks=T,
            obs_dim=F,
            act_dim=A,
        )

    learner = make()
    obs = torch.randn(T, N, F, generator=torch.Generator().manual_seed(7))
    at_any_parameters(learner, lambda m, when: tensor(m.act(obs), (T, N, A), "actions [K, N, A]"))
    loss_terms(learner.update(transitions(T)), "update(batch)")
    round_trip(make, learner, lambda m: m.act(obs, deterministic=True))


@contract("behaviour", Behaviour)
def probe_behaviour(factory, given) -> None:
    target = inspect.unwrap(target_of(factory))
    if not dataclasses.is_dataclass(target):
        raise Broken("be a dataclass of settings", f"{target!r} is not a dataclass")
    settings = build(factory, "be built as cls() (its settings are gin bindings)")
    if not dataclasses.is_dataclass(settings):
        raise Broken("build a settings dataclass", f"it built {type(settings).__name__}")


@contract("network", Network)
def probe_network(factory, given) -> None:
    """Built with every required size 3 (and flags False): a module with finite parameters that
    a fresh copy restores exactly."""
    required = {
        name: (False if p.annotation in (bool, "bool") else 3)
        for name, p in inspect.signature(target_of(factory)).parameters.items()
        if p.default is inspect.Parameter.empty and p.kind is inspect.Parameter.KEYWORD_ONLY
    }

    def make():
        return build(factory, "be built from its sizes", **required)

    network = make()
    if not isinstance(network, nn.Module) or not list(network.parameters()):
        raise Broken("be a torch.nn.Module with parameters", f"it built {type(network).__name__}")
    if not all(torch.isfinite(p).all() for p in network.parameters()):
        raise Broken("start with finite parameters", "some are NaN or inf")
    round_trip(make, network, lambda m: [p.detach() for p in m.parameters()])
    has_methods(factory, ("forward",), "define forward()")
