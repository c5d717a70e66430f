"""Checkpoints of a loop's run: what one holds, writing it, and taking a run back to it — for a
single run and for K seeds trained together (each seed's checkpoint a single run's, in its own
directory: components/algorithms/seed_records.py).

A checkpoint holds the learner's state (its networks and optimisers) beside the loop's
(`LoopState`: the step, the metric sums since the last record, the training time so far, the
precision) and what resuming needs besides: the configuration's fingerprint, every random state
(Python, NumPy, torch and the learner's own generators) and the number of metrics records the
log held. Restoring all of them makes a resumed run continue exactly.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gin
import torch
from rich.markup import escape

from components.algorithms.seed_records import (
    RunRecord,
    restore_seed_rng_state,
    run_records,
    seed_rng_state,
    stack_parts,
    unstack_parts,
    with_seed,
)
from components.outputs.checkpoint import (
    PREVIOUS,
    CheckpointError,
    check_fingerprint,
    config_fingerprint,
    load_checkpoint,
    read_checkpoint,
    remove_stale_temporaries,
    restore_rng_state,
    rng_state,
    save_checkpoint,
)
from components.outputs.console import err
from components.outputs.metrics import MetricsLog
from components.outputs.run_record import add_to_run_record
from registry import FocalppError, RunContext


@dataclass
class LoopState:
    """The loop's own share of a checkpoint."""

    step: int = 0
    pending_metrics: dict[str, Any] = field(default_factory=dict)  # sums since the last record
    train_seconds: float = 0.0
    meta_test_seconds: float = 0.0
    precision: dict[str, Any] | None = None  # the settled precision choice, where settled


