"""What every context-based learner shares: it is handed the task data and the training loop,
draws meta-batches of the configured sizes, builds and checks a context encoder, meta-tests it,
and is driven by the loop (run, checkpoints, summary).

A learner composes these; what it learns and how one step goes is its own (FOCAL in focal.py,
MBML in mbml.py). It says which networks it has (`parts`), what a checkpoint holds
(`parts_state`, `load_parts_state`, `load_weights`) and what one step is (`train_step`).
"""

from __future__ import annotations

import contextlib
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from components.algorithms.loop import TrainingLoop
from components.algorithms.reference import ReferenceVectors
from components.algorithms.sizes import Sizes
from components.contracts.core import CHECKED
from components.data.context import ContextLayout
from components.data.tasks import TaskData
from components.evaluation.meta_test import MetaTestResult
from components.seeds.batch import SeedBatch
from components.transitions import Transitions
from registry import RecipeError, entry_of


class ContextLearner(ABC):
    """The shared half of a context-based learner (not a component: FOCAL and MBML are).

    data: the offline task data; loop: the schedule that drives the learner; sizes: Z and what
    one step draws; context_next_obs: a context transition holds s′ ((s, a, s′, r)), else
    (s, a, r).
    """

    reference: ReferenceVectors | None = None  # given task vectors (a reference row), if any

    def __init__(self, data: TaskData, loop: TrainingLoop, sizes: Sizes, context_next_obs: bool):
        self.data, self.loop, self.sizes = data, loop, sizes
        self.run_context, self.device = data.run, loop.device
        self.family, self.train = data.family, data.train
        # seeds trained together (components/seeds/batch.py): their rows folded, seed-major,
        # into the first dimension of every tensor of a step; a single run is not batched
        ctx = self.run_context
        self.seed_batch = SeedBatch(tuple(ctx.seeds), ctx.seed, type(self))
        self.seeds, self.batched = self.seed_batch.seeds, self.seed_batch.batched
        sizes.check(data)
        self.layout = ContextLayout(
            obs_dim=self.family.obs_dim,
            act_dim=self.family.act_dim,
            next_obs=context_next_obs,
            sparse=data.sparse,
            **data.obs_statistics(),
        )

    # --- what a step draws ------------------------------------------------------------------
    def sample_tasks(self, count: int, *, replace: bool) -> torch.Tensor:
        """The meta-batch's task positions: [T], or [K, T] for K seeds (each its own draw)."""
        sampler = self.seed_batch.sampler or self.train
        return sampler.sample_tasks(count, replace=replace)

    def sample_context(self, tasks: torch.Tensor) -> Transitions:
        """A context batch [T, E, ·] of each task (sparse rewards on sparse families); for K
        seeds [K·T, E, ·], seed-major."""
        b = self.sizes
        return self._draw(
            tasks, b.context_batch, replace=b.context_replace, sparse=self.layout.sparse
        )

    def sample_rl(self, tasks: torch.Tensor) -> Transitions:
        """An RL batch [T, B, ·] of each task (dense rewards; [K·T, B, ·] for K seeds), s and s′
        as the agent sees them (standardised where `task_data.standardise_obs` asks for it)."""
        return self.layout.standardised(self._draw(tasks, self.sizes.rl_batch))

    def _draw(self, tasks: torch.Tensor, n: int, **how) -> Transitions:
        if self.seed_batch.sampler is None:
            return self.train.sample(tasks, n, **how)
        return self.seed_batch.sampler.sample(tasks, n, **how).map(lambda t: t.flatten(0, 1))

    def drawing(self) -> contextlib.AbstractContextManager:
        """Where a step's random draws come from (`SeedBatch.drawing`)."""
        return self.seed_batch.drawing()

    def act(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """The agent's deterministic action for raw observations (standardised as in training)."""
        return self.agent.act(self.layout.observation(obs), z)

    # --- the encoder ------------------------------------------------------------------------
    _encoder_checked = False

    def check_encoder(self, encoder: torch.nn.Module, factory: Callable) -> None:
        """Encode a small real context once: a recipe whose encoder cannot read this dataset's
        context fails here, naming both, not somewhere inside training."""
        self._encoder_checked = True
        probe = self.layout.tensor(
            self.train.sample(
                torch.arange(min(2, self.train.n_tasks)), 4, sparse=self.layout.sparse
            )
        )
        try:
            with torch.no_grad():
                z = encoder(probe).mean
        except (RuntimeError, ValueError, TypeError) as e:
            raise RecipeError(
                f"encoder {_parts(encoder, factory)} cannot read this dataset's context: "
                f"transitions of {self.layout.names} with sizes {self.layout.sizes} "
                f"(width {sum(self.layout.sizes)}) from {self.data.dataset.path}: {e}"
            ) from e
        expected = (probe.shape[0], self.sizes.latent_dim)
        if tuple(z.shape) != expected:
            raise RecipeError(
                f"encoder {name_of(factory)} returned task vectors of shape {tuple(z.shape)}; "
                f"sizes.latent_dim = {self.sizes.latent_dim} expects {expected}"
            )

    # --- driven by the loop -----------------------------------------------------------------
    @property
    def step(self) -> int:
        """Gradient steps done (the loop's count)."""
        return self.loop.step

    @step.setter
    def step(self, value: int) -> None:
        self.loop.step = value

    @property
    def steps(self) -> int:
        """The run's gradient steps: `loop.steps` and the learner's `extra_steps`."""
        return self.loop.scheduled + self.extra_steps

    extra_steps = 0  # steps run before the schedule's loop.steps (MBML's teachers)

    def networks_to_compile(self) -> list[torch.nn.Module]:
        """What `loop.compile` compiles (the loop does it before the first step)."""
        return [self.encoder, *self.agent.children()]

    def autocast(self):
        """The training step's numeric precision (a no-op context for fp32)."""
        return self.loop.step_precision.autocast()

    def set_learning_rates(self) -> None:
        """Every optimiser's learning rate for the coming step under `loop.lr_decay`."""
        self.loop.lr_decay.apply(self.optimizers(), self.loop.step, self.loop.steps)

    @abstractmethod
    def optimizers(self) -> list[torch.optim.Optimizer]:
        """Every optimiser of the learner (the loop sets their learning rates)."""

    @abstractmethod
    def parts_state(self) -> dict[str, Any]:
        """The networks and optimisers a checkpoint holds."""

    def evaluation_steps(self) -> set[int]:
        """Steps after which the meta-test runs besides the last one."""
        return self.loop.evaluation_steps()

    def evaluate(self, data=None, *, seed_index: int | None = None) -> MetaTestResult:
        """The meta-test; `data`: another quality's data to draw test contexts from (the
        distribution-shift analysis), default the data's `test_quality`. Of K seeds trained
        together, seed `seed_index`'s (its networks, its seed)."""
        if seed_index is not None:
            with self.seed_batch.as_seed(self, seed_index):
                return self.evaluate(data)
        seed = self.seed_batch.seed(self.run_context.seed)
        return self.loop.meta_test(seed=seed, **self._meta_test_inputs(data))

    def evaluate_seeds(self) -> list[MetaTestResult]:
        """Of K seeds trained together, every seed's meta-test at once, with the seed-batched
        networks (components/evaluation/meta_test.py, `MetaTest.for_seeds`), in seed order."""
        return self.loop.meta_test.for_seeds(seeds=list(self.seeds), **self._meta_test_inputs())

    def _meta_test_inputs(self, data=None) -> dict[str, Any]:
        """What the meta-test reads besides the seed: the test data and tasks, the networks."""
        return dict(
            family=self.family,
            data=self.data.test_data if data is None else data,
            tasks=self.data.test_tasks,
            layout=self.layout,
            encoder=self.encoder,
            act=self.act,
            device=self.device,
            dataset=self.data.dataset,
            train=self.train,
            **self.data.score_references(),
            **self.given_task_vectors(),
        )

    def given_task_vectors(self) -> dict[str, Any]:
        """`task_z` for the meta-test where the learner's task vectors are given, not inferred
        (a reference row: components/algorithms/reference.py)."""
        return {} if self.reference is None else {"task_z": self.reference.test}

    def generators(self) -> dict[str, torch.Generator]:
        """The random generators of its own that a checkpoint keeps (and a precision trial
        puts back): for K seeds trained together also each seed's stream and sampler."""
        return {"sampler": self.data.generator, **self.seed_batch.generators()}

    def seed_generators(self, k: int) -> dict[str, torch.Generator]:
        """Seed k's own generators, named as a single run's (`generators`)."""
        return self.seed_batch.seed_generators(k)

    def state(self) -> dict[str, Any]:
        """A whole checkpoint as the loop writes it."""
        return self.loop.checkpoint_state(self)

    def load_state(self, state: dict[str, Any]) -> None:
        """Everything `state()` saved, to continue training exactly."""
        self.loop.restore(self, state)

    def size_key(self) -> str:
        """The step's sizes: the batch sizes and every network's parameter shapes (the
        precision cache measures each size once per machine)."""
        state = self.parts_state()
        shapes = [
            f"{part}.{name}:{tuple(t.shape)}"
            for part in ("encoder", "objective", "agent")
            for name, t in (state.get(part) or {}).items()
        ]
        b = self.sizes
        sizes = f"{type(self).__name__} T{b.meta_batch} E{b.context_batch} B{b.rl_batch}"
        return f"{sizes} {hashlib.sha256(' '.join(shapes).encode()).hexdigest()[:16]}"

    # parts whose kinds promise what training relies on: each must pass its contract first
    CHECKED_KINDS = ("context_encoder", "transition_encoder", "objective", "agent", "metric_loss")

    def check_built(self) -> None:
        """Before the first step: every registered part of `parts()` of a kind above passed
        its contract (`check_parts` in the constructor), and the encoder read a real context
        (`check_encoder`); else the learner names the call it skipped."""
        fix = "before building it, as FOCAL does (docs/EXTENDING.md, A new algorithm)"
        for role, module in (self.parts() if hasattr(self, "parts") else {}).items():
            entry = entry_of(type(module)) if module is not None else None
            if entry and entry.kind in self.CHECKED_KINDS and entry.name not in CHECKED:
                raise RecipeError(
                    f"{type(self).__name__} built its {role} (@{entry.name}, kind "
                    f"{entry.kind!r}) without checking its contract: call check_parts(("
                    f"factory, {entry.kind!r}, sizes)) from components.contracts {fix}"
                )
        if getattr(self, "encoder", None) is not None and not self._encoder_checked:
            raise RecipeError(
                f"{type(self).__name__} built its encoder without reading a real context "
                f"through it: call self.check_encoder(encoder, factory) {fix}"
            )

    def run(self) -> dict[str, Any]:
        """Train to the end (the loop); the final meta-test's headline numbers (for K seeds
        trained together, each seed's headline)."""
        self.check_built()
        result, seconds = self.loop.run(self)
        if self.batched:
            headline = "; ".join(
                f"seed {run.seed}: {r.describe()}"
                for run, r in zip(self.loop.finished, self.loop.final_results, strict=True)
            )
            return {"train_seconds": round(seconds, 1), "headline": headline}
        summary = {
            "test_return_mean": round(result.mean, 4),
            "test_return_std": round(result.std, 4),
        }
        if result.paper_returns is not None:
            summary["paper_return_mean"] = round(float(result.paper_returns.mean()), 4)
        if result.normalised_scores is not None:
            summary["normalised_score"] = round(float(np.nanmean(result.normalised_scores)), 4)
        if result.success is not None:
            summary["success_rate"] = round(float(result.success.mean()), 4)
        return {**summary, "train_seconds": round(seconds, 1), "headline": result.describe()}

    def summary(self, result: MetaTestResult, seconds: float, seed_index: int | None = None) -> str:
        """summary.md: the run (seed `seed_index`'s of K trained together), its context, and
        the final meta-test task by task."""
        ctx = self.run_context
        run_dir, seed = ctx.run_dir, ctx.seed
        if seed_index is not None:
            run_dir, seed = ctx.seed_dirs[seed_index], self.seeds[seed_index]
        trained_with = f" (trained with seeds {', '.join(map(str, self.seeds))} in one process)"
        lines = [
            f"# {run_dir.name}",
            "",
            f"- env: {ctx.env} (dataset {self.data.dataset.path})",
            f"- scale: {ctx.scale}, seed: {seed}{trained_with if self.batched else ''}, "
            f"device: {self.device}",
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
        if result.normalised_scores is not None:
            columns["dataset return"] = result.dataset_returns
            columns["normalised score"] = result.normalised_scores
        if result.success is not None:
            columns["success rate"] = result.success
        lines += ["", f"| test task | {' | '.join(columns)} |", "|---" * (len(columns) + 1) + "|"]
        for i, task in enumerate(result.tasks):
            cells = ["-" if v is None else f"{v[i]:.2f}" for v in columns.values()]
            lines.append(f"| {task} | {' | '.join(cells)} |")
        return "\n".join(lines) + "\n"


def name_of(factory: Callable) -> str:
    """A factory as a recipe names it: `@context_encoder`, else its Python name."""
    entry = entry_of(factory)
    return f"@{entry.name}" if entry else getattr(factory, "__name__", repr(factory))


def _parts(encoder: torch.nn.Module, factory: Callable) -> str:
    """The registered parts of a built encoder, e.g. `@context_encoder(@mlp_encoder)`."""
    inner = []
    for module in encoder.modules():
        entry = entry_of(type(module))
        if entry and module is not encoder and f"@{entry.name}" not in inner:
            inner.append(f"@{entry.name}")
    return f"{name_of(factory)}({', '.join(inner)})" if inner else name_of(factory)
