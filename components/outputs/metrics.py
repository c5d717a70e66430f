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

from rich.markup import escape

from components.json_text import loads
from components.outputs.console import err
from components.outputs.run_dir import atomic_write_text
from registry import FocalppError, WriteError


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
            self.count = self._cut_back(resume[0])
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

    def _cut_back(self, count: int) -> int:
        """Keep the first `count` records (those the checkpoint saw) and return how many were
        kept. A last line cut mid-way (a crash or a full disk during its write) is dropped, not
        continued: where it was one of the checkpoint's records, that one record is lost and
        the run says so."""
        text = self.path.read_text() if self.path.exists() else ""
        lines = text.splitlines(keepends=True)
        cut = bool(lines) and not lines[-1].endswith("\n")
        whole = lines[:-1] if cut else lines
        if len(whole) < count - cut:
            raise FocalppError(
                f"{self.path} has {len(whole)} records but the checkpoint saw {count}: "
                "the metrics log was edited or replaced; cannot resume it consistently"
            )
        if len(whole) < count:
            err.print(
                f"[yellow]warning:[/] {escape(str(self.path))}: record {count} was cut "
                "mid-line (a crash or a full disk while it was written); it is dropped and "
                "the log goes on after it"
            )
        kept = whole[:count]
        atomic_write_text(self.path, "".join(kept))
        return len(kept)

    def write(self, step: int, kind: str, values: dict[str, Any]) -> None:
        record = {"step": step, "kind": kind, **values}
        try:
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()
        except OSError as e:  # a cut last line is dropped on resume (_cut_back)
            self._refused = e
            raise WriteError(self.path, e, "Its earlier records are whole.") from e
        self.count += 1
        if self._writer is not None:
            for key, value in values.items():
                if isinstance(value, (int, float)):
                    self._writer.add_scalar(f"{kind}/{key}", value, step)
            self._writer.flush()

    _refused: OSError | None = None  # the write the machine refused, already reported

    def close(self) -> None:
        try:
            self._file.close()  # flushes what is buffered: a refused record tries again
        except OSError as e:
            if self._refused is None:
                raise WriteError(self.path, e, "Its earlier records are whole.") from e
            # refused again: reported once already (the file descriptor is closed either way)
        if self._writer is not None:
            self._writer.close()


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """Every record of a run's metrics.jsonl (for reports and tests); a missing or damaged
    log is an error that names the file and the line."""
    return [record for _, record in jsonl(Path(run_dir) / "metrics.jsonl", DAMAGED)]


def jsonl(path: Path, damaged: str, data: bytes | None = None):
    """(line number, object) for each line of a JSON Lines file; an unreadable file, or a line
    that is not a JSON object, is an error naming the file and line, then `damaged`. `data`:
    the file's bytes where they were read elsewhere (a member of an archive `path` names)."""
    try:
        lines = (path.read_bytes() if data is None else data).decode().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else f"not text: {e}"
        raise FocalppError(f"cannot read {path} ({reason}): {damaged}") from e
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = loads(line)
        except ValueError as e:
            raise FocalppError(f"{path} line {number} is not valid JSON ({e}): {damaged}") from e
        if not isinstance(record, dict):
            raise FocalppError(f"{path} line {number} is not a JSON object: {damaged}")
        yield number, record


DAMAGED = "the run's metrics log is damaged; restore it, or leave that run out"
