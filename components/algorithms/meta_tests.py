"""A loop's meta-tests and what a finished run writes from them: each training run's meta-test
(K seeds trained together at once where the learner can), and at the end eval.json and
summary.md in each run's directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from components.algorithms.finite import TrainingDiverged, kept
from components.algorithms.seed_records import RunRecord
from components.evaluation.episodes import NonFiniteActions
from components.evaluation.meta_test import MetaTestResult
from components.outputs.metrics import read_metrics
from components.outputs.run_dir import atomic_write_text
from registry import FocalppError, RecipeError

SCORED = ("test_return_mean", "dense_return_mean", "paper_return_mean", "normalised_score",
          "success_rate")  # fmt: skip


def meta_tests(learner, runs: list[RunRecord], together: bool, step: int) -> list[MetaTestResult]:
    """Each training run's meta-test (`runs`: those still training): K seeds trained together
    at once where `together` and the learner can (`evaluate_seeds`), else run by run."""
    if together and hasattr(learner, "evaluate_seeds"):
        try:
            return learner.evaluate_seeds()
        except NonFiniteActions:
            pass  # seed by seed below, to name the seed whose actions were not finite
    results = []
    for run in runs:
        try:
            result = (
                learner.evaluate() if run.index is None else learner.evaluate(seed_index=run.index)
            )
        except NonFiniteActions as e:
            raise TrainingDiverged(
                f"in the meta-test at step {step}, {e}; training stopped and "
                f"{kept(run.run_dir)}. Look at the encoder's task vectors on test contexts"
            ) from e
        results.append(result)
    return results


def log_meta_tests(runs: list[RunRecord], results: list[MetaTestResult], step: int) -> None:
    """Each run's meta-test as an `eval` record of its metrics log (its numbers; the per-task
    and per-protocol tables go to eval.json at the end)."""
    for run, result in zip(runs, results, strict=True):
        record = result.to_dict()
        run.log.write(step, "eval", {k: v for k, v in record.items() if not isinstance(v, dict)})


def check_score_over(score_over: int, meta_tests: int, steps: int, eval_every: int) -> None:
    """`loop.score_over` asks for no more meta-tests than the run makes (the final one too);
    refused before training, never shortened."""
    if score_over > meta_tests:
        raise RecipeError(
            f"loop.score_over = {score_over}: this run makes {meta_tests} meta-tests "
            f"(loop.steps = {steps}, loop.eval_every = {eval_every}); lower it, or meta-test "
            "more often"
        )


def write_final(
    learner,
    runs: list[RunRecord],
    results: list[MetaTestResult],
    *,
    steps: int,
    seconds: float,
    meta_test_seconds: float,
    score_over: int,
) -> None:
    """Each training run's eval.json and summary.md from its final meta-test."""
    for run, result in zip(runs, results, strict=True):
        record = {
            **result.to_dict(),
            "steps": steps,
            "train_seconds": round(seconds, 1),  # wall time, meta-tests included
            "meta_test_seconds": round(meta_test_seconds, 3),
        }
        if score_over > 1:
            record["last_meta_tests"] = last_meta_tests(run.run_dir, score_over)
        atomic_write_text(run.run_dir / "eval.json", json.dumps(record, indent=1))
        summary = learner.summary(result, seconds, *([] if run.index is None else [run.index]))
        atomic_write_text(run.run_dir / "summary.md", summary)


def last_meta_tests(run_dir: Path, count: int) -> dict[str, Any]:
    """The mean of each score over the run's last `count` meta-tests (its metrics log, which a
    resumed run has kept whole), with the steps they were made at."""
    evals = [r for r in read_metrics(run_dir) if r.get("kind") == "eval"][-count:]
    if len(evals) < count:
        raise FocalppError(
            f"{run_dir}: loop.score_over = {count}, but its log holds {len(evals)} meta-tests"
        )
    means = {k: float(np.mean([r[k] for r in evals])) for k in SCORED if k in evals[-1]}
    return {"count": count, "steps": [r["step"] for r in evals], **means}
