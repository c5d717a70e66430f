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
Every `eval_every` steps and at the end, the meta-test protocol scores the test tasks. The whole
training state (weights, optimisers, EMA key encoder, α, every random state, pending metric sums)
is checkpointed every `checkpoint_every` steps, at each meta-test and when Ctrl-C / SIGTERM stops
the run, so `tools/run.py --resume` continues it exactly. Metrics go to metrics.jsonl;
summary.md closes the run.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from components.algorithms.loop import TrainingLoop
from components.contracts import check_parts
from components.data.build import ensure_dataset
from components.data.context import ContextLayout
from components.data.sampler import TensorSampler
from components.data.shards import load_merged
from components.encoders.context import ContextEncoder
from components.encoders.ema import EMAEncoder
from components.evaluation.meta_test import MetaTest, MetaTestResult
from components.objectives.dml import FocalDML
from components.objectives.embeddings import TaskEmbeddings
from components.reporting.progress import progress_lines
from components.rl.brac import BRAC
from components.runtime import resolve_device
from components.transitions import Transitions
from registry import RecipeError, RunContext, entry_of, get, register
from registry.constraints import Count, Fraction, PositiveFloat, PositiveInt
from registry.validation import check_arguments, named_sizes


@register("algorithm", "focal")
class FocalTrainer:
    """FOCAL / FOCAL++: a context encoder taught by a representation objective, and a BRAC
    actor-critic conditioned on its (detached) task vectors.

    Args:
        run: the run's environment column, scale, seed, directory and device.
        family: the environment family (default: the run's env column).
        protocol, quality: the offline dataset and the quality trained on.
        test_quality: the quality the meta-test draws contexts from (default: `quality`).
        data_seed: seed of the dataset (task split and behaviour data); fixed across run seeds.
        encoder: context encoder class (gin: `@context_encoder`, `@parallel_encoder`).
        objective: representation objective class (`@focal_dml`, `@matrix_moco`, `@infonce`),
            or None (baselines whose encoder learns through the critic, `detach_z = False`).
            It receives the meta-batch's TaskEmbeddings (with the context transitions and the
            encoder of other transitions); one with networks of its own is built with the
            sizes it names of obs_dim, act_dim, latent_dim and n_tasks (training tasks).
        key_momentum: EMA momentum of a key encoder (MoCo, 0.9), or None for no key encoder.
        agent: the actor-critic class (gin: `@brac`, `@bcq`).
        evaluator: the meta-test (gin: `@meta_test`).
        latent_dim: Z.
        meta_batch: T, tasks per gradient step.
        tasks_with_replacement: draw the meta-batch's tasks with replacement (FOCAL's DML needs
            repeats for its positive pairs; contrastive objectives want distinct tasks).
        context_batch: transitions per task in a context batch.
        context_replace: draw a context batch's transitions with replacement (the reference's
            way); False draws distinct transitions, so context_batch must not exceed any
            training task's data.
        rl_batch: transitions per task in the RL batch.
        steps: gradient steps.
        encoder_lr: Adam learning rate of the encoder.
        objective_lr: Adam learning rate of the objective's own networks (default: encoder_lr).
        context_next_obs: put s′ in the context (s, a, s′, r); else (s, a, r).
        detach_z: the actor-critic sees z detached (DECISIONS §3); False lets the Q loss train the
            encoder too (PEARL-style, for research).
        eval_every: steps between meta-tests (0: only at the end).
        log_every: steps between training-metric records.
        checkpoint_every: steps between checkpoints besides those at meta-tests (0: none).
        data_root: dataset store root (default: $FOCALPP_DATA or the user cache).
        dataset_tag: dataset variant whose collection settings differ from the default ones
            (scales that change them set it, e.g. 'paper'): `<protocol>-s<seed>-<tag>`.
        dataset_shards: K ≥ 2 to read the dataset built in K task shards
            (`<protocol>-s<seed>-<tag>-shards<K>`, components/data/shards.py); 0: in one piece.
        progress: show a progress bar.
        lr_decay: None (constant learning rates), or 'cosine' / 'linear': every optimiser's
            learning rate falls from its set value to `lr_floor` times it over the schedule
            (a function of the step, so resume stays exact).
        lr_floor: the final fraction of each learning rate under `lr_decay`.
        precision: 'auto' (the default: bf16 autocast where timing the run's own step shows
            it faster with the same losses, else fp32; components/algorithms/precision.py),
            'fp32', or 'bf16' (docs/PERFORMANCE.md has measurements).
        compile: `torch.compile` the encoder's and the agent's networks (in place: checkpoint
            keys do not change).
    """

    def __init__(
        self,
        *,
        run: RunContext,
        family: str | None = None,
        protocol: str = "checkpoints",
        quality: str = "expert",
        test_quality: str | None = None,
        data_seed: int = 0,
        encoder: Callable[..., torch.nn.Module] = ContextEncoder,
        objective: Callable[..., torch.nn.Module] | None = FocalDML,
        key_momentum: Fraction | None = None,
        agent: Callable[..., BRAC] = BRAC,
        evaluator: Callable[..., MetaTest] = MetaTest,
        latent_dim: PositiveInt = 5,
        meta_batch: PositiveInt = 16,
        tasks_with_replacement: bool = True,
        context_batch: PositiveInt = 512,
        context_replace: bool = True,
        rl_batch: PositiveInt = 256,
        steps: PositiveInt = 100_000,
        encoder_lr: PositiveFloat = 1e-3,
        objective_lr: PositiveFloat | None = None,
        context_next_obs: bool = True,
        detach_z: bool = True,
        eval_every: Count = 10_000,
        log_every: PositiveInt = 100,
        checkpoint_every: Count = 1000,
        data_root: str | None = None,
        dataset_tag: str | None = None,
        dataset_shards: Count = 0,
        progress: bool = True,
        lr_decay: str | None = None,
        lr_floor: Fraction = 0.0,
        precision: str = "auto",
        compile: bool = False,
    ):
        check_arguments("focal", FocalTrainer.__init__, locals())
        self.run_context = run
        self.context_replace = context_replace
        self.device = resolve_device(run.device)
        self.loop = TrainingLoop(
            run=run,
            steps=steps,
            eval_every=eval_every,
            log_every=log_every,
            checkpoint_every=checkpoint_every,
            progress=progress,
            lr_decay=lr_decay,
            lr_floor=lr_floor,
            precision=precision,
            device=self.device,
        )
        self.meta_batch, self.context_batch, self.rl_batch = meta_batch, context_batch, rl_batch
        self.tasks_with_replacement, self.detach_z = tasks_with_replacement, detach_z
        family_name = family or run.env
        self.family = get("env", family_name)(seed=data_seed)

        where = {
            "root": Path(data_root) if data_root else None,
            "tag": dataset_tag,
            "scale": run.scale,
            "family": self.family,
        }
        if dataset_shards:  # built beforehand, shard by shard (a study with dataset_shards)
            self.dataset = load_merged(family_name, protocol, data_seed, dataset_shards, **where)
        else:
            self.dataset = ensure_dataset(
                family_name, protocol, data_seed, progress=_dataset_progress(), **where
            )
        self.generator = torch.Generator().manual_seed(run.seed)
        train_tasks = self.dataset.split_indices("train")
        self.test_tasks = self.dataset.split_indices("test")
        self.train = TensorSampler(
            self.dataset.quality(quality), train_tasks, device=self.device, generator=self.generator
        )
        self.quality, self.test_quality = quality, test_quality or quality
        self.test_data = self.dataset.quality(self.test_quality)
        if not tasks_with_replacement and meta_batch > len(train_tasks):
            raise RecipeError(
                f"focal.meta_batch = {meta_batch} distinct tasks, but {family_name} has only "
                f"{len(train_tasks)} training tasks: lower it or set "
                "focal.tasks_with_replacement = True"
            )
        shortest = int(self.train.length.min())
        if not context_replace and context_batch > shortest:
            raise RecipeError(
                f"focal.context_batch = {context_batch} distinct transitions per task, but a "
                f"training task of {self.dataset.path} (quality {quality!r}) has only "
                f"{shortest}: lower it or set focal.context_replace = True"
            )
        self.layout = ContextLayout(
            obs_dim=self.family.obs_dim,
            act_dim=self.family.act_dim,
            next_obs=context_next_obs,
            sparse=self.family.goal_radius is not None,
        )

        # Each part against its kind's contract, at tiny sizes and under this recipe's bindings,
        # before anything is trained (components/contracts/; the global random state is kept).
        dims = {"obs_dim": self.family.obs_dim, "act_dim": self.family.act_dim}
        objective_sizes = named_sizes(
            objective, **dims, latent_dim=latent_dim, n_tasks=self.train.n_tasks
        )
        check_parts(
            (encoder, "context_encoder", {"sizes": self.layout.sizes, "latent_dim": latent_dim}),
            (objective, "objective", objective_sizes),
            (agent, "agent", {**dims, "latent_dim": latent_dim}),
        )
        torch.manual_seed(run.seed)
        self.encoder = encoder(sizes=self.layout.sizes, latent_dim=latent_dim).to(self.device)
        self.objective = None
        if objective is not None:
            self.objective = objective(**objective_sizes).to(self.device)
        self.key_encoder = None
        if key_momentum is not None:
            self.key_encoder = EMAEncoder(self.encoder, momentum=key_momentum)
        elif getattr(self.objective, "needs_key", False):
            raise RecipeError(
                f"objective {_name(objective)} contrasts against a momentum key encoder, but "
                f"the recipe has none (focal.key_momentum = None): set focal.key_momentum = "
                "0.9, or choose an objective without keys such as @focal_dml"
            )
        self._check_encoder(encoder, latent_dim)
        self._check_teacher(objective)
        self.agent = agent(
            obs_dim=self.family.obs_dim, act_dim=self.family.act_dim, latent_dim=latent_dim
        ).to(self.device)
        # the objective's own networks (a CLUB estimator, a decoder) learn beside the encoder
        groups = [{"params": list(self.encoder.parameters())}]
        own = list(self.objective.parameters()) if self.objective is not None else []
        if own:
            groups.append({"params": own, "lr": objective_lr or encoder_lr})
        self.encoder_opt = torch.optim.Adam(groups, lr=encoder_lr, foreach=True)
        for opt in self.optimizers():
            for group in opt.param_groups:
                group.setdefault("base_lr", group["lr"])
        self.evaluator = evaluator()
        all_tasks = self.family.all_tasks()
        vectors = self.family.task_vectors([all_tasks[i] for i in self.train.task_ids])
        self.train_vectors = torch.as_tensor(vectors, dtype=torch.float32, device=self.device)
        if compile:
            for module in (self.encoder, *self.agent.children()):
                module.compile()

    # --- build-time checks -----------------------------------------------------------------
    def _check_encoder(self, encoder: Callable, latent_dim: int) -> None:
        """Encode a small real context once: a recipe whose encoder cannot read this dataset's
        context fails here, naming both, not somewhere inside training."""
        probe = self.layout.tensor(
            self.train.sample(
                torch.arange(min(2, self.train.n_tasks)), 4, sparse=self.layout.sparse
            )
        )
        try:
            with torch.no_grad():
                z = self.encoder(probe).mean
        except (RuntimeError, ValueError, TypeError) as e:
            raise RecipeError(
                f"encoder {self._parts(encoder)} cannot read this dataset's context: "
                f"transitions of {self.layout.names} with sizes {self.layout.sizes} "
                f"(width {sum(self.layout.sizes)}) from {self.dataset.path}: {e}"
            ) from e
        if tuple(z.shape) != (probe.shape[0], latent_dim):
            raise RecipeError(
                f"encoder {_name(encoder)} returned task vectors of shape {tuple(z.shape)}; "
                f"focal.latent_dim = {latent_dim} expects {(probe.shape[0], latent_dim)}"
            )

    def _check_teacher(self, objective: Callable | None) -> None:
        """An encoder with no objective, no loss of its own and a detached z never learns."""
        if objective is not None or not self.detach_z:
            return
        probe = self.layout.tensor(self.train.sample(torch.arange(1), 2, sparse=self.layout.sparse))
        with torch.no_grad():
            if self.encoder(probe).losses:
                return
        raise RecipeError(
            "focal.objective = None and focal.detach_z = True: nothing would train the context "
            "encoder; choose an objective, or set focal.detach_z = False so the critic's loss "
            "trains it"
        )

    def _parts(self, encoder: Callable) -> str:
        """The registered parts of the built encoder, e.g. `@context_encoder(@mlp_encoder)`."""
        inner = []
        for module in self.encoder.modules():
            entry = entry_of(type(module))
            if entry and module is not self.encoder and f"@{entry.name}" not in inner:
                inner.append(f"@{entry.name}")
        return f"{_name(encoder)}({', '.join(inner)})" if inner else _name(encoder)

    # --- one gradient step -----------------------------------------------------------------
    @property
    def step(self) -> int:
        """Gradient steps done (the loop's count)."""
        return self.loop.step

    @step.setter
    def step(self, value: int) -> None:
        self.loop.step = value

    @property
    def steps(self) -> int:
        """The run's gradient steps (the loop's)."""
        return self.loop.steps

    @steps.setter
    def steps(self, value: int) -> None:
        self.loop.steps = value

    def autocast(self):
        """The training step's numeric precision (a no-op context for fp32)."""
        return self.loop.autocast()

    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.encoder_opt, *self.agent.optimizers().values()]

    def set_learning_rates(self) -> None:
        """Every optimiser's learning rate for the coming step under `lr_decay`."""
        self.loop.set_learning_rates(self.optimizers())

    def train_step(self) -> dict[str, torch.Tensor]:
        tasks = self.train.sample_tasks(self.meta_batch, replace=self.tasks_with_replacement)
        sparse = self.layout.sparse
        context = self.train.sample(
            tasks, self.context_batch, replace=self.context_replace, sparse=sparse
        )
        query = self.encoder(self.layout.tensor(context))
        key = None
        if self.key_encoder is not None:
            key = self.key_encoder(
                self.layout.tensor(
                    self.train.sample(
                        tasks, self.context_batch, replace=self.context_replace, sparse=sparse
                    )
                )
            )
        embeddings = TaskEmbeddings(
            query=query.per_transition,
            query_mean=query.mean,
            task=tasks,
            key=key.per_transition if key is not None else None,
            key_mean=key.mean if key is not None else None,
            context=context,
            encode=self.encode_transitions,
            relabel=self.relabel_transitions,
        )
        representation = dict(self.objective(embeddings)) if self.objective is not None else {}
        representation.update(query.losses)
        terms = [v for k, v in representation.items() if k.startswith("loss_")]
        self.encoder_opt.zero_grad(set_to_none=True)
        if terms:
            sum(terms).backward(retain_graph=not self.detach_z)
        z = query.mean.detach() if self.detach_z else query.mean
        rl = self.agent.update(self.train.sample(tasks, self.rl_batch), z)
        self.encoder_opt.step()  # after the update: with detach_z=False the Q loss adds to it
        if self.key_encoder is not None:
            self.key_encoder.update(self.encoder)
        return {**{k: v.detach() for k, v in representation.items()}, **rl}

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
        task = self.train_vectors[tasks]
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

    # --- the run ---------------------------------------------------------------------------
    def evaluate(self, data=None) -> MetaTestResult:
        """The meta-test; `data`: another quality's data to draw test contexts from (the
        distribution-shift analysis), default the recipe's `test_quality`."""
        return self.evaluator(
            family=self.family,
            data=self.test_data if data is None else data,
            tasks=self.test_tasks,
            layout=self.layout,
            encoder=self.encoder,
            act=self.agent.act,
            device=self.device,
            seed=self.run_context.seed,
        )

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

    def state(self) -> dict[str, Any]:
        """A whole checkpoint as the loop writes it."""
        return self.loop.checkpoint_state(self)

    def load_state(self, state: dict[str, Any]) -> None:
        """Everything `state()` saved, to continue training exactly."""
        self.loop.restore(self, state)

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

    def size_key(self) -> str:
        """The step's sizes: the batch sizes and every network's parameter shapes (the
        precision cache measures each size once per machine)."""
        state = self.parts_state()
        shapes = [
            f"{part}.{name}:{tuple(t.shape)}"
            for part in ("encoder", "objective", "agent")
            for name, t in (state[part] or {}).items()
        ]
        sizes = f"{type(self).__name__} T{self.meta_batch} E{self.context_batch} B{self.rl_batch}"
        return f"{sizes} {hashlib.sha256(' '.join(shapes).encode()).hexdigest()[:16]}"

    def generators(self) -> dict[str, torch.Generator]:
        """The random generators of its own that a checkpoint keeps."""
        return {"sampler": self.generator}

    def parts(self) -> dict[str, torch.nn.Module | None]:
        """The networks, in the order a step uses them (the loop watches them for NaN / inf)."""
        return {
            "encoder": self.encoder,
            "key encoder": self.key_encoder,
            "objective": self.objective,
            "agent": self.agent,
        }

    def evaluation_steps(self) -> set[int]:
        """Steps after which the meta-test runs besides the last one."""
        if not self.loop.eval_every:
            return set()
        return set(range(self.loop.eval_every, self.steps, self.loop.eval_every))

    def close(self) -> None:
        self.evaluator.close()

    def run(self) -> dict[str, Any]:
        result, seconds = self.loop.run(self)
        summary = {
            "test_return_mean": round(result.mean, 4),
            "test_return_std": round(result.std, 4),
        }
        if result.paper_returns is not None:
            summary["paper_return_mean"] = round(float(result.paper_returns.mean()), 4)
        return {**summary, "train_seconds": round(seconds, 1), "headline": result.describe()}

    def summary(self, result: MetaTestResult, seconds: float) -> str:
        ctx = self.run_context
        lines = [
            f"# {ctx.run_dir.name}",
            "",
            f"- env: {ctx.env} (dataset {self.dataset.path})",
            f"- scale: {ctx.scale}, seed: {ctx.seed}, device: {self.device}",
            f"- steps: {self.step}, training time: {seconds:.0f} s",
            f"- context: {', '.join(self.layout.names)}"
            f" ({'sparse' if self.layout.sparse else 'dense'} reward)",
            "",
            f"**{result.describe()}**",
        ]
        if result.ceiling:
            best = ", ".join(f"{k} {v:.2f}" for k, v in result.ceiling.items())
            lines.append(f"\nCeiling on these test tasks (a task-knowing oracle): {best}.")
        columns = {"return": result.returns, "sparse return": result.sparse_returns}
        if result.paper_returns is not None:
            columns[f"paper-comparable ({result.paper_formula})"] = result.paper_returns
        lines += ["", f"| test task | {' | '.join(columns)} |", "|---" * (len(columns) + 1) + "|"]
        for i, task in enumerate(result.tasks):
            cells = ["-" if v is None else f"{v[i]:.2f}" for v in columns.values()]
            lines.append(f"| {task} | {' | '.join(cells)} |")
        return "\n".join(lines) + "\n"


def _name(factory: Callable) -> str:
    entry = entry_of(factory)
    return f"@{entry.name}" if entry else getattr(factory, "__name__", repr(factory))


def _dataset_progress():
    """A callback that prints the dataset build's progress now and then (a build is rare)."""
    return progress_lines("building dataset: behaviour SAC", every=10.0)
