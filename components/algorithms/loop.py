"""The training loop every algorithm composes: the schedule, learning-rate decay, precision,
meta-tests, metrics, finiteness checks, checkpoints and exact resume, polite stopping.

The experiment builds the loop from the `loop.*` bindings (the schedule: steps, meta-test cadence
and the meta-test itself, logging, checkpoints, learning-rate decay, precision, compile) and
hands it to the algorithm. The algorithm (a `Learner`) says what one step is, what a meta-test
is and what its state is; the loop does the rest, the same for every algorithm:

    while step < steps:
        learning rates for this step → learner.train_step() → step += 1
        every log_every steps: finite? (losses, and every part's tensors) → metrics.jsonl
        at each meta-test step: finite? → learner.evaluate() → metrics.jsonl → checkpoint
        every checkpoint_every steps (between meta-tests): finite? → checkpoint
    the final meta-test → checkpoint → eval.json, summary.md

Before the first step the loop settles the step's precision (`precision.choose`: 'auto' may
time a few steps of each precision from the learner's state and put it back as it was), prints
it and records it in run.json and in every checkpoint; a resumed run keeps its choice.

A checkpoint holds the learner's state (its networks and optimisers) beside the loop's: the
step, the configuration's fingerprint, every random state (Python, NumPy, torch and the
learner's own generators), the metric sums since the last record, the number of records and
the training time so far; resuming restores all of them, so a resumed run continues exactly.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import gin
import numpy as np
import torch
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from components.algorithms.finite import FiniteWatch
from components.algorithms.precision import AUTO, PRECISIONS, PrecisionChoice, Trial, choose
from components.algorithms.seed_records import (
    RunRecord,
    restore_seed_rng_state,
    run_records,
    seed_rng_state,
    stack_parts,
    unstack_parts,
    with_seed,
)
from components.evaluation.episodes import NonFiniteActions
from components.evaluation.meta_test import MetaTest, MetaTestResult
from components.reporting.checkpoint import (
    CHECKPOINT,
    StopRequests,
    config_fingerprint,
    load_checkpoint,
    remove_stale_temporaries,
    restore_rng_state,
    rng_state,
    save_checkpoint,
)
from components.reporting.console import err, out
from components.reporting.metrics import MetricsLog, read_metrics
from components.reporting.run_dir import atomic_write_text
from components.reporting.run_record import add_to_run_record
from components.runtime import resolve_device
from registry import FocalppError, RecipeError, RunContext, register
from registry.constraints import Count, Fraction, PositiveInt
from registry.validation import check_arguments

# progress p in [0, 1] -> learning-rate factor before the floor
LR_DECAYS: dict[str | None, Callable[[float], float]] = {
    None: lambda p: 1.0,
    "linear": lambda p: 1.0 - p,
    "cosine": lambda p: 0.5 * (1.0 + math.cos(math.pi * p)),
}


class TrainingDiverged(FocalppError):
    """A loss became NaN or infinite."""


class TrainingStopped(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped training at a step boundary, after a checkpoint was written."""


class Learner(Protocol):
    """What an algorithm gives the loop."""

    def train_step(self) -> dict[str, torch.Tensor]: ...
    def evaluate(self) -> MetaTestResult: ...
    def evaluation_steps(self) -> set[int]: ...
    def optimizers(self) -> list[torch.optim.Optimizer]: ...
    def generators(self) -> dict[str, torch.Generator]: ...
    def parts(self) -> dict[str, torch.nn.Module | None]: ...  # in step order (optional)
    def parts_state(self) -> dict[str, Any]: ...  # networks and optimisers
    def load_parts_state(self, state: dict[str, Any]) -> None: ...
    def summary(self, result: MetaTestResult, seconds: float) -> str: ...
    def size_key(self) -> str: ...  # the step's sizes, for the precision cache

    # optional: `extra_steps`, steps the learner runs before the schedule's `loop.steps`
    # (MBML's teachers); `networks_to_compile()`, what `loop.compile` compiles;
    # `evaluate_seeds()`, the meta-tests of K seeds trained together at once


