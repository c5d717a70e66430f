"""MBML (Li, Yang et al., "Multi-task Batch Reinforcement Learning with Metric Learning",
NeurIPS 2020), on the FOCAL trainer's data, loop, meta-test and checkpoints.

Two phases in one run of `teacher_steps + focal.steps` steps:
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

`mbml` extends `focal`: every `focal.*` setting (data, schedule, batch sizes, encoder) applies;
`mbml.*` adds the teacher phase.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from components.algorithms.focal import FocalTrainer
from components.contracts import check_parts
from components.objectives.triplet import Triplet
from components.rl.bcq import BCQ
from components.rl.steps import step
from components.rl.task_models import TaskModels
from components.transitions import Transitions
from registry import RecipeError, RunContext, register
from registry.constraints import Count
from registry.validation import check_arguments


@register("algorithm", "mbml")
class MBMLTrainer(FocalTrainer):
    """Per-task BCQ teachers and models, then a triplet-trained encoder and a distilled student.

    Args:
        run: the run's environment column, scale, seed, directory and device.
        teacher_steps: gradient steps of phase 1 (before the `focal.steps` of phase 2).
        teacher: the per-task learner class (gin: `@bcq`; built with `models = K`, no z).
        student: the task-conditioned learner class (gin: `@bcq`; built over (s, z)).
        models: the per-task reward / transition models class (gin: `@task_models`).
        metric: the encoder's metric loss (gin: `@triplet`).
    """

    def __init__(
        self,
        *,
        run: RunContext,
        teacher_steps: Count = 10_000,
        teacher: Callable[..., BCQ] = BCQ,
        student: Callable[..., BCQ] = BCQ,
        models: Callable[..., TaskModels] = TaskModels,
        metric: Callable[..., torch.nn.Module] = Triplet,
    ):
        check_arguments("mbml", MBMLTrainer.__init__, locals())
        super().__init__(
            run=run,
            agent=student,
            objective=None,
            key_momentum=None,
            detach_z=False,
            # MBML draws its own meta-batch below: distinct tasks (each needs a partner other
            # than itself), at most every training task (Fwd-Back families have two)
            tasks_with_replacement=True,
        )
        if self.train.n_tasks < 2:
            raise RecipeError(
                f"mbml needs at least two training tasks to relabel one as another; "
                f"{run.env} has {self.train.n_tasks}"
            )
        self.teacher_steps = teacher_steps
        self.loop.steps += teacher_steps
        k, dims = self.train.n_tasks, (self.family.obs_dim, self.family.act_dim)
        self.teachers = teacher(obs_dim=dims[0], act_dim=dims[1], latent_dim=0, models=k)
        self.task_models = models(
            n_tasks=k,
            obs_dim=dims[0],
            act_dim=dims[1],
            dynamics=self.family.task_changes == "dynamics",
        )
        self.teachers.to(self.device)
        self.task_models.to(self.device)
        check_parts((metric, "metric_loss", {}))
        self.metric = metric().to(self.device)
        self._every_task = torch.arange(k, device=self.device)

    # --- phase 1 -------------------------------------------------------------------------------
    def teacher_step(self) -> dict[str, torch.Tensor]:
        """Each teacher and model on its own task's batch [K, B, ·]."""
        batch = self.train.sample(self._every_task, self.rl_batch)
        no_z = batch.obs.new_zeros(len(self._every_task), 0)
        info = {f"{k}_teacher": v for k, v in self.teachers.update(batch, no_z).items()}
        # the models predict the reward the context shows (sparse on sparse families)
        shown = batch.with_reward(batch.sparse_reward) if self.layout.sparse else batch
        info.update(self.task_models.update(shown))
        return info

    # --- phase 2 -------------------------------------------------------------------------------
    def student_step(self) -> dict[str, torch.Tensor]:
        tasks = self.train.sample_tasks(min(self.meta_batch, self.train.n_tasks), replace=False)
        partner = tasks.roll(1)  # row i's partner is row i − 1's task; its z is z.roll(1)
        context = self.train.sample(
            tasks, self.context_batch, replace=self.context_replace, sparse=self.layout.sparse
        )
        query = self.encoder(self.layout.tensor(context))
        anchor = self.encoder(self.layout.tensor(self.task_models.relabel(context, partner)))
        metric = self.metric(anchor.mean, query.mean.roll(1, 0), query.mean)
        self.encoder_opt.zero_grad(set_to_none=True)
        sum(metric.values()).backward(retain_graph=True)
        info = self.distill(self.train.sample(tasks, self.rl_batch), query.mean, tasks)
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
        every = self.loop.eval_every
        if not every:
            return set()
        return set(range(self.teacher_steps + every, self.steps, every))

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
    def parts_state(self) -> dict[str, Any]:
        state = super().parts_state()
        state["teachers"] = self.teachers.state_dict()
        state["task_models"] = self.task_models.state_dict()
        state["optimizers"].update(
            {f"teachers.{k}": o.state_dict() for k, o in self.teachers.optimizers().items()}
        )
        state["optimizers"]["task_models"] = self.task_models.opt.state_dict()
        return state

    def load_weights(self, state: dict[str, Any]) -> None:
        super().load_weights(state)
        self.teachers.load_state_dict(state["teachers"])
        self.task_models.load_state_dict(state["task_models"])

    def load_parts_state(self, state: dict[str, Any]) -> None:
        super().load_parts_state(state)
        for name, opt in self.teachers.optimizers().items():
            opt.load_state_dict(state["optimizers"][f"teachers.{name}"])
        self.task_models.opt.load_state_dict(state["optimizers"]["task_models"])
