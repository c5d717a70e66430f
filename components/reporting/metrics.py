"""A run's metrics log: one JSON object per line in metrics.jsonl, and TensorBoard event files
when the optional `tensorboard` extra is installed.

Each record has `step`, `kind` ("train" or "eval") and numbers. Lines are flushed as written, so
an interrupted run keeps every record up to the interruption; a resumed run first cuts the log
back to the records its checkpoint had seen, so no step is recorded twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.reporting.run_dir import atomic_write_text
from registry import FocalppError


class MetricsLog:
    """Append-only metrics of one run.

    Args:
        run_dir: the run directory (metrics.jsonl and tensorboard/ go there).
        tensorboard: "auto" (write event files if tensorboard is installed), True or False.
        resume: (records, step) of a checkpoint: keep the first `records` lines and drop
            TensorBoard events after `step`; None starts an empty log.
    """

    def __init__(
        self,
        run_dir: Path,
        *,
        tensorboard: bool | str = "auto",
        resume: tuple[int, int] | None = None,
    ):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.count = 0
        if resume is not None:
            self.count = resume[0]
            lines = self.path.read_text().splitlines(keepends=True) if self.path.exists() else []
            if len(lines) < self.count:
                raise FocalppError(
                    f"{self.path} has {len(lines)} records but the checkpoint saw {self.count}: "
                    "the metrics log was edited or replaced; cannot resume it consistently"
                )
            atomic_write_text(self.path, "".join(lines[: self.count]))
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self._writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                if tensorboard is True:
                    raise
            else:
                self._writer = SummaryWriter(
                    str(Path(run_dir) / "tensorboard"),
                    purge_step=resume[1] + 1 if resume is not None else None,
                )

    def write(self, step: int, kind: str, values: dict[str, Any]) -> None:
        record = {"step": step, "kind": kind, **values}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        self.count += 1
        if self._writer is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)):
                    self._writer.add_scalar(f"{kind}/{key}", value, step)
            self._writer.flush()

    def close(self) -> None:
        self._file.close()
        if self._writer is not None:
            self._writer.close()


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """Every record of a run's metrics.jsonl (for reports and tests)."""
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
