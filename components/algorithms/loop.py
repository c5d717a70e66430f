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

import math
import time
from collections.abc import Callable
from typing import Any, Protocol

import torch
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from components.algorithms.checkpointer import Checkpointer, LoopState
from components.algorithms.finite import (
    FiniteWatch,
    TrainingDiverged,
    kept,
    stop_diverged_seeds,
)
from components.algorithms.meta_tests import log_meta_tests, meta_tests, write_final
from components.algorithms.precision import (
    AUTO,
    PRECISIONS,
    PrecisionChoice,
    Trial,
    choose,
    time_step,
)
from components.algorithms.seed_records import RunRecord
from components.evaluation.meta_test import MetaTest, MetaTestResult
from components.outputs.checkpoint import (
    StopRequests,
)
from components.outputs.console import out
from components.outputs.metrics import MetricsLog
from components.outputs.run_record import add_to_run_record
from components.runtime import resolve_device
from registry import RecipeError, RunContext, register
from registry.constraints import Count, Fraction, PositiveInt
from registry.validation import check_arguments

# progress p in [0, 1] -> learning-rate factor before the floor
LR_DECAYS: dict[str | None, Callable[[float], float]] = {
    None: lambda p: 1.0,
    "linear": lambda p: 1.0 - p,
    "cosine": lambda p: 0.5 * (1.0 + math.cos(math.pi * p)),
}


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
        self.checkpointer = Checkpointer(run)
        self.step = 0
        self.choice: PrecisionChoice | None = None  # run() settles 'auto'
        # run() fills these; set here so a built algorithm can already report its state
        self._sums: dict[str, torch.Tensor] = {}
        self._seconds_before, self._started = 0.0, time.perf_counter()
        self._meta_test_seconds = 0.0  # of the run's seconds, those spent meta-testing
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
        """Time the learner's step in `precision`, then put its state back
        (`precision.time_step`)."""
        return time_step(learner, lambda: self.autocast(precision), self.step, seconds)

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

    # --- checkpoints (components/algorithms/checkpointer.py) -------------------------------
    def loop_state(self) -> LoopState:
        """The loop's own share of a checkpoint."""
        return LoopState(
            step=self.step,
            pending_metrics=self._sums,
            train_seconds=self.seconds(),
            meta_test_seconds=self._meta_test_seconds,
            precision=self.choice.to_dict() if self.choice else None,
        )

    def checkpoint_state(self, learner: Learner, record: RunRecord | None = None) -> dict[str, Any]:
        """A whole checkpoint as `save` writes it (one seed's, for `record` of K seeds)."""
        return self.checkpointer.state(learner, self.loop_state(), record)

    def restore(self, learner: Learner, state: dict[str, Any]) -> None:
        """Everything `checkpoint_state` saved, to continue training exactly."""
        self._continue_from(self.checkpointer.restore(learner, [state], self.steps))

    def _continue_from(self, state: LoopState) -> None:
        self.step, self._sums = state.step, state.pending_metrics
        self._seconds_before, self._meta_test_seconds = state.train_seconds, state.meta_test_seconds
        if state.precision:
            self.choice = PrecisionChoice(**state.precision)

    def save(self, learner: Learner) -> None:
        """A checkpoint in every run directory still training."""
        self.checkpointer.save(learner, self.loop_state())

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
        self._runs = runs = self.checkpointer.open(getattr(learner, "batched", False))
        if self.run_context.resume:
            states = self.checkpointer.load()
            self._continue_from(self.checkpointer.restore(learner, states, self.steps))
            out.print(f"resuming at step {self.step} of {self.steps}")
        if self.choice is None:
            self.settle_precision(learner)
        out.print(self.choice.describe())
        self._started = time.perf_counter()
        for run in runs:
            add_to_run_record(run.run_dir, "precision", self.choice.to_dict())
            run.log = MetricsLog(run.run_dir, resume=run.resume_log)
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
        write_final(
            learner,
            self._training(),
            results,
            steps=self.step,
            seconds=seconds,
            meta_test_seconds=self._meta_test_seconds,
            score_over=self.score_over,
        )
        return results[0], seconds

    def _training(self) -> list[RunRecord]:
        """The runs still training (all but seeds stopped early)."""
        return [run for run in self._runs if run.stopped is None]

    def _evaluate_and_save(self, learner: Learner) -> list[MetaTestResult]:
        """Every training run's meta-test, logged; then a checkpoint."""
        started, runs = time.perf_counter(), self._training()
        together = self.seeds_together and runs[0].index is not None and runs == self._runs
        results = meta_tests(learner, runs, together, self.step)
        self._meta_test_seconds += time.perf_counter() - started
        log_meta_tests(runs, results, self.step)
        self.save(learner)
        return results

    def check_finite(self) -> None:
        """Every loss summed since the last record, and every tensor of every part, is finite;
        else stop, naming where the first non-finite value appeared (`FiniteWatch`). Checked
        when logging and before a checkpoint, never per step, so the loop does not wait on the
        device. Of K seeds trained together, only those whose losses went non-finite stop."""
        losses = {k: v for k, v in self._sums.items() if k.startswith("loss_")}
        since = self.step - (self.step % self.log_every or self.log_every) + 1
        if self._runs and self._runs[0].index is not None:
            if self._watch is not None:
                self._watch.forget()  # its evidence does not tell the seeds apart
            stop_diverged_seeds(self._runs, losses, f"{since}-{self.step}")
            return
        findings = self._watch.check(losses) if self._watch else None
        if findings:
            raise TrainingDiverged(
                f"{findings.describe(f'{since}-{self.step}')}; training stopped and "
                f"{kept(self.run_context.run_dir)}. Lower the learning rates or the reward "
                "scale of the recipe, or fix the part named"
            )


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