def loss_values(metrics: dict[str, torch.Tensor]) -> dict[str, float]:
    """A step's losses as numbers, one per loss, or one per seed where K seeds train together
    (`loss_q[2]`: seed index 2), so that a precision trial holds bf16 to fp32 on every seed."""
    values = {}
    for name, value in metrics.items():
        if not name.startswith("loss_"):
            continue
        if value.numel() == 1:
            values[name] = float(value)
        else:
            values.update({f"{name}[{k}]": float(v) for k, v in enumerate(value.flatten())})
    return values


SCORED = ("test_return_mean", "dense_return_mean", "paper_return_mean", "normalised_score",
          "success_rate")  # fmt: skip


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


@register("loop", "loop")
class TrainingLoop:
    """The schedule of one run and its driver: steps, meta-tests, checkpoints, precision.

    The module's docstring has the loop; `step` counts gradient steps done. The experiment
    builds it from the `loop.*` bindings and hands it to the algorithm.

    Args:
        run: the run's directory, seed, device and whether it resumes.
        steps: gradient steps.
        eval_every: steps between meta-tests (0: only at the end).
        log_every: steps between training-metric records.
        checkpoint_every: steps between checkpoints besides those at meta-tests (0: none).
        meta_test: the meta-test class (gin: `@meta_test`), built once for the run.
        lr_decay: None (constant learning rates), or 'cosine' / 'linear': every optimiser's
            learning rate falls from its set value to `lr_floor` times it over the schedule
            (a function of the step, so resume stays exact).
        lr_floor: the final fraction of each learning rate under `lr_decay`.
        precision: 'auto' (the default: bf16 autocast where timing the run's own step shows
            it faster with the same losses, else fp32; components/algorithms/precision.py),
            'fp32', or 'bf16' (docs/PERFORMANCE.md has measurements).
        compile: `torch.compile` the networks the algorithm names (in place: checkpoint keys
            do not change).
        progress: show a progress bar.
        score_over: the meta-tests whose mean eval.json also reports (`last_meta_tests`: the
            last `score_over` of them, as the published Meta-World scores average the last
            20); 1: the final meta-test alone. More than the run makes is refused before
            training, never shortened.
        seeds_together: K seeds trained together meta-test at once (`MetaTest.for_seeds`: one
            environment of every seed's test tasks, one policy call per step); False: seed by
            seed, each exactly as its single run would (the policy's rows then go through a
            single run's kernels, not the seed-batched ones: equal to fp32 rounding).
    """

    def __init__(
        self,
        *,
        run: RunContext,
        steps: PositiveInt = 100_000,
        eval_every: Count = 10_000,
        log_every: PositiveInt = 100,
        checkpoint_every: Count = 1000,
        meta_test: Callable[..., MetaTest] = MetaTest,
        lr_decay: str | None = None,
        lr_floor: Fraction = 0.0,
        precision: str = "auto",
        compile: bool = False,
        progress: bool = True,
        score_over: PositiveInt = 1,
        seeds_together: bool = True,
    ):
        check_arguments("loop", TrainingLoop.__init__, locals())
        if lr_decay not in LR_DECAYS:
            raise RecipeError(
                f"loop.lr_decay = {lr_decay!r}: expected None or one of "
                f"{sorted(k for k in LR_DECAYS if k)}"
            )
        if precision not in (*PRECISIONS, AUTO):
            raise RecipeError(
                f"loop.precision = {precision!r}: expected one of {sorted([*PRECISIONS, AUTO])}"
            )
        self.run_context = run
        self.device = resolve_device(run.device)
        self.scheduled = steps  # loop.steps; `steps` adds a learner's extra_steps (prepare)
        self.steps, self.eval_every, self.log_every = steps, eval_every, log_every
        self.checkpoint_every, self.show_progress = checkpoint_every, progress
        self.lr_decay, self.lr_floor, self.precision = lr_decay, lr_floor, precision
        self.compile, self.score_over, self.seeds_together = compile, score_over, seeds_together
        self.meta_test = meta_test()
        self.step = 0
        self.choice: PrecisionChoice | None = None  # run() settles 'auto'
        # run() fills these; set here so a built algorithm can already report its state
        self._fingerprint: str | None = None
        self._sums: dict[str, torch.Tensor] = {}
        self._seconds_before, self._started = 0.0, time.perf_counter()
        self._meta_test_seconds = 0.0  # of the run's seconds, those spent meta-testing
        self._log: MetricsLog | None = None
        self._resume_log: tuple[int, int] | None = None
        self._watch: FiniteWatch | None = None
        self._runs: list[RunRecord] = []

    def prepare(self, learner: Learner) -> None:
        """What the loop does for every learner before its first step, so that no algorithm
        has to: the run's length (`loop.steps` plus the learner's `extra_steps`: a learner
        never changes the loop it is handed) and `torch.compile` of the networks the learner
        names (`networks_to_compile()`), where `compile` asks. Each optimiser group's base
        learning rate is recorded where the loop first sets a rate (`set_learning_rates`; a
        resumed checkpoint brings its own)."""
        self.steps = self.scheduled + int(getattr(learner, "extra_steps", 0))
        meta_tests = len(learner.evaluation_steps()) + 1  # and the final one
        if self.score_over > meta_tests:
            raise RecipeError(
                f"loop.score_over = {self.score_over}: this run makes {meta_tests} meta-tests "
                f"(loop.steps = {self.scheduled}, loop.eval_every = {self.eval_every}); "
                "lower it, or meta-test more often"
            )
        if self.compile and hasattr(learner, "networks_to_compile"):
            for module in learner.networks_to_compile():
                module.compile()

    def evaluation_steps(self, start: int = 0) -> set[int]:
        """Steps after which the meta-test runs besides the last one: every `eval_every`
        steps counted from `start` (an algorithm with a phase before meta-testing sets it)."""
        if not self.eval_every:
            return set()
        return set(range(start + self.eval_every, self.steps, self.eval_every))

    # --- one step ---------------------------------------------------------------------------
    def autocast(self, precision: str | None = None):
        """The training step's numeric precision (a no-op context for fp32): `precision`, else
        the run's choice, else the requested one ('auto' not settled yet: fp32)."""
        if precision is None:
            precision = self.choice.precision if self.choice else self.precision
        dtype = PRECISIONS.get(precision)
        return torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None)

    def settle_precision(self, learner: Learner) -> PrecisionChoice:
        """The run's precision: as asked, or for 'auto' chosen by `precision.choose`."""
        self.choice = choose(
            self.precision, self.device, learner.size_key(), lambda p: self.trial(learner, p)
        )
        return self.choice

    def trial(self, learner: Learner, precision: str, seconds: float = 0.5) -> Trial:
        """Time the learner's step in `precision` (one warm-up step, whose losses are kept, then
        at least two steps and about `seconds`), then put back its networks, optimisers and
        random states: the run goes on as if nothing had happened."""
        saved = {"step": self.step, **copy.deepcopy(learner.parts_state())}
        rng = rng_state(learner.generators())
        try:
            with self.autocast(precision):
                first = learner.train_step()
            losses = loss_values(first)
            steps, start = 0, time.perf_counter()
            while steps < 2 or time.perf_counter() - start < seconds:
                with self.autocast(precision):
                    last = learner.train_step()
                steps += 1
            float(next(iter(last.values()), torch.zeros(())).sum())  # wait for the device
            ms = (time.perf_counter() - start) / steps * 1e3
        finally:
            learner.load_parts_state(saved)
            restore_rng_state(rng, learner.generators())
        return Trial(ms, losses)

    def set_learning_rates(self, optimizers: list[torch.optim.Optimizer]) -> None:
        """Every optimiser's learning rate for the coming step under `lr_decay`."""
        if self.lr_decay is None:
            return
        decay = LR_DECAYS[self.lr_decay](self.step / self.steps)
        factor = self.lr_floor + (1.0 - self.lr_floor) * decay
        for opt in optimizers:
            for group in opt.param_groups:
                group.setdefault("base_lr", group["lr"])  # before the first step: its set rate
                group["lr"] = group["base_lr"] * factor

    # --- checkpoints --------------------------------------------------------------------------
    def checkpoint_state(self, learner: Learner, record: RunRecord | None = None) -> dict[str, Any]:
        """The learner's state and the loop's: everything the rest of the run depends on; for
        one of K seeds trained together (`record`), that seed's, in a single run's format."""
        parts, rng = learner.parts_state(), rng_state(learner.generators())
        sums, fingerprint = dict(self._sums), self._fingerprint
        count = self._log.count if self._log else 0
        if record is not None and record.index is not None:
            k = record.index
            parts = unstack_parts(parts, k)
            rng = seed_rng_state(rng, learner, k)
            sums = {name: record.value(v) for name, v in sums.items()}
            fingerprint, count = record.fingerprint, record.log.count if record.log else 0
        return {
            "step": self.step,
            "config_fingerprint": fingerprint,
            **parts,
            "rng": rng,
            "pending_metrics": sums,
            "metrics_records": count,
            "train_seconds": self.seconds(),
            "meta_test_seconds": self._meta_test_seconds,
            "precision": self.choice.to_dict() if self.choice else None,
        }

    def restore(self, learner: Learner, state: dict[str, Any]) -> None:
        """Everything `checkpoint_state` saved, to continue training exactly."""
        learner.load_parts_state(state)
        self.step = state["step"]
        restore_rng_state(state["rng"], learner.generators())
        self._sums = dict(state["pending_metrics"])
        self._seconds_before = state["train_seconds"]
        self._meta_test_seconds = state.get("meta_test_seconds", 0.0)  # older checkpoints: none
        if state.get("precision"):  # none in checkpoints from before 'auto': as requested
            self.choice = PrecisionChoice(**state["precision"])
        self._resume_log = (self._records_seen(state), self.step)

    def restore_seeds(self, learner: Learner, states: list[dict[str, Any]]) -> None:
        """K seeds' checkpoints (each a single run's), stacked back into the batched learner."""
        steps = {s["step"] for s in states}
        if len(steps) != 1:
            where = ", ".join(
                f"seed {r.seed}: {state['step']}"
                for r, state in zip(self._runs, states, strict=True)
            )
            raise FocalppError(
                f"the seeds' checkpoints are at different steps ({where}); resume each seed as "
                "a single run (tools/run.py --resume RUN_DIR)"
            )
        learner.load_parts_state(stack_parts(states))
        self.step = states[0]["step"]
        restore_rng_state(states[0]["rng"], {})
        for k, state in enumerate(states):
            restore_seed_rng_state(state["rng"], learner, k)
        names = states[0]["pending_metrics"].keys()
        self._sums = {n: torch.stack([torch.as_tensor(s["pending_metrics"][n]) for s in states])
                      for n in names}  # fmt: skip
        self._seconds_before = max(s["train_seconds"] for s in states)
        self._meta_test_seconds = max(s.get("meta_test_seconds", 0.0) for s in states)
        if states[0].get("precision"):
            self.choice = PrecisionChoice(**states[0]["precision"])
        for run, state in zip(self._runs, states, strict=True):
            run.resume_log = (self._records_seen(state), self.step)

    def _records_seen(self, state: dict[str, Any]) -> int:
        records = state["metrics_records"]
        if state["step"] == self.steps:  # stopped after the final meta-test: it is run again
            records -= 1
        return records

    def save(self, learner: Learner) -> None:
        """A checkpoint in every run directory still training."""
        if not self._runs or self._runs[0].index is None:
            save_checkpoint(self.checkpoint_state(learner), self.run_context.run_dir)
            return
        for run in self._runs:
            if run.stopped is None:
                save_checkpoint(self.checkpoint_state(learner, run), run.run_dir)

    def seconds(self) -> float:
        return self._seconds_before + time.perf_counter() - self._started

    # --- the run ------------------------------------------------------------------------------
    def run(self, learner: Learner) -> tuple[MetaTestResult, float]:
        """Train to the end (continuing from the checkpoint when the run resumes); write
        eval.json and summary.md; return the final meta-test and the training time. K seeds
        trained together (components/seeds) write each of these in each seed's run directory
        and return the first seed's meta-test."""
        self.prepare(learner)
        runs = self._begin(learner)
        eval_at = learner.evaluation_steps()
        # an algorithm of one's own written before `parts` existed: its losses are still checked
        parts = learner.parts() if hasattr(learner, "parts") else {}
        # seeds trained together are checked seed by seed, from their losses (_stop_seeds)
        self._watch = watch = FiniteWatch({} if runs[0].index is not None else parts)
        try:
            with _progress(self.show_progress) as bar, StopRequests() as stop:
                task = bar.add_task("training", total=self.steps, completed=self.step)
                while self.step < self.steps:
                    if stop.requested:
                        self.save(learner)
                        raise TrainingStopped(
                            f"{stop.requested} at step {self.step}: checkpoint written; continue "
                            f"with: python tools/run.py --resume {self.run_context.run_dir}"
                        )
                    self._step(learner, watch)
                    if self.step in eval_at:
                        self.check_finite()
                        results = self._evaluate_and_save(learner)
                        bar.update(task, description=f"training · {results[0].describe()}")
                    elif (
                        self.checkpoint_every
                        and self.step % self.checkpoint_every == 0
                        and self.step < self.steps  # the last checkpoint follows the final test
                    ):
                        self.check_finite()
                        self.save(learner)
                    bar.update(task, completed=self.step)
            self.meta_test.final = True  # the test-context protocols score this one
            results = self._evaluate_and_save(learner)
        finally:
            watch.close()
            for run in runs:
                if run.log is not None:
                    run.log.close()
            self.meta_test.close()
        return self._finish(learner, results)

    def _begin(self, learner: Learner) -> list[RunRecord]:
        """Before the first step: each run's record and fingerprint, the checkpoint(s) of a
        run being resumed, the precision (settled, printed, recorded) and each run's metrics
        log."""
        self._runs = runs = run_records(self.run_context, getattr(learner, "batched", False))
        self._fingerprint = config_fingerprint()
        for run in runs:
            run.fingerprint = (
                self._fingerprint
                if run.index is None
                else config_fingerprint(with_seed(gin.config_str(), run.seed))
            )
        if self.run_context.resume:
            for run in runs:
                remove_stale_temporaries(run.run_dir)
            states = [load_checkpoint(r.run_dir, fingerprint=r.fingerprint) for r in runs]
            if runs[0].index is None:
                self.restore(learner, states[0])
            else:
                self.restore_seeds(learner, states)
            out.print(f"resuming at step {self.step} of {self.steps}")
        if self.choice is None:
            self.settle_precision(learner)
        out.print(self.choice.describe())
        self._started = time.perf_counter()
        for run in runs:
            add_to_run_record(run.run_dir, "precision", self.choice.to_dict())
            resume = self._resume_log if run.index is None else run.resume_log
            run.log = MetricsLog(run.run_dir, resume=resume)
        self._log = runs[0].log
        return runs

    def _step(self, learner: Learner, watch: FiniteWatch) -> None:
        """One gradient step at this step's learning rates and precision, its losses summed
        on the device, and every `log_every` steps (and the last) checked and logged."""
        self.set_learning_rates(learner.optimizers())
        watch.begin(self.step + 1)
        with self.autocast():
            metrics = learner.train_step()
        watch.end(metrics)
        self.step += 1
        for k, v in metrics.items():  # on the device: no sync until logging
            self._sums[k] = self._sums.get(k, 0.0) + v
        if self.step % self.log_every == 0 or self.step == self.steps:
            self.check_finite()
            n = self.step % self.log_every or self.log_every
            for run in self._training():
                means = {k: float(run.value(v)) / n for k, v in self._sums.items()}
                run.log.write(self.step, "train", means)
            self._sums = {}

    def _finish(
        self, learner: Learner, results: list[MetaTestResult]
    ) -> tuple[MetaTestResult, float]:
        """Each training run's eval.json and summary.md from its final meta-test."""
        seconds = self.seconds()
        self.finished, self.final_results = self._training(), results  # each run's last test
        for run, result in zip(self._training(), results, strict=True):
            record = {
                **result.to_dict(),
                "steps": self.step,
                "train_seconds": round(seconds, 1),  # wall time, meta-tests included
                "meta_test_seconds": round(self._meta_test_seconds, 3),
            }
            if self.score_over > 1:
                record["last_meta_tests"] = last_meta_tests(run.run_dir, self.score_over)
            atomic_write_text(run.run_dir / "eval.json", json.dumps(record, indent=1))
            summary = learner.summary(result, seconds, *([] if run.index is None else [run.index]))
            atomic_write_text(run.run_dir / "summary.md", summary)
        return results[0], seconds

    def _training(self) -> list[RunRecord]:
        """The runs still training (all but seeds stopped early)."""
        return [run for run in self._runs if run.stopped is None]

    def _evaluate_and_save(self, learner: Learner) -> list[MetaTestResult]:
        """Every training run's meta-test, logged; then a checkpoint."""
        started = time.perf_counter()
        results = self._meta_tests(learner)
        self._meta_test_seconds += time.perf_counter() - started
        for run, result in zip(self._training(), results, strict=True):
            record = result.to_dict()
            run.log.write(
                self.step, "eval", {k: v for k, v in record.items() if not isinstance(v, dict)}
            )
        self.save(learner)
        return results

    def _meta_tests(self, learner: Learner) -> list[MetaTestResult]:
        """Each training run's meta-test: K seeds trained together at once where the learner
        can (`evaluate_seeds`) and none has stopped, else run by run."""
        runs = self._training()
        together = runs[0].index is not None and len(runs) == len(self._runs)
        if together and self.seeds_together and hasattr(learner, "evaluate_seeds"):
            try:
                return learner.evaluate_seeds()
            except NonFiniteActions:
                pass  # seed by seed below, to name the seed whose actions were not finite
        results = []
        for run in runs:
            try:
                result = (
                    learner.evaluate()
                    if run.index is None
                    else learner.evaluate(seed_index=run.index)
                )
            except NonFiniteActions as e:
                raise TrainingDiverged(
                    f"in the meta-test at step {self.step}, {e}; training stopped and "
                    f"{self._kept(run)}. Look at the encoder's task vectors on test contexts"
                ) from e
            results.append(result)
        return results

    def check_finite(self) -> None:
        """Every loss summed since the last record, and every tensor of every part, is finite;
        else stop, naming where the first non-finite value appeared (`FiniteWatch`). Checked
        when logging and before a checkpoint, never per step, so the loop does not wait on the
        device. Of K seeds trained together, only those whose losses went non-finite stop
        (each seed's numbers depend on its own alone); training goes on while one remains."""
        losses = {k: v for k, v in self._sums.items() if k.startswith("loss_")}
        since = self.step - (self.step % self.log_every or self.log_every) + 1
        if self._runs and self._runs[0].index is not None:
            self._stop_seeds(losses, since)
            return
        findings = self._watch.check(losses) if self._watch else None
        if not findings:
            return
        raise TrainingDiverged(
            f"{findings.describe(f'{since}-{self.step}')}; training stopped and "
            f"{self._kept()}. Lower the learning rates or the reward scale of the recipe, or "
            "fix the part named"
        )

    def _stop_seeds(self, losses: dict[str, torch.Tensor], since: int) -> None:
        """Seeds trained together: stop each seed whose summed losses are not finite."""
        if self._watch is not None:
            self._watch.forget()  # its evidence does not tell the seeds apart
        for run in self._training():
            bad = {k: float(run.value(v)) for k, v in losses.items()}
            bad = {k: v for k, v in bad.items() if not math.isfinite(v)}
            if bad:
                what = ", ".join(f"{k} became {v}" for k, v in bad.items())
                run.stopped = f"{what} in steps {since}-{self.step}"
                err.print(
                    f"[yellow]seed {run.seed} stopped:[/] {escape(run.stopped)}; "
                    f"{escape(self._kept(run))}; the other seeds go on"
                )
        if not self._training():
            every = "; ".join(f"seed {r.seed}: {r.stopped}" for r in self._runs)
            raise TrainingDiverged(
                f"every seed's losses went non-finite ({every}); lower the learning rates or the "
                "reward scale of the recipe"
            )

    def _kept(self, run: RunRecord | None = None) -> str:
        """What a stopped run leaves to go back to."""
        checkpoint = (run.run_dir if run is not None else self.run_context.run_dir) / CHECKPOINT
        if checkpoint.exists():
            return f"the last good checkpoint is {checkpoint}"
        return "no checkpoint had been written yet"


def _progress(enabled: bool) -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=out,
        transient=True,
        disable=not enabled,
    )
