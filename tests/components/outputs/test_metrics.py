"""The metrics log: JSON lines flushed as written, and TensorBoard events when installed."""

from __future__ import annotations

import pytest

from components.outputs.metrics import MetricsLog, read_metrics
from registry import FocalppError


def test_records_are_readable_before_close(tmp_path):
    log = MetricsLog(tmp_path, tensorboard=False)
    log.write(1, "train", {"loss_q": 2.5})
    log.write(2, "eval", {"test_return_mean": 7.0})
    assert read_metrics(tmp_path) == [
        {"step": 1, "kind": "train", "loss_q": 2.5},
        {"step": 2, "kind": "eval", "test_return_mean": 7.0},
    ]
    log.close()
    assert not (tmp_path / "tensorboard").exists()


def test_tensorboard_events_hold_the_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log = MetricsLog(tmp_path, tensorboard=True)
    log.write(3, "train", {"loss_q": 1.5, "context": [1, 2]})  # lists are not scalars: skipped
    log.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert events.Tags()["scalars"] == ["train/loss_q"]
    assert [(e.step, e.value) for e in events.Scalars("train/loss_q")] == [(3, 1.5)]


def _log_of(tmp_path, records: int) -> str:
    log = MetricsLog(tmp_path, tensorboard=False)
    for step in range(1, records + 1):
        log.write(step, "train", {"loss_q": float(step)})
    log.close()
    return (tmp_path / "metrics.jsonl").read_text()


def test_resume_drops_a_line_cut_after_the_checkpoints_records(tmp_path):
    text = _log_of(tmp_path, 3)
    (tmp_path / "metrics.jsonl").write_text(text + '{"step": 4, "ki')  # killed mid-write
    log = MetricsLog(tmp_path, tensorboard=False, resume=(3, 3))
    log.write(4, "train", {"loss_q": 4.0})
    log.close()
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3, 4]


def test_resume_drops_a_cut_record_the_checkpoint_saw_and_says_so(tmp_path, capsys):
    """The log lost the tail of a record the checkpoint had counted (a crash before the
    page cache reached the disk): the cut line goes, the log stays valid JSON lines."""
    text = _log_of(tmp_path, 3)
    (tmp_path / "metrics.jsonl").write_text(text[: text.rindex('"loss_q"')])
    log = MetricsLog(tmp_path, tensorboard=False, resume=(3, 3))
    assert log.count == 2
    log.write(4, "train", {"loss_q": 4.0})
    log.close()
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 4]
    assert "record 3 was cut mid-line" in capsys.readouterr().err


def test_resume_refuses_a_log_shorter_than_the_checkpoint_saw(tmp_path):
    text = _log_of(tmp_path, 3)
    (tmp_path / "metrics.jsonl").write_text(text.split("\n", 1)[0] + "\n")
    with pytest.raises(FocalppError, match="has 1 records but the checkpoint saw 3"):
        MetricsLog(tmp_path, tensorboard=False, resume=(3, 3))


def test_a_damaged_line_is_named(tmp_path):
    text = _log_of(tmp_path, 3)
    (tmp_path / "metrics.jsonl").write_text(text.replace('"step": 2', '"step" 2'))
    with pytest.raises(FocalppError, match=r"metrics.jsonl line 2 is not valid JSON"):
        read_metrics(tmp_path)
