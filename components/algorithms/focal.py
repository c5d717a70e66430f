"""The FOCAL family trainer: FOCAL and every FOCAL++ ablation row is this class plus a recipe;
so are the Batch PEARL and Contextual BCQ baselines (another encoder or agent, z not detached).

One gradient step, for a meta-batch of T training tasks (all tensors [T, B, ...], no loop over
tasks):
  1. context batch (sparse reward on sparse families) -> query encoder -> task vectors z^q;
     with a key encoder, an independent context batch -> EMA encoder -> z^k;
  2. the representation objective (and the encoder's own loss terms) on those embeddings ->
     encoder step (its only teacher, unless z is let through to the critic);
  3. an RL batch (dense reward) with z detached -> one update of the actor-critic;
  4. the key encoder follows the query encoder (EMA).
The trainer is handed the task data (`task_data.*`: which dataset, which quality) and the
training loop (`loop.*`: steps, meta-tests, checkpoints, precision; loop.py), and draws
meta-batches and task vectors sized by `sizes.*`; what it binds itself (`focal.*`) is what FOCAL
is: its encoder, objective, key encoder, agent, task sampling and learning rates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from components.algorithms.context_learner import ContextLearner, name_of
from components.algorithms.loop import TrainingLoop
from components.algorithms.reference import ReferenceVectors
from components.algorithms.sizes import Sizes
from components.contracts import check_parts
from components.data.seed_sampler import SeedSampler
from components.data.tasks import TaskData
from components.encoders.context import ContextEncoder
from components.encoders.ema import EMAEncoder
from components.encoders.encoded import diagnostics
from components.objectives.dml import FocalDML
from components.objectives.embeddings import TaskEmbeddings
from components.profiling import part, profiled
from components.rl.brac import BRAC
from components.seeds import SeedStreams, check_seed_batching, stack_modules
from components.transitions import Transitions
from registry import RecipeError, register
from registry.constraints import Fraction, PositiveFloat
from registry.validation import check_arguments, named_sizes


@register("algorithm", "focal")
class FocalTrainer(ContextLearner):
    """FOCAL / FOCAL++: a context encoder taught by its objective, and a conditioned agent.

    The encoder learns from a representation objective; a BRAC actor-critic is conditioned
    on its (detached) task vectors.

    Args:
        data: the offline task data (the experiment builds it: `task_data.*`).
        loop: the schedule that drives training (the experiment builds it: `loop.*`).
        sizes: Z and what one step draws (gin: `@sizes`, set by `sizes.*`).
        encoder: context encoder class (gin: `@context_encoder`, `@parallel_encoder`).
        objective: representation objective class (`@focal_dml`, `@matrix_moco`, `@infonce`),
            or None (baselines whose encoder learns through the critic, `detach_z = False`).
            It receives the meta-batch's TaskEmbeddings (with the context transitions and the
            encoder of other transitions); one with networks of its own is built with the
            sizes it names of obs_dim, act_dim, latent_dim and n_tasks (training tasks).
        key_momentum: EMA momentum of a key encoder (MoCo, 0.9), or None for no key encoder.
        agent: the actor-critic class (gin: `@brac`, `@bcq`).
        tasks_with_replacement: draw the meta-batch's tasks with replacement (FOCAL's DML needs
            repeats for its positive pairs; contrastive objectives want distinct tasks).
        encoder_lr: Adam learning rate of the encoder.
        objective_lr: Adam learning rate of the objective's own networks (default: encoder_lr).
        context_next_obs: put s′ in the context (s, a, s′, r); else (s, a, r).
        detach_z: the actor-critic sees z detached (DECISIONS §3); False lets the Q loss train the
            encoder too (PEARL-style, for research).
        task_vectors: 'context' (the method: z inferred from the context) or a reference row's
            z instead, trained with the same learner and data: 'none' (z = 0, the floor of
            task inference) or 'oracle' (the task's true parameters, its ceiling;
            components/algorithms/reference.py). The encoder is built but not trained then.
    """

    seed_batching = True  # --seeds: K seeds' parts stacked (components/seeds)

    def __init__(
        self,
        *,
        data: TaskData,
        loop: TrainingLoop,
        sizes: Callable[..., Sizes] = Sizes,
        encoder: Callable[..., torch.nn.Module] = ContextEncoder,
        objective: Callable[..., torch.nn.Module] | None = FocalDML,
        key_momentum: Fraction | None = None,
        agent: Callable[..., BRAC] = BRAC,
        tasks_with_replacement: bool = True,
        encoder_lr: PositiveFloat = 1e-3,
        objective_lr: PositiveFloat | None = None,
        context_next_obs: bool = True,
        detach_z: bool = True,
        task_vectors: str = "context",
    ):
        check_arguments("focal", FocalTrainer.__init__, locals())
        super().__init__(data, loop, sizes(), context_next_obs)
        latent_dim = self.sizes.latent_dim
        self.tasks_with_replacement, self.detach_z = tasks_with_replacement, detach_z
        n_train = self.train.n_tasks
        if not tasks_with_replacement and self.sizes.meta_batch > n_train:
            raise RecipeError(
                f"sizes.meta_batch = {self.sizes.meta_batch} distinct tasks, but "
                f"{data.family_name} has only {n_train} training tasks: lower it or set "
                "focal.tasks_with_replacement = True"
            )

        # Each part against its kind's contract, at tiny sizes and under this recipe's bindings,
        # before anything is trained (components/contracts/; the global random state is kept).
        dims = {"obs_dim": self.family.obs_dim, "act_dim": self.family.act_dim}
        objective_sizes = named_sizes(objective, **dims, latent_dim=latent_dim, n_tasks=n_train)
        check_parts(
            (encoder, "context_encoder", {"sizes": self.layout.sizes, "latent_dim": latent_dim}),
            (objective, "objective", objective_sizes),
            (agent, "agent", {**dims, "latent_dim": latent_dim}),
        )
        build = dict(encoder=encoder, objective=objective, agent=agent)
        build |= dict(objective_sizes=objective_sizes, key_momentum=key_momentum)
        if not self.batched:
            self.encoder, self.objective, self.key_encoder, self.agent = self._build(
                self.run_context.seed, **build
            )
        else:  # each seed's parts built as its single run builds them, then stacked
            members, generators, streams = [], [], []
            for seed in self.seeds:
                self.train.generator = torch.Generator().manual_seed(seed)  # its probes' draws
                members.append(self._build(seed, **build))
                generators.append(self.train.generator)
                streams.append(SeedStreams.capture(self.device))
            self.train.generator = self.data.generator
            roles = ("encoder", "objective", "key encoder", "agent")
            check_seed_batching(dict(zip(roles, members[0], strict=True)))
            self.encoder, self.objective, self.key_encoder, self.agent = (
                None if parts[0] is None else stack_modules(parts)
                for parts in zip(*members, strict=True)
            )
            # each seed's stream and draws; seed k's networks as single modules, for its
            # meta-tests and analyses
            views = {"encoder": members[0][0], "agent": members[0][3]}
            self.seed_batch.begin(SeedStreams(streams), SeedSampler(self.train, generators), views)
        # the objective's own networks (a CLUB estimator, a decoder) learn beside the encoder
        groups = [{"params": list(self.encoder.parameters())}]
        own = list(self.objective.parameters()) if self.objective is not None else []
        if own:
            groups.append({"params": own, "lr": objective_lr or encoder_lr})
        self.encoder_opt = torch.optim.Adam(groups, lr=encoder_lr, foreach=True)
        if task_vectors != "context":
            self.reference = ReferenceVectors(
                task_vectors,
                self.family,
                self.train.task_ids,
                data.test_tasks,
                latent_dim,
                self.device,
            )

    def _build(self, seed, *, encoder, objective, objective_sizes, key_momentum, agent):
        """One seed's parts, (encoder, objective, key encoder, agent), built from torch's
        generator seeded with `seed` (and checked on a small real context)."""
        torch.manual_seed(seed)
        latent_dim = self.sizes.latent_dim
        built_encoder = encoder(sizes=self.layout.sizes, latent_dim=latent_dim).to(self.device)
        built_objective = None
        if objective is not None:
            built_objective = objective(**objective_sizes).to(self.device)
        key_encoder = None
        if key_momentum is not None:
            key_encoder = EMAEncoder(built_encoder, momentum=key_momentum)
        elif getattr(built_objective, "needs_key", False):
            raise RecipeError(
                f"objective {name_of(objective)} contrasts against a momentum key encoder, but "
                f"the recipe has none (focal.key_momentum = None): set focal.key_momentum = "
                "0.9, or choose an objective without keys such as @focal_dml"
            )
        self.check_encoder(built_encoder, encoder)
        self._check_teacher(objective, built_encoder)
        dims = {"obs_dim": self.family.obs_dim, "act_dim": self.family.act_dim}
        built_agent = agent(**dims, latent_dim=latent_dim).to(self.device)
        return built_encoder, built_objective, key_encoder, built_agent

    def _check_teacher(self, objective: Callable | None, encoder: torch.nn.Module) -> None:
        """An encoder with no objective, no loss of its own and a detached z never learns."""
        if objective is not None or not self.detach_z:
            return
        probe = self.layout.tensor(self.train.sample(torch.arange(1), 2, sparse=self.layout.sparse))
        with torch.no_grad():
            if encoder(probe).losses:
                return
        raise RecipeError(
            "focal.objective = None and focal.detach_z = True: nothing would train the context "
            "encoder; choose an objective, or set focal.detach_z = False so the critic's loss "
            "trains it"
        )

    # --- one gradient step (the module's docstring, 1-4) -----------------------------------
    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.encoder_opt, *self.agent.optimizers().values()]

    def train_step(self) -> dict[str, torch.Tensor]:
        with self.drawing():  # seeds trained together: each seed's draws from its own stream
            return self._train_step()

    def _train_step(self) -> dict[str, torch.Tensor]:
        tasks = self.sample_meta_batch()
        if self.reference is not None:  # a reference row: given z, only the actor-critic learns
            return self.agent.update(self.sample_rl(tasks), self.reference.train[tasks.flatten()])
        context = self.sample_context(tasks)  # 1. query (and key) task vectors
        query = self.encode_query(context)
        key = self.encode_key(tasks) if self.key_encoder is not None else None
        # 2. the representation objective (and the encoder's own terms) -> the encoder's gradient
        representation = self.representation(self.embeddings(tasks, context, query, key), query)
        self.encoder_backward(representation)
        z = query.mean.detach() if self.detach_z else query.mean  # 3. the actor-critic
        rl = self.agent.update(self.sample_rl(tasks), z)
        self.encoder_step()  # after the update: with detach_z=False the Q loss adds to it
        if self.key_encoder is not None:  # 4. the key encoder follows (EMA)
            self.follow_query()
        return {**{k: v.detach() for k, v in representation.items()}, **rl}

    # --- the step's parts, each marked for the step profile (components/profiling.py) ---------
    @profiled("context sampling")
    def sample_meta_batch(self) -> torch.Tensor:
        return self.sample_tasks(self.sizes.meta_batch, replace=self.tasks_with_replacement)

    @profiled("context sampling")
    def sample_context(self, tasks: torch.Tensor) -> Transitions:
        return super().sample_context(tasks)

    @profiled("RL batch sampling")
    def sample_rl(self, tasks: torch.Tensor) -> Transitions:
        return super().sample_rl(tasks)

    @profiled("query encoder")
    def encode_query(self, context: Transitions):
        return self.encoder(self.layout.tensor(context))

    @profiled("key encoder")
    def encode_key(self, tasks: torch.Tensor):
        """The key encoder's embeddings of an independent context batch of the same tasks."""
        return self.key_encoder(self.layout.tensor(self.sample_context(tasks)))

    def embeddings(self, tasks, context, query, key) -> TaskEmbeddings:
        return TaskEmbeddings(
            query=query.per_transition,
            query_mean=query.mean,
            task=tasks.flatten(),  # [K·T] for K seeds, seed-major
            seeds=len(self.seeds),
            key=key.per_transition if key is not None else None,
            key_mean=key.mean if key is not None else None,
            context=context,
            encode=self.encode_transitions,
            relabel=self.relabel_transitions,
        )

    @profiled("objective")
    def representation(self, embeddings: TaskEmbeddings, query) -> dict[str, torch.Tensor]:
        """The objective's named terms and the encoder's own, and the gate's and z's health."""
        terms = dict(self.objective(embeddings)) if self.objective is not None else {}
        terms.update(query.losses)
        with part("metrics"):
            terms.update(diagnostics(query, len(self.seeds)))
        return terms

    @profiled("encoder backward")
    def encoder_backward(self, representation: dict[str, torch.Tensor]) -> None:
        with part("optimiser steps"):
            self.encoder_opt.zero_grad(set_to_none=True)
        terms = [v for k, v in representation.items() if k.startswith("loss_")]
        if terms:  # one value per seed for K seeds: their sum trains each on its own
            sum(terms).sum().backward(retain_graph=not self.detach_z)

    @profiled("optimiser steps")
    def encoder_step(self) -> None:
        self.encoder_opt.step()

    @profiled("target and EMA updates")
    def follow_query(self) -> None:
        self.key_encoder.update(self.encoder)

    def encode_transitions(self, transitions: Transitions) -> torch.Tensor:
        """The query encoder's per-transition embeddings [T, N, Z] of transitions [T, N, ·]
        (the reward field as the context's); a transition's embedding does not depend on the
        others of its batch, only the task vector's weights do."""
        return self.encoder(self.layout.tensor(transitions)).per_transition

    def relabel_transitions(self, transitions: Transitions, tasks: torch.Tensor) -> Transitions:
        """Transitions [T, N, ·] as the training tasks at sampler positions `tasks` [T, N]
        would have produced them from the same (s, a): the next state by the family's
        dynamics where tasks differ in dynamics and it has a closed form (else the stored
        one), the reward recomputed as the context reads it (sparse on sparse families)."""
        task = self.data.train_vectors[tasks]
        next_obs = transitions.next_obs
        if self.family.task_changes == "dynamics":
            moved = self.family.dynamics(transitions.obs, transitions.action, task)
            if moved is None:
                raise RecipeError(
                    f"{type(self.family).__name__}'s tasks differ in dynamics that have no "
                    "closed form here: a transition cannot be relabeled as another task's "
                    "(its next state is unknown); use an objective that does not relabel (for "
                    "corro: corro.outcome = 'model', recipes/corro_model.gin)"
                )
            next_obs = moved.to(next_obs.dtype)
        reward = self.family.sparse_reward if self.layout.sparse else self.family.reward
        r = reward(transitions.obs, transitions.action, next_obs, task)
        return dataclasses.replace(transitions, next_obs=next_obs, reward=r)

    # --- what the loop saves, restores and runs -------------------------------------------
    def parts_state(self) -> dict[str, Any]:
        """The networks and optimisers (the loop adds the step, random states and metric sums;
        the dataset is rebuilt from the store)."""
        return {
            "encoder": self.encoder.state_dict(),
            "key_encoder": self.key_encoder.state_dict() if self.key_encoder else None,
            "objective": self.objective.state_dict() if self.objective is not None else None,
            "agent": self.agent.state_dict(),
            "optimizers": {
                "encoder": self.encoder_opt.state_dict(),
                **{f"agent.{k}": o.state_dict() for k, o in self.agent.optimizers().items()},
            },
        }

    def load_weights(self, state: dict[str, Any]) -> None:
        """The networks of a checkpoint (enough to act and to be analysed)."""
        self.step = state["step"]
        self.encoder.load_state_dict(state["encoder"])
        if self.key_encoder is not None:
            self.key_encoder.load_state_dict(state["key_encoder"])
        if state.get("objective") is not None:  # none before exact resume; none without one
            self.objective.load_state_dict(state["objective"])
        self.agent.load_state_dict(state["agent"])

    def load_parts_state(self, state: dict[str, Any]) -> None:
        """The networks and optimisers of a checkpoint."""
        self.load_weights(state)
        self.encoder_opt.load_state_dict(state["optimizers"]["encoder"])
        for name, opt in self.agent.optimizers().items():
            opt.load_state_dict(state["optimizers"][f"agent.{name}"])

    def parts(self) -> dict[str, torch.nn.Module | None]:
        """The networks, in the order a step uses them (the loop watches them for NaN / inf)."""
        return {
            "encoder": self.encoder,
            "key encoder": self.key_encoder,
            "objective": self.objective,
            "agent": self.agent,
        }
