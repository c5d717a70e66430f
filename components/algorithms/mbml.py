"""MBML (Li, Yang et al., "Multi-task Batch Reinforcement Learning with Metric Learning",
NeurIPS 2020), on the FOCAL trainer's data, loop, meta-test and checkpoints.

Two phases in one run of `teacher_steps + loop.steps` steps:
  1. teachers: one BCQ per training task (no z) and per-task learned reward models (and
     transition models where tasks differ in dynamics), all K tasks trained together with
     batched weights, each on its own task's data;
  2. student: a meta-batch of T distinct tasks (at most every training task); each task's
     context is relabeled with its partner task's models (partner = the previous task of the
     batch) → anchor; the triplet loss
     pulls the anchor's task vector toward the partner's real context and away from its own;
     one shared BCQ over (s, z) is distilled from the teachers (Q: squared error to the task's
     teacher twin Q; perturbation: squared error to the teacher's perturbed action; VAE:
     BCQ's own loss on the data), with z carrying the Q distillation's gradient into the
     encoder.
The meta-test scores the student, so it runs only in phase 2.

Simplifications against the original (also in recipes/mbml.gin and docs/RESULTS.md): relabeling
uses the partner task's models only (no ensembles, no filtering of relabeled transitions by
model disagreement); one partner per task per step; the distilled student's VAE learns from the
data rather than from the teachers'; teachers stay fixed in phase 2.

Like FOCAL, it is handed the task data (`task_data.*`) and the loop (`loop.*`; `loop.steps`
counts phase 2, so the run is `teacher_steps + loop.steps` long) and draws `sizes.*`-sized
meta-batches (at most every training task: each needs a partner other than itself); every other
setting is its own (`mbml.*`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from components.algorithms.context_learner import ContextLearner
from components.algorithms.loop import TrainingLoop
from components.algorithms.sizes import Sizes
from components.contracts import check_parts
from components.data.tasks import TaskData
from components.encoders.context import ContextEncoder
from components.objectives.triplet import Triplet
from components.rl.bcq import BCQ
from components.rl.steps import step
from components.rl.task_models import TaskModels
from components.transitions import Transitions
from registry import RecipeError, register
from registry.constraints import Count, PositiveFloat
from registry.validation import check_arguments


@register("algorithm", "mbml")
class MBMLTrainer(ContextLearner):
    """Per-task BCQ teachers and models, then a triplet-trained encoder and a distilled student.

    Args:
        data: the offline task data (the experiment builds it: `task_data.*`).
        loop: the schedule (the experiment builds it: `loop.*`; its steps are phase 2's).
        sizes: Z and what one step draws (gin: `@sizes`, set by `sizes.*`).
        teacher_steps: gradient steps of phase 1 (before the `loop.steps` of phase 2).
        teacher: the per-task learner class (gin: `@bcq`; built with `models = K`, no z).
        student: the task-conditioned learner class (gin: `@bcq`; built over (s, z)).
        models: the per-task reward / transition models class (gin: `@task_models`).
        metric: the encoder's metric loss (gin: `@triplet`).
        encoder: context encoder class (gin: `@context_encoder`).
        encoder_lr: Adam learning rate of the encoder.
        context_next_obs: put s′ in the context (s, a, s′, r); else (s, a, r).
    """

    def __init__(
        self,
        *,
        data: TaskData,
        loop: TrainingLoop,
        sizes: Callable[..., Sizes] = Sizes,
        teacher_steps: Count = 10_000,
        teacher: Callable[..., BCQ] = BCQ,
        student: Callable[..., BCQ] = BCQ,
        models: Callable[..., TaskModels] = TaskModels,
        metric: Callable[..., torch.nn.Module] = Triplet,
        encoder: Callable[..., torch.nn.Module] = ContextEncoder,
        encoder_lr: PositiveFloat = 1e-3,
        context_next_obs: bool = True,
    ):
        check_arguments("mbml", MBMLTrainer.__init__, locals())
        super().__init__(data, loop, sizes(), context_next_obs)
        latent_dim = self.sizes.latent_dim
        k = self.train.n_tasks
        if k < 2:
            raise RecipeError(
                f"mbml needs at least two training tasks to relabel one as another; "
                f"{data.family_name} has {k}"
            )
        dims = {"obs_dim": self.family.obs_dim, "act_dim": self.family.act_dim}
        check_parts(
            (encoder, "context_encoder", {"sizes": self.layout.sizes, "latent_dim": latent_dim}),
            (student, "agent", {**dims, "latent_dim": latent_dim}),
        )
        torch.manual_seed(self.run_context.seed)
        self.encoder = encoder(sizes=self.layout.sizes, latent_dim=latent_dim).to(self.device)
        self.check_encoder(self.encoder, encoder)
        self.agent = student(**dims, latent_dim=latent_dim).to(self.device)
        self.encoder_opt = torch.optim.Adam(self.encoder.parameters(), lr=encoder_lr, foreach=True)
        self.teacher_steps = self.extra_steps = teacher_steps  # the loop runs them first
        self.teachers = teacher(**dims, latent_dim=0, models=k)
        self.task_models = models(
            n_tasks=k, **dims, dynamics=self.family.task_changes == "dynamics"
        )
        self.teachers.to(self.device)
        self.task_models.to(self.device)
        check_parts((metric, "metric_loss", {}))
        self.metric = metric().to(self.device)
        self._every_task = torch.arange(k, device=self.device)

    # --- phase 1 -------------------------------------------------------------------------------
    def teacher_step(self) -> dict[str, torch.Tensor]:
        """Each teacher and model on its own task's batch [K, B, ·]."""
        batch = self.sample_rl(self._every_task)
        no_z = batch.obs.new_zeros(len(self._every_task), 0)
        info = {f"{k}_teacher": v for k, v in self.teachers.update(batch, no_z).items()}
        # the models predict the reward the context shows (sparse on sparse families)
        shown = batch.with_reward(batch.sparse_reward) if self.layout.sparse else batch
        info.update(self.task_models.update(shown))
        return info

    # --- phase 2 -------------------------------------------------------------------------------
    def student_step(self) -> dict[str, torch.Tensor]:
        n = min(self.sizes.meta_batch, self.train.n_tasks)
        tasks = self.train.sample_tasks(n, replace=False)
        partner = tasks.roll(1)  # row i's partner is row i − 1's task; its z is z.roll(1)
        context = self.sample_context(tasks)
        query = self.encoder(self.layout.tensor(context))
        anchor = self.encoder(self.layout.tensor(self.task_models.relabel(context, partner)))
        metric = self.metric(anchor.mean, query.mean.roll(1, 0), query.mean)
        self.encoder_opt.zero_grad(set_to_none=True)
        sum(metric.values()).backward(retain_graph=True)
        info = self.distill(self.sample_rl(tasks), query.mean, tasks)
        self.encoder_opt.step()  # the triplet loss and the Q distillation both reach it
        return {**{k: v.detach() for k, v in metric.items()}, **info}

    def distill(
        self, batch: Transitions, z: torch.Tensor, tasks: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """One distillation step of the student on batch [T, B, ·] of `tasks` (teacher index)."""
        student = self.agent
        zb = z[:, None, :].expand(-1, batch.obs.shape[1], -1)
        x_q = torch.cat([batch.obs, zb], -1)
        x = x_q.detach()
        with torch.no_grad():
            teacher_q = self.teachers.q_values(batch.obs, batch.action, tasks)  # [2, T, B]
            teacher_action = self.teachers.perturb(batch.obs, batch.action, tasks)

        terms = step(student.vae_opt, student.vae_loss(x, batch.action))
        q = student.q_values(x_q, batch.action)
        terms |= step(
            student.q_opt, {"loss_q_distill": ((q - teacher_q) ** 2).mean(dim=(1, 2)).sum()}
        )
        action = student.perturb(x, batch.action)
        terms |= step(
            student.actor_opt, {"loss_actor_distill": ((action - teacher_action) ** 2).mean()}
        )
        return terms

    def train_step(self) -> dict[str, torch.Tensor]:
        if self.step < self.teacher_steps:
            return self.teacher_step()
        return self.student_step()

    def evaluation_steps(self) -> set[int]:
        """The student's meta-tests: every `eval_every` steps of phase 2."""
        return self.loop.evaluation_steps(start=self.teacher_steps)

    def parts(self) -> dict[str, torch.nn.Module | None]:
        """The teachers and models of phase 1, then the student's networks of phase 2."""
        return {
            "teachers": self.teachers,
            "task models": self.task_models,
            "encoder": self.encoder,
            "metric": self.metric,
            "student": self.agent,
        }

    # --- checkpoints -----------------------------------------------------------------------------
    def optimizers(self) -> list[torch.optim.Optimizer]:
        return [self.encoder_opt, *self.agent.optimizers().values()]

    def parts_state(self) -> dict[str, Any]:
        """The networks and optimisers (the keys of FOCAL's checkpoints where they agree)."""
        optimizers = {"encoder": self.encoder_opt, "task_models": self.task_models.opt}
        for prefix, learner in (("agent", self.agent), ("teachers", self.teachers)):
            optimizers |= {f"{prefix}.{k}": o for k, o in learner.optimizers().items()}
        return {
            "encoder": self.encoder.state_dict(),
            "key_encoder": None,
            "objective": None,
            "agent": self.agent.state_dict(),
            "teachers": self.teachers.state_dict(),
            "task_models": self.task_models.state_dict(),
            "optimizers": {k: o.state_dict() for k, o in optimizers.items()},
        }

    def load_weights(self, state: dict[str, Any]) -> None:
        """The networks of a checkpoint (enough to act and to be analysed)."""
        self.step = state["step"]
        for name in ("encoder", "agent", "teachers", "task_models"):
            getattr(self, name).load_state_dict(state[name])

    def load_parts_state(self, state: dict[str, Any]) -> None:
        """The networks and optimisers of a checkpoint."""
        self.load_weights(state)
        saved = state["optimizers"]
        self.encoder_opt.load_state_dict(saved["encoder"])
        self.task_models.opt.load_state_dict(saved["task_models"])
        for prefix, learner in (("agent", self.agent), ("teachers", self.teachers)):
            for name, opt in learner.optimizers().items():
                opt.load_state_dict(saved[f"{prefix}.{name}"])
