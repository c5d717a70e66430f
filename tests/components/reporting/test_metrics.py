"""The metrics log: JSON lines flushed as written, and TensorBoard events when installed."""

from __future__ import annotations

import pytest

from components.reporting.metrics import MetricsLog, read_metrics


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
