"""Can the actor-critic read the task out of z? Diagnostics of the task vectors of a trained run.

A decoupled encoder (DECISIONS §3: taught only by its objective) can separate tasks and still
hand the critic a vector from which the task is hard to read: on Sparse-Point-Robot FOCAL's z
told the nearest training task apart to within 2.9° while a linear read-out of the goal from z
erred by 3.9°, and the policy's angular error followed the read-out. So, at one fixed context size:

- decodability: a ridge regression from z to the task parameters (family.task_parameters: goal
  angle in degrees, target velocity in m/s, wind, walker body parameters), fitted on the
  training tasks' z and scored on the test tasks' z — mean absolute error in the task's units;
- identification: the fraction of test context draws whose z lies nearest to its own task's
  mean z (from other draws), and the parameter error of the nearest training task's mean z;
- scale-free variance: within-task variance over between-task variance (Table 2's raw number
  changes with any rescaling of z; this ratio does not), beside the raw within-task variance;
- goal holding (goal families): how far the meta-tested robot ends from the goal, and at what
  angle, over the last steps of the episode.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import torch

from components.data.sampler import TensorSampler
from components.evaluation.episodes import agent_policy, rollout
from components.evaluation.modes import eval_mode
from registry import register
from registry.constraints import PositiveFloat, PositiveInt, Range
from registry.validation import check_arguments


def decoding_error(
    z_train: np.ndarray,
    y_train: np.ndarray,
    z_test: np.ndarray,
    y_test: np.ndarray,
    *,
    alpha: float = 1e-3,
) -> float:
    """Mean absolute error of a ridge read-out z -> y fitted on (z_train, y_train), on the test
    pairs; z [N, Z], y [N, P]; in y's units, averaged over the P parameters.

    z is standardised by the training pairs (a dimension that does not vary is left unscaled),
    the intercept is not penalised: scikit-learn's StandardScaler + Ridge, solved in closed
    form (tests/components/evaluation checks the two agree; importing scikit-learn would add
    2 s to the start of every run that analyses itself)."""
    z_train, z_test = np.asarray(z_train, np.float64), np.asarray(z_test, np.float64)
    y_train, y_test = np.asarray(y_train, np.float64), np.asarray(y_test, np.float64)
    y_train = y_train.reshape(len(y_train), -1)
    mu, sd = z_train.mean(0), z_train.std(0)
    sd = np.where(sd > 10 * np.finfo(np.float64).eps * np.maximum(np.abs(mu), 1.0), sd, 1.0)
    x = (z_train - mu) / sd  # centred: the intercept is the mean of y
    y_mean = y_train.mean(0)
    w = np.linalg.solve(x.T @ x + alpha * np.eye(x.shape[1]), x.T @ (y_train - y_mean))
    predicted = ((z_test - mu) / sd) @ w + y_mean
    return float(np.abs(predicted.reshape(y_test.shape) - y_test).mean())


def identification_accuracy(z: np.ndarray) -> float:
    """z [D draws, T tasks, Z]: the first half of the draws are queries, the mean of the other
    half per task the prototypes; the fraction of queries nearest to their own prototype."""
    half = z.shape[0] // 2
    if half < 1 or z.shape[0] - half < 1:
        raise ValueError(f"identification needs at least 2 draws per task, got {z.shape[0]}")
    prototypes = z[half:].mean(0)  # [T, Z]
    distance = ((z[:half, :, None, :] - prototypes[None, None]) ** 2).sum(-1)  # [D/2, T, T]
    return float((distance.argmin(-1) == np.arange(z.shape[1])[None]).mean())


def nearest_task_error(
    z_test: np.ndarray, y_test: np.ndarray, centres: np.ndarray, y_centres: np.ndarray
) -> float:
    """Parameter error of the nearest centre: z_test [N, Z], y_test [N, P], centres [M, Z] (the
    training tasks' mean z), y_centres [M, P]; mean absolute error in y's units."""
    nearest = ((z_test[:, None, :] - centres[None]) ** 2).sum(-1).argmin(-1)
    return float(np.abs(y_centres[nearest] - y_test).mean())


@dataclass(frozen=True)
class Spread:
    """within: mean over tasks and dims of the variance over draws (Table 2's number); between:
    the variance over tasks of the per-task mean, mean over dims; ratio = within / between,
    None where the vectors do not differ between tasks (a fixed z: nothing to compare)."""

    within: float
    between: float
    ratio: float | None


def variance_ratio(z: np.ndarray) -> Spread:
    """z [D draws, T tasks, Z] -> within- and between-task variance and their ratio."""
    within = float(z.var(axis=0).mean())
    between = float(z.mean(axis=0).var(axis=0).mean())
    return Spread(within, between, within / between if between > 0 else None)


@torch.no_grad()
def encode_draws(encoder, sampler: TensorSampler, layout, *, draws: int, size: int) -> np.ndarray:
    """Task vectors of `draws` independent contexts of `size` transitions for every task of the
    sampler, one encoder call: [D, T, Z]."""
    with eval_mode(encoder):
        positions = torch.arange(sampler.n_tasks, device=sampler.device).repeat(draws)
        context = layout.tensor(sampler.sample(positions, size, sparse=layout.sparse))
        z = encoder(context).mean.float().reshape(draws, sampler.n_tasks, -1)
    return z.cpu().numpy()


def holding_errors(trained, z: np.ndarray, *, last: int) -> dict[str, float] | None:
    """Roll the policy out once per test task and context draw (z [D, T, Z]) and average the
    family's holding errors over the episode's `last` steps; None for non-goal families."""
    family = trained.family
    draws, n_tasks = z.shape[:2]
    all_tasks = family.all_tasks()
    tasks = [all_tasks[i] for i in trained.data.test_tasks] * draws
    vectors = family.task_vectors(tasks)
    if family.holding_error(np.zeros((len(tasks), family.obs_dim)), vectors) is None:
        return None
    flat = torch.as_tensor(z.reshape(draws * n_tasks, -1), device=trained.device)
    sums: dict[str, np.ndarray] = {}
    counts = np.zeros(len(tasks))

    def observe(t: int, step) -> None:
        if t >= family.horizon - last:
            alive = step.alive.astype(float)
            for name, value in family.holding_error(step.obs, vectors).items():
                sums[name] = sums.get(name, 0.0) + value * alive
            counts[:] += alive

    env = family.make_batched(tasks)
    try:
        policy = agent_policy(trained.act, flat, trained.device)
        rollout(family, env, policy, seed=trained.run_context.seed, observe=observe)
    finally:
        env.close()
    counts = np.maximum(counts, 1)
    return {name: float((value / counts).mean()) for name, value in sums.items()}


@register("analysis", "task_vectors")
class TaskVectorAnalysis:
    """Task-vector diagnostics of a trained run (module docstring), at one context size.

    Args:
        context_size: transitions per context (fixed, so runs with other training context
            batches compare; the meta-test's last episode sees 400 on the point robots).
        draws: contexts per task.
        ridge_alpha: the read-out's L2 penalty (on standardised z).
        holding_steps: the episode's last steps over which the holding error is averaged.
    """

    section = "task_vectors"  # the report section that tables it

    def __init__(
        self,
        *,
        context_size: PositiveInt = 256,
        draws: Annotated[int, Range(low=2)] = 16,
        ridge_alpha: PositiveFloat = 1e-3,
        holding_steps: PositiveInt = 5,
    ):
        check_arguments("task_vectors", TaskVectorAnalysis.__init__, locals())
        self.context_size, self.draws = context_size, draws
        self.ridge_alpha, self.holding_steps = ridge_alpha, holding_steps

    def __call__(self, trained, figures: Path) -> dict:
        family = trained.family
        all_tasks = family.all_tasks()
        train_ids, test_ids = trained.train.task_ids.tolist(), list(trained.data.test_tasks)
        test = TensorSampler(
            trained.data.test_data,
            test_ids,
            device=trained.device,
            generator=torch.Generator().manual_seed(trained.run_context.seed),
        )
        if getattr(trained, "reference", None) is not None:
            # a reference row's policy reads given vectors (z = 0, or the true task), not its
            # encoder's, which it never trains: measure the vectors it used
            z_train, z_test = (
                np.broadcast_to(z.cpu().numpy(), (self.draws, *z.shape)).copy()
                for z in (trained.reference.train, trained.reference.test)
            )
        else:
            z_train, z_test = (
                encode_draws(
                    trained.encoder, s, trained.layout, draws=self.draws, size=self.context_size
                )
                for s in (trained.train, test)
            )
        y_train = family.task_parameters([all_tasks[i] for i in train_ids])
        y_test = family.task_parameters([all_tasks[i] for i in test_ids]).values
        latent = z_train.shape[-1]

        def flat(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return z.reshape(-1, latent), np.broadcast_to(y, (z.shape[0], *y.shape)).reshape(
                -1, y.shape[-1]
            )

        spread = variance_ratio(z_train)
        record = {
            "context_size": self.context_size,
            "draws": self.draws,
            "parameters": list(y_train.names),
            "unit": y_train.unit,
            "decoding_error": decoding_error(
                *flat(z_train, y_train.values), *flat(z_test, y_test), alpha=self.ridge_alpha
            ),
            "nearest_train_task_error": nearest_task_error(
                *flat(z_test, y_test), z_train.mean(0), y_train.values
            ),
            "identification_accuracy": identification_accuracy(z_test),
            "test_tasks": len(test_ids),
            **{f"variance_{k}": v for k, v in asdict(spread).items()},
        }
        holding = holding_errors(trained, z_test, last=self.holding_steps)
        if holding is not None:
            record["holding_error"] = holding
        return record
