"""The default backend: runs a study's jobs on this machine, a few at a time."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from components.sweep.job import Job, Outcome, execute
from registry import register


@register("backend", "local")
class LocalBackend:
    """A pool of `workers` slots, each running one job's subprocess at a time.

    Args:
        workers: concurrent runs (default: this machine's cores divided by the study's
            threads per run, at least 1).
    """

    def __init__(self, *, workers: int | None = None):
        self.workers = workers

    def run(
        self,
        jobs: Sequence[Job],
        on_outcome: Callable[[Outcome], None] = lambda outcome: None,
    ) -> list[Outcome]:
        """Execute `jobs`; outcomes come back in the jobs' order (`on_outcome` sees each as
        it finishes)."""
        if not jobs:
            return []
        threads = max(j.threads for j in jobs)
        workers = self.workers or max(1, (os.cpu_count() or 1) // threads)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(execute, job) for job in jobs]
            for future in as_completed(futures):
                on_outcome(future.result())
            return [f.result() for f in futures]
