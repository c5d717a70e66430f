"""CORRO's contrastive objective (Yuan & Lu, ICML 2022): InfoNCE over single transitions whose
negatives share the anchor's (s, a) and differ only in the outcome.

A task shows itself in what follows (s, a) — the reward and the next state — not in which
(s, a) the behaviour policy chose. CORRO contrasts each transition x = (s, a, r, s′) of task i
(anchor q = f(x)) against another transition of the same task (positive k = f(x̃), a different
(s, a)) and against N transitions with the anchor's own (s, a) and a generated outcome
(negatives k⁻_n = f(s, a, r̃_n, s̃′_n)), all L2-normalised:

  L = −E log e^{q·k/τ} / (e^{q·k/τ} + Σ_n e^{q·k⁻_n/τ})

so that nothing about (s, a) helps to tell the positive from the negatives. Negatives come
from one of three generators (`outcome`), with the global torch generator, which checkpoints
keep: perturbing the outcome, r̃ = r + N(0, σ_r²) (CORRO's `reward_randomize`) and
s̃′ = s′ + N(0, σ_s²); relabeling it as another training task's — the reward that task gives
(s, a, s′), and the next state its dynamics give where the family has them in closed form (the
point robots, the cheetahs' and the ant's rewards); or drawing it from a learned model of
(s′, r) given (s, a) pooled over tasks (CORRO's default generator, a CVAE:
components/objectives/outcome_model.py), which needs no closed form (Walker's bodies).

Against CORRO's code: its CVAE is pre-trained (100 epochs) before the encoder, and the encoder
pre-trained with this loss and then frozen; here the CVAE, the encoder and the critic learn
side by side from the first step (the CVAE by its own loss term, on the context batch; the
critic sees z detached — the encoder never learns from the critic in either), so the first
negatives are a young model's. The positive is the next transition of the same context batch
(the batch is drawn at random, so it is a random one).
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

from components.objectives.embeddings import TaskEmbeddings
from components.objectives.outcome_model import OutcomeCVAE
from registry import RecipeError, register
from registry.constraints import NonNegativeFloat, PositiveFloat, PositiveInt, Widths
from registry.validation import check_arguments


@register("objective", "corro")
class CORROInfoNCE(nn.Module):
    """Per-anchor InfoNCE with generated negatives that share the anchor's (s, a).

    Args:
        negatives: N, generated outcomes per anchor (CORRO: 16).
        outcome: how a negative's outcome is made: 'noise' (r + N(0, σ_r²) and
            s′ + N(0, σ_s²), CORRO's `reward_randomize`) or 'relabel' (the outcome of the
            anchor's (s, a) under the task of another row of the meta-batch: its reward, and
            its next state where the family's dynamics have a closed form — CORRO's
            relabeling; noise is told apart by itself wherever real outcomes are exact, a
            sparse reward or a deterministic step, a relabeled outcome is not), or 'model'
            (a draw from a CVAE of (s′, r) given (s, a), fitted beside the encoder on the
            context batches of all tasks pooled: CORRO's default, for dynamics without a
            closed form).
        temperature: τ (CORRO: 0.1).
        reward_noise: σ_r of the 'noise' rewards (CORRO: 0.5).
        next_obs_noise: σ_s of the 'noise' next states (0: rewards only; CORRO's CVAE
            generates both).
        obs_dim, act_dim: sizes (set by the algorithm; the 'model' generator's networks).
        model_noise_dim, model_hidden, model_kl_weight: the CVAE's noise dimensions, hidden
            widths and KL weight β (CORRO's walker: 64, (128,), 0.2).
    """

    def __init__(
        self,
        *,
        negatives: PositiveInt = 16,
        outcome: str = "noise",
        temperature: PositiveFloat = 0.1,
        reward_noise: NonNegativeFloat = 0.5,
        next_obs_noise: NonNegativeFloat = 0.1,
        obs_dim: PositiveInt | None = None,
        act_dim: PositiveInt | None = None,
        model_noise_dim: PositiveInt = 64,
        model_hidden: Widths = (128,),
        model_kl_weight: NonNegativeFloat = 0.2,
    ):
        super().__init__()
        check_arguments("corro", type(self).__init__, locals())
        if outcome not in ("noise", "relabel", "model"):
            raise RecipeError(
                f"corro.outcome must be 'noise', 'relabel' or 'model', got {outcome!r}"
            )
        self.model = None
        if outcome == "model":
            if obs_dim is None or act_dim is None:
                raise RecipeError(
                    "corro.outcome = 'model' needs obs_dim and act_dim (its trainer sets them "
                    "for objectives that name them)"
                )
            self.model = OutcomeCVAE(
                obs_dim,
                act_dim,
                noise_dim=model_noise_dim,
                hidden=tuple(model_hidden),
                kl_weight=model_kl_weight,
            )
        if outcome == "noise" and reward_noise == 0 and next_obs_noise == 0:
            raise RecipeError(
                "corro.reward_noise and corro.next_obs_noise are both 0: the negatives would "
                "equal their anchors; give one of them a positive scale"
            )
        self.negatives, self.outcome, self.temperature = negatives, outcome, temperature
        self.reward_noise, self.next_obs_noise = reward_noise, next_obs_noise

    def generate(self, context, task: torch.Tensor | None = None, relabel=None):
        """N outcomes per transition, [T, B, ·] -> [T, B·N, ·], (s, a) repeated; with
        'relabel', `task` [T] and `relabel` (TaskEmbeddings') make each negative the outcome
        of the same (s, a) under another meta-batch row's task (no noise added: the outcome
        is one that task would have produced)."""
        n = self.negatives
        repeated = context.map(lambda x: x.repeat_interleave(n, dim=1))
        if self.model is not None:
            return self.model.sample(repeated)
        if self.outcome == "relabel":
            rows = len(task)
            offset = torch.randint(1, max(rows, 2), repeated.reward.shape, device=task.device)
            other = (torch.arange(rows, device=task.device)[:, None] + offset) % rows
            return relabel(repeated, task[other])
        next_obs = repeated.next_obs + self.next_obs_noise * torch.randn_like(repeated.next_obs)
        reward = repeated.reward + self.reward_noise * torch.randn_like(repeated.reward)
        return dataclasses.replace(repeated, next_obs=next_obs, reward=reward)

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        if emb.context is None or emb.encode is None:
            raise RecipeError(
                "objective corro needs the context transitions and the encoder of other "
                "transitions (TaskEmbeddings.context, .encode); its trainer passes none"
            )
        if self.outcome == "relabel" and emb.relabel is None:
            raise RecipeError(
                "corro.outcome = 'relabel' needs TaskEmbeddings.relabel (another task's reward "
                "of a transition); its trainer passes none: use corro.outcome = 'noise'"
            )
        t, b, _ = emb.query.shape
        q = F.normalize(emb.query, dim=-1)  # [T, B, Z]
        k = q.roll(1, dims=1)  # another transition of the same task
        with torch.no_grad():
            generated = self.generate(emb.context, emb.task, emb.relabel)
        negatives = F.normalize(emb.encode(generated), dim=-1).reshape(t, b, self.negatives, -1)
        # a negative whose outcome equals its anchor's (relabeled under a task that agrees
        # there, e.g. a sparse reward of 0 under both) teaches nothing: logged, not dropped
        same = (generated.reward == emb.context.reward.repeat_interleave(self.negatives, 1)) & (
            generated.next_obs == emb.context.next_obs.repeat_interleave(self.negatives, 1)
        ).all(-1)
        positive = (q * k).sum(-1, keepdim=True)  # [T, B, 1]
        negative = torch.einsum("tbz,tbnz->tbn", q, negatives)  # [T, B, N]
        logits = torch.cat([positive, negative], -1) / self.temperature
        log_prob = torch.log_softmax(logits, -1)[..., 0]
        terms = {
            "loss_contrastive": -log_prob.mean(),
            "corro_positive_rank": (logits.argmax(-1) == 0).float().mean().detach(),
            "corro_negatives_as_anchor": same.float().mean(),
        }
        if self.model is not None:  # the generator learns on the context, tasks pooled
            terms.update(self.model.loss(emb.context))
        return terms
