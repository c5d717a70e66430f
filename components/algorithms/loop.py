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

from collections.abc import Callable
from typing import Any, Protocol

import torch

from components.algorithms.checkpointer import Checkpointer, LoopState, RunClock
from components.algorithms.finite import FiniteWatch, check_losses
from components.algorithms.lr_schedule import LearningRateDecay
from components.algorithms.meta_tests import (
    check_score_over,
    log_meta_tests,
    meta_tests,
    write_final,
)
from components.algorithms.precision import PrecisionChoice, StepPrecision
from components.algorithms.seed_records import RunRecord
from components.evaluation.meta_test import MetaTest, MetaTestResult
from components.outputs.checkpoint import StopRequests
from components.outputs.console import out
from components.outputs.progress import progress_bar
from components.runtime import resolve_device
from registry import RunContext, register
from registry.constraints import Count, Fraction, PositiveInt
from registry.validation import check_arguments


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

    The module's docstring has the loop; `step` counts the gradient steps done.

    Args:
        run: the run's directory, seed, device and whether it resumes.
        steps: gradient steps.
        eval_every: steps between meta-tests (0: only at the end).
        log_every: steps between training-metric records.
        checkpoint_every: steps between checkpoints besides those at meta-tests (0: none).
        meta_test: the meta-test class (gin: `@meta_test`), built once for the run.
        lr_decay, lr_floor: None (constant learning rates), or 'cosine' / 'linear': each rate
            falls to `lr_floor` times its set value over the run (lr_schedule.py).
        precision: 'auto' (bf16 autocast where timing the run's own step shows it faster with
            the same losses, else fp32: precision.py), 'fp32', or 'bf16'.
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
        self.run_context = run
        self.device = resolve_device(run.device)
        self.scheduled = steps  # loop.steps; `steps` adds a learner's extra_steps (prepare)
        self.steps, self.eval_every, self.log_every = steps, eval_every, log_every
        self.checkpoint_every, self.show_progress = checkpoint_every, progress
        self.lr_decay = LearningRateDecay(lr_decay, lr_floor)
        self.step_precision = StepPrecision(precision, self.device)  # run() settles 'auto'
        self.compile, self.score_over, self.seeds_together = compile, score_over, seeds_together
        self.meta_test = meta_test()
        self.checkpointer = Checkpointer(run)
        self.step = 0
        self._sums: dict[str, torch.Tensor] = {}  # each metric summed since the last record
        self.clock = RunClock()
        self._watch: FiniteWatch | None = None

    def prepare(self, learner: Learner) -> None:
        """Before the first step, for every learner: the run's length (`loop.steps` plus the
        learner's `extra_steps`; a learner never changes its loop), `score_over` checked, and
        `torch.compile` of the learner's `networks_to_compile()` where `compile` asks."""
        self.steps = self.scheduled + int(getattr(learner, "extra_steps", 0))
        meta_tests = len(learner.evaluation_steps()) + 1  # and the final one
        check_score_over(self.score_over, meta_tests, self.scheduled, self.eval_every)
        if self.compile and hasattr(learner, "networks_to_compile"):
            for module in learner.networks_to_compile():
                module.compile()

    def evaluation_steps(self, start: int = 0) -> set[int]:
        """Steps after which the meta-test runs besides the last one: every `eval_every`
        steps counted from `start` (an algorithm with a phase before meta-testing sets it)."""
        every = self.eval_every
        return set(range(start + every, self.steps, every)) if every else set()

    # --- checkpoints (components/algorithms/checkpointer.py) -------------------------------
    def loop_state(self) -> LoopState:
        """The loop's own share of a checkpoint."""
        return LoopState(
            step=self.step,
            pending_metrics=self._sums,
            train_seconds=self.clock.seconds(),
            meta_test_seconds=self.clock.meta_testing,
            precision=choice.to_dict() if (choice := self.step_precision.choice) else None,
        )

    def checkpoint_state(self, learner: Learner, record: RunRecord | None = None) -> dict[str, Any]:
        """A whole checkpoint as `save` writes it (one seed's, for `record` of K seeds)."""
        return self.checkpointer.state(learner, self.loop_state(), record)

    def restore(self, learner: Learner, state: dict[str, Any]) -> None:
        """Everything `checkpoint_state` saved, to continue training exactly."""
        self._continue_from(self.checkpointer.restore(learner, [state], self.steps))

    def _continue_from(self, state: LoopState) -> None:
        self.step, self._sums = state.step, state.pending_metrics
        self.clock.resume(state.train_seconds, state.meta_test_seconds)
        if state.precision:
            self.step_precision.choice = PrecisionChoice(**state.precision)

    def save(self, learner: Learner) -> None:
        """A checkpoint in every run directory still training."""
        self.checkpointer.save(learner, self.loop_state())

    # --- the run ------------------------------------------------------------------------------
    def run(self, learner: Learner) -> tuple[MetaTestResult, float]:
        """Train to the end (from the checkpoint where the run resumes), write eval.json and
        summary.md (each seed's, of K trained together) and return the final meta-test (the
        first seed's) and the training time."""
        self.prepare(learner)
        runs = self._begin(learner)
        eval_at = learner.evaluation_steps()
        self._watch = watch = FiniteWatch.of(learner, seeds=runs[0].index is not None)
        try:
            with progress_bar(self.show_progress) as bar, StopRequests() as stop:
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
            self.checkpointer.close()
            self.meta_test.close()
        seconds, meta_testing = self.clock.seconds(), self.clock.meta_testing
        self.finished, self.final_results = self.checkpointer.training(), results  # each's last
        timing = {"steps": self.step, "seconds": seconds, "meta_test_seconds": meta_testing}
        write_final(learner, self.finished, results, **timing, score_over=self.score_over)
        return results[0], seconds

    def _begin(self, learner: Learner) -> list[RunRecord]:
        """Before the first step: each run's record, the checkpoint(s) of a run being resumed,
        the precision (settled, printed, recorded) and each run's metrics log."""
        resumed = self.checkpointer.begin(learner, getattr(learner, "batched", False), self.steps)
        if resumed is not None:
            self._continue_from(resumed)
            out.print(f"resuming at step {self.step} of {self.steps}")
        choice = self.step_precision.settle(learner, self.step)
        out.print(choice.describe())
        self.clock.start()
        self.checkpointer.open_logs(choice.to_dict())
        return self.checkpointer.runs

    def _step(self, learner: Learner, watch: FiniteWatch) -> None:
        """One gradient step at this step's learning rates and precision, its losses summed
        on the device, and every `log_every` steps (and the last) checked and logged."""
        self.lr_decay.apply(learner.optimizers(), self.step, self.steps)
        watch.begin(self.step + 1)
        with self.step_precision.autocast():
            metrics = learner.train_step()
        watch.end(metrics)
        self.step += 1
        for k, v in metrics.items():  # on the device: no sync until logging
            self._sums[k] = self._sums.get(k, 0.0) + v
        if self.step % self.log_every == 0 or self.step == self.steps:
            self.check_finite()
            n = self.step % self.log_every or self.log_every
            self.checkpointer.log_training(self.step, self._sums, n)
            self._sums = {}

    def _evaluate_and_save(self, learner: Learner) -> list[MetaTestResult]:
        """Every training run's meta-test, logged; then a checkpoint."""
        runs = self.checkpointer.training()
        every = runs == self.checkpointer.runs  # no seed stopped early
        together = self.seeds_together and self.checkpointer.seeds and every
        with self.clock.meta_test():
            results = meta_tests(learner, runs, together, self.step)
        log_meta_tests(runs, results, self.step)
        self.save(learner)
        return results

    def check_finite(self) -> None:
        """Every loss summed since the last record, and every tensor of every part, is finite;
        else stop (`finite.check_losses`). Checked when logging and before a checkpoint, never
        per step, so the loop does not wait on the device."""
        losses = {k: v for k, v in self._sums.items() if k.startswith("loss_")}
        steps = f"{self.step - (self.step % self.log_every or self.log_every) + 1}-{self.step}"
        check_losses(self._watch, self.checkpointer.runs, losses, steps, self.run_context.run_dir)