class RunClock:
    """A run's training time and, of it, the time spent meta-testing, counted on across resumes
    (a checkpoint keeps both: `LoopState`)."""

    def __init__(self):
        self.before, self.started, self.meta_testing = 0.0, time.perf_counter(), 0.0

    def resume(self, before: float, meta_testing: float) -> None:
        """Count on from a checkpoint's training and meta-test seconds."""
        self.before, self.meta_testing = before, meta_testing

    def start(self) -> None:
        """Training starts (again) now: settling the precision before it is not counted."""
        self.started = time.perf_counter()

    def seconds(self) -> float:
        return self.before + time.perf_counter() - self.started

    @contextmanager
    def meta_test(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.meta_testing += time.perf_counter() - started


class Checkpointer:
    """Checkpoint state, save and restore for one run of a loop, or K seeds trained together.

    Args:
        run: the run's context (its directory or the seeds' directories, whether it resumes).
    """

    def __init__(self, run: RunContext):
        self.run_context = run
        self.runs: list[RunRecord] = []
        self.fingerprint: str | None = None

    @property
    def seeds(self) -> bool:
        """Whether K seeds train together (each run a seed of one seed-batched learner)."""
        return bool(self.runs) and self.runs[0].index is not None

    def open(self, batched: bool) -> list[RunRecord]:
        """Each run's record and the configuration fingerprint its checkpoints carry (a seed's:
        the configuration with its own seed, as its single run's)."""
        self.runs = run_records(self.run_context, batched)
        self.fingerprint = config_fingerprint()
        for run in self.runs:
            run.fingerprint = (
                self.fingerprint
                if run.index is None
                else config_fingerprint(with_seed(gin.config_str(), run.seed))
            )
        return self.runs

    def begin(self, learner, batched: bool, steps: int) -> LoopState | None:
        """Each run's record (`open`) and, for a run being resumed, the learner back at its
        checkpoint(s): the loop's state to continue from, else None."""
        self.open(batched)
        if not self.run_context.resume:
            return None
        return self.restore(learner, self.load(), steps)

    def training(self) -> list[RunRecord]:
        """The runs still training (all but seeds stopped early)."""
        return [run for run in self.runs if run.stopped is None]

    def open_logs(self, precision: dict[str, Any]) -> None:
        """Each run's precision recorded in its run.json, and its metrics log opened (a
        resumed one cut back to what its checkpoint saw)."""
        for run in self.runs:
            add_to_run_record(run.run_dir, "precision", precision)
            run.log = MetricsLog(run.run_dir, resume=run.resume_log)

    def log_training(self, step: int, sums: dict[str, Any], n: int) -> None:
        """The means over the last `n` steps of the metrics summed in `sums`, in each training
        run's log (a seed's own values, for K seeds trained together)."""
        for run in self.training():
            run.log.write(step, "train", {k: float(run.value(v)) / n for k, v in sums.items()})

    def close(self) -> None:
        for run in self.runs:
            if run.log is not None:
                run.log.close()

    # --- what a checkpoint holds ---------------------------------------------------------------
    def state(self, learner, loop: LoopState, record: RunRecord | None = None) -> dict[str, Any]:
        """The learner's state and the loop's: everything the rest of the run depends on; for
        one of K seeds trained together (`record`), that seed's, in a single run's format."""
        parts, rng = learner.parts_state(), rng_state(learner.generators())
        sums, fingerprint = dict(loop.pending_metrics), self.fingerprint
        log = self.runs[0].log if self.runs else None
        if record is not None and record.index is not None:
            k = record.index
            parts = unstack_parts(parts, k)
            rng = seed_rng_state(rng, learner, k)
            sums = {name: record.value(v) for name, v in sums.items()}
            fingerprint, log = record.fingerprint, record.log
        return {
            "step": loop.step,
            "config_fingerprint": fingerprint,
            **parts,
            "rng": rng,
            "pending_metrics": sums,
            "metrics_records": log.count if log else 0,
            "train_seconds": loop.train_seconds,
            "meta_test_seconds": loop.meta_test_seconds,
            "precision": loop.precision,
        }

    def save(self, learner, loop: LoopState) -> None:
        """A checkpoint in every run directory still training (a failed write raises a
        WriteError naming the file; the checkpoint it would have replaced stays whole)."""
        if not self.seeds:
            save_checkpoint(self.state(learner, loop), self.run_context.run_dir)
            return
        for run in self.runs:
            if run.stopped is None:
                save_checkpoint(self.state(learner, loop, run), run.run_dir)

    # --- taking a run back to its checkpoint ------------------------------------------------
    def load(self) -> list[dict[str, Any]]:
        """Each run's checkpoint, for `--resume`. K seeds must be at one step: where a write
        failed part-way through the seeds (a full disk, a folder replaced), the seeds already
        written are one checkpoint ahead, and each of those goes back to its previous one."""
        for run in self.runs:
            remove_stale_temporaries(run.run_dir)
        states = [load_checkpoint(r.run_dir, fingerprint=r.fingerprint) for r in self.runs]
        if len({s["step"] for s in states}) > 1:
            states = self._at_one_step(states)
        return states

    def _at_one_step(self, states: list[dict[str, Any]]) -> list[dict[str, Any]]:
        held = []
        for run, state in zip(self.runs, states, strict=True):
            options = {state["step"]: state}
            try:
                previous = read_checkpoint(run.run_dir / PREVIOUS)
                check_fingerprint(previous, run.fingerprint, run.run_dir / PREVIOUS)
                options.setdefault(previous["step"], previous)
            except (CheckpointError, FileNotFoundError):
                pass
            held.append(options)
        common = set.intersection(*(set(options) for options in held))
        if not common:
            where = ", ".join(
                f"seed {r.seed}: {s['step']}" for r, s in zip(self.runs, states, strict=True)
            )
            raise FocalppError(
                f"the seeds' checkpoints are at different steps ({where}); resume each seed as "
                "a single run (tools/run.py --resume RUN_DIR)"
            )
        step = max(common)
        for run, state in zip(self.runs, states, strict=True):
            if state["step"] != step:
                err.print(
                    f"[yellow]note:[/] seed {run.seed}'s newest checkpoint (step {state['step']}) "
                    f"is ahead of the other seeds' (a write failed part-way): it resumes from "
                    f"its previous one, {escape(str(run.run_dir / PREVIOUS))} (step {step})"
                )
        return [options[step] for options in held]

    def restore(self, learner, states: list[dict[str, Any]], steps: int) -> LoopState:
        """The learner back at its checkpoint(s) (`load`), each run's log told how many records
        the checkpoint saw; returns the loop's state to continue from. `steps`: the run's
        length (a checkpoint of the final step saw the final meta-test, which runs again)."""
        if not self.seeds:
            (state,) = states
            learner.load_parts_state(state)
            restore_rng_state(state["rng"], learner.generators())
            sums = dict(state["pending_metrics"])
        else:
            learner.load_parts_state(stack_parts(states))
            restore_rng_state(states[0]["rng"], {})
            for k, state in enumerate(states):
                restore_seed_rng_state(state["rng"], learner, k)
            names = states[0]["pending_metrics"].keys()
            sums = {n: torch.stack([torch.as_tensor(s["pending_metrics"][n]) for s in states])
                    for n in names}  # fmt: skip
        step = states[0]["step"]
        for run, state in zip(self.runs, states, strict=False):  # none: not begun (a trial)
            seen = state["metrics_records"] - (state["step"] == steps)
            run.resume_log = (seen, step)
        return LoopState(
            step=step,
            pending_metrics=sums,
            train_seconds=max(s["train_seconds"] for s in states),
            # older checkpoints: none
            meta_test_seconds=max(s.get("meta_test_seconds", 0.0) for s in states),
            # none in checkpoints from before 'auto': as requested
            precision=states[0].get("precision"),
        )
