"""Progress: a bar on a terminal for a run's training, and plain lines for work that runs in the
background (logs, nohup, CI): what is done, the rate and the time left, every so often."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from components.outputs.console import out


def clock(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


def progress_lines(
    label: str,
    *,
    every: float = 30.0,
    unit: str = "steps",
    write: Callable[[str], None] | None = None,
) -> Callable[[int, int], None]:
    """A `(done, total)` callback printing `label: done/total unit (p%), r unit/s, elapsed T,
    ETA T` at most once per `every` seconds and at the end. The rate is that since the last
    line (a build's first steps, random actions without updates, are faster than the rest),
    and counts from the first call, so a build that went on from a resume point is not
    credited with the steps it found done."""
    write = write or (lambda line: out.print(line, soft_wrap=True))  # one line, never wrapped
    start: list[float | int] = []  # time and count of the first call
    last: list[float | int] = []  # time and count of the last line

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if not start:
            start.extend([now, done])
        if last and now - last[0] < every and done < total:
            return
        since, made = (now - last[0], done - last[1]) if last else (0.0, 0)
        last[:] = [now, done]
        rate = made / since if since > 0 and made > 0 else None
        line = f"{label}: {done:,}/{total:,} {unit} ({100 * done / max(total, 1):.0f}%)"
        if rate is not None:
            eta = clock((total - done) / rate)
            line += f", {rate:,.1f} {unit}/s, elapsed {clock(now - start[0])}, ETA {eta}"
        write(line)

    return report


def progress_bar(enabled: bool) -> Progress:
    """A training run's bar (steps done, elapsed, left), cleared when it ends; nothing where
    `enabled` is False."""
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
