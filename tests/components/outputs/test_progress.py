"""Progress lines for background work: counts, the recent rate, time left."""

from __future__ import annotations

import time

from components.outputs.progress import progress_lines


def test_lines_say_what_is_done_the_rate_and_the_time_left(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    lines = []
    report = progress_lines("behaviour SAC", every=30.0, write=lines.append)
    report(1_000, 10_000)  # a build that went on from step 1,000: no rate yet
    now[0] += 10.0
    report(2_000, 10_000)  # within 30 s of the last line: quiet
    now[0] += 30.0
    report(5_000, 10_000)  # 4,000 steps in 40 s since the last line: 100 steps/s
    now[0] += 1.0
    report(10_000, 10_000)  # the end is always said: 5,000 steps in 1 s
    assert lines[0] == "behaviour SAC: 1,000/10,000 steps (10%)"
    assert lines[1] == (
        "behaviour SAC: 5,000/10,000 steps (50%), 100.0 steps/s, elapsed 0:00:40, ETA 0:00:50"
    )
    assert lines[2] == (
        "behaviour SAC: 10,000/10,000 steps (100%), 5,000.0 steps/s, elapsed 0:00:41, ETA 0:00:00"
    )
    assert len(lines) == 3
