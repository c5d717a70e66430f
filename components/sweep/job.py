"""One job of a study: a library call (`run`, `resume`, `analyse`, a dataset's `collect`) in a
worker process of its own (`components/sweep/worker.py`).

A fresh process per job gets its numerics and thread budget before torch loads, keeps gin's
global state to itself, and isolates a crash. The run's directory decides what happens:
finished (eval.json) → skipped; checkpointed → `resume`; started but never checkpointed →
removed and started again. So executing a job twice never does the work twice, and a lock per
job keeps two sweeps (say, one restarted while the old one's runs still finish) from working in
the same run directory at once.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import components.numerics as numerics
import components.products as products
from components.checkout import checkout_env
from components.outputs.checkpoint import CHECKPOINT
from components.sweep import worker
from components.sweep.study import AnalyzeSpec, CollectSpec, RunSpec, SeedGroupSpec

ROOT = Path(__file__).resolve().parents[2]
USER_ERROR = worker.USER_ERROR  # a bad recipe, binding or dataset: not retried
# In the study directory while a study runs, once one of its jobs was refused for bad input:
# the reason. Jobs not yet started then start no process (the same recipe, bindings or data
# would be refused again, one process after another); the runner removes it.
HALT = ".halt"


def halt(study_dir: str | Path, reason: str) -> None:
    """Start no further job of this study (see HALT); the first reason is kept."""
    path = Path(study_dir) / HALT
    if not path.exists():
        tmp = path.with_name(f"{HALT}.{os.getpid()}.tmp")
        tmp.write_text(reason)
        tmp.replace(path)


def halted(job: Job) -> Outcome | None:
    """The outcome of a job that may not start because its study halted, else None."""
    path = Path(job.study_dir) / HALT
    if not path.is_file():
        return None
    return Outcome(job.spec.name, "failed", "not started", f"not started: {path.read_text()}")


@dataclass(frozen=True)
class Job:
    """A run (or dataset job), the study directory, and how many threads it may use."""

    spec: RunSpec | SeedGroupSpec | CollectSpec | AnalyzeSpec
    study_dir: str
    threads: int = 1
    # where the study was started: a job's relative paths (a binding's `task_data.root =
    # 'store'`) mean what they mean in the user's shell
    cwd: str = ""

    @property
    def run_dir(self) -> Path:
        return Path(self.study_dir) / "runs" / self.spec.name

    @property
    def log(self) -> Path:
        return Path(self.study_dir) / "logs" / f"{self.spec.name}.log"

    @property
    def lock(self) -> Path:
        return Path(self.study_dir) / ".locks" / f"{self.spec.name}.lock"


@dataclass(frozen=True)
class Outcome:
    """What became of one attempt at a job."""

    name: str
    status: str  # "done" or "failed"
    how: str  # "ran", "resumed" or "skipped" (already finished)
    reason: str = ""  # why it failed
    retryable: bool = False  # died (signal, crash) rather than refused (user error)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def execute(job: Job) -> Outcome:
    """Run (or resume, or skip) one job in a worker process; never raises for the job's own
    failures, which come back as a failed Outcome with the reason."""
    job.lock.parent.mkdir(parents=True, exist_ok=True)
    with open(job.lock, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return Outcome(
                job.spec.name, "failed", "not started", "another process is running this job"
            )
        # The child inherits the locked descriptor, so the lock outlives this process: a run
        # left going by a killed sweep still keeps a restarted sweep out of its directory.
        outcome = _execute(job, lock.fileno())
    if outcome.status == "failed" and not outcome.retryable and outcome.how != "not started":
        # halted before this worker takes its next job, whatever the backend
        first = (outcome.reason.strip().splitlines() or [""])[0]
        halt(
            job.study_dir,
            f"{outcome.name} was refused for bad input ({first}); fix it and run the study "
            "again (finished runs are kept)",
        )
    return outcome


def _execute(job: Job, lock_fd: int) -> Outcome:
    name, run_dir = job.spec.name, job.run_dir
    if isinstance(job.spec, SeedGroupSpec):
        return _execute_group(job, lock_fd)
    if not isinstance(job.spec, RunSpec):  # a dataset or an analysis: done when it exits cleanly
        if stopped := halted(job):
            return stopped
        proc = _worker(job, *job.spec.call(), lock_fd)
        if proc.returncode == 0:
            return Outcome(name, "done", "ran")
        return Outcome(name, "failed", "ran", _reason(proc), proc.returncode != USER_ERROR)
    if (run_dir / "eval.json").is_file():
        return Outcome(name, "done", "skipped")
    if stopped := halted(job):
        return stopped
    if (run_dir / CHECKPOINT).is_file():
        how, call = "resumed", ("resume", {"run_dirs": [str(run_dir)]})
    else:
        if run_dir.exists():  # died before its first checkpoint: nothing worth keeping
            shutil.rmtree(run_dir)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        how, call = "ran", job.spec.call(str(run_dir))
    proc = _worker(job, *call, lock_fd)
    if proc.returncode == 0 and (run_dir / "eval.json").is_file():
        return Outcome(name, "done", how)
    return Outcome(name, "failed", how, _reason(proc), retryable=proc.returncode != USER_ERROR)


def _execute_group(job: Job, lock_fd: int) -> Outcome:
    """Seeds trained together: the unfinished members resumed together where each has a
    checkpoint, the others (never checkpointed) started afresh together."""
    spec, runs = job.spec, Path(job.study_dir) / "runs"
    dirs = {m.seed: runs / m.name for m in spec.members}
    todo = {seed: d for seed, d in dirs.items() if not (d / "eval.json").is_file()}
    if not todo:
        return Outcome(spec.name, "done", "skipped")
    if stopped := halted(job):
        return stopped
    resumable = [str(d) for d in todo.values() if (d / CHECKPOINT).is_file()]
    fresh = [seed for seed, d in todo.items() if not (d / CHECKPOINT).is_file()]
    hows, procs = [], []
    if resumable:
        hows.append("resumed")
        procs.append(_worker(job, "resume", {"run_dirs": resumable}, lock_fd))
    if fresh:
        for seed in fresh:
            if dirs[seed].exists():  # died before its first checkpoint: nothing worth keeping
                shutil.rmtree(dirs[seed])
        runs.mkdir(parents=True, exist_ok=True)
        hows.append("ran")
        procs.append(_worker(job, *spec.call(runs, fresh), lock_fd))
    how = " and ".join(hows)
    if all((d / "eval.json").is_file() for d in dirs.values()):
        return Outcome(spec.name, "done", how)
    failed = (
        next(p for p in procs if p.returncode != 0)
        if any(p.returncode for p in procs)
        else procs[-1]
    )
    return Outcome(
        spec.name, "failed", how, _reason(failed), retryable=failed.returncode != USER_ERROR
    )


def _worker(job: Job, call: str, arguments: dict, lock_fd: int) -> subprocess.CompletedProcess:
    """The library's `call` with `arguments` in a worker process with the job's numerics and
    thread budget (set before it loads torch); output appended to the job's log."""
    job.log.parent.mkdir(parents=True, exist_ok=True)
    threads = str(job.threads)
    env = checkout_env({**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads})
    env.setdefault(products.THREADS_ENV, threads)  # a dataset it builds keeps to its budget too
    env = numerics.child_env(job.spec.numerics, env)
    env["COLUMNS"] = "200"
    command = worker.command(call, arguments)
    with open(job.log, "a", encoding="utf-8") as log:
        log.write(f"$ {call} {command[-1]}\n")
        log.flush()
        proc = subprocess.run(
            command,
            stdout=log,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=job.cwd or ROOT,
            pass_fds=(lock_fd,),
        )
        log.write(proc.stderr)
    return proc


def _reason(proc: subprocess.CompletedProcess) -> str:
    if proc.returncode < 0:
        return f"killed by {signal.Signals(-proc.returncode).name}"
    lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("error:", "interrupted"))]
    last = errors[-1] if errors else (lines[-1] if lines else "no message")
    return f"exit status {proc.returncode}: {last}"


def run_summary(run_dir: Path) -> dict[str, Any]:
    """The numbers an index keeps from a finished run's eval.json."""
    record = json.loads((Path(run_dir) / "eval.json").read_text())
    keys = (
        "test_return_mean",
        "test_return_std",
        "paper_return_mean",
        "paper_return_std",
        "steps",
        "train_seconds",
    )
    return {k: record[k] for k in keys if k in record}
