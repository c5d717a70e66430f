"""A run's metrics log: one JSON object per line in metrics.jsonl, and TensorBoard event files
when the optional `tensorboard` extra is installed.

Each record has `step`, `kind` ("train" or "eval") and numbers. Lines are flushed as written, so
an interrupted run keeps every record up to the interruption.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class MetricsLog:
    """Append-only metrics of one run.

    Args:
        run_dir: the run directory (metrics.jsonl and tensorboard/ go there).
        tensorboard: "auto" (write event files if tensorboard is installed), True or False.
    """

    def __init__(self, run_dir: Path, *, tensorboard: bool | str = "auto"):
        self.path = Path(run_dir) / "metrics.jsonl"
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self._writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                if tensorboard is True:
                    raise
            else:
                self._writer = SummaryWriter(str(Path(run_dir) / "tensorboard"))

    def write(self, step: int, kind: str, values: dict[str, Any]) -> None:
        record = {"step": step, "kind": kind, **values}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
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
