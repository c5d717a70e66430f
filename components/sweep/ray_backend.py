"""Runs a study's jobs as Ray tasks: on this machine (`ray.init()`) or on a cluster (`address`).

Needs the optional `ray` extra (`pip install -e ".[ray]"`). Each task runs the same
`execute` as the local backend, so a run's process, retries, resume and index entry do not
depend on the backend. On a cluster, every node needs this checkout installed at the same path
and the dataset store on a shared file system ($FOCALPP_DATA), so a dataset is built once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from components.sweep.job import ROOT, Job, Outcome, execute
from registry import FocalppError, register


@register("backend", "ray")
class RayBackend:
    """Args:
    address: a running cluster ("auto", "ray://host:10001", ...); None starts Ray here.
    workers: CPUs given to a Ray started here (default: all); ignored with `address`.
    """

    def __init__(self, *, address: str | None = None, workers: int | None = None):
        self.address, self.workers = address, workers

    def run(
        self,
        jobs: Sequence[Job],
        on_outcome: Callable[[Outcome], None] = lambda outcome: None,
    ) -> list[Outcome]:
        try:
            import ray
        except ImportError as e:
            raise FocalppError(
                'the ray backend needs Ray: pip install -e ".[ray]" (or use --backend local)'
            ) from e
        if not jobs:
            return []
        started_here = not ray.is_initialized()
        if started_here:
            options = {"include_dashboard": False, "log_to_driver": False}
            if self.address is None:
                options["num_cpus"] = self.workers
                options["runtime_env"] = {"env_vars": {"PYTHONPATH": str(ROOT)}}
                # Ray lowers its workers' priority (nice 15), and a run's process inherits
                # it: beside any other work (a second study, the test suite's other worker)
                # a run then waits for the CPU (importing torch took 45 s instead of 2)
                options["_system_config"] = {"worker_niceness": 0}
            try:
                ray.init(address=self.address, **options)
            except ConnectionError as e:
                raise FocalppError(f"cannot reach the Ray cluster at {self.address}: {e}") from e
        try:
            threads = max(j.threads for j in jobs)
            # Ray's own retries stay off: a dead worker comes back as a failed, retryable
            # outcome, and the study retries it by resuming its run like any other death.
            task = ray.remote(num_cpus=threads, max_retries=0)(execute)
            pending = {task.remote(job): i for i, job in enumerate(jobs)}
            outcomes: list[Outcome | None] = [None] * len(jobs)
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                i = pending.pop(ready[0])
                try:
                    outcome = ray.get(ready[0])
                except ray.exceptions.RayError as e:
                    outcome = Outcome(
                        jobs[i].spec.name,
                        "failed",
                        "ran",
                        f"Ray task failed: {type(e).__name__}: {str(e).splitlines()[0]}",
                        retryable=True,
                    )
                outcomes[i] = outcome
                on_outcome(outcome)
            return outcomes  # type: ignore[return-value]
        finally:
            if started_here:
                ray.shutdown()
