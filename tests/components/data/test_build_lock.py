"""Concurrent requests for one missing dataset build it once; nobody sees a partial directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from components.data.store import load_dataset

WORKER = Path(__file__).resolve().parents[2] / "data" / "build_dataset_worker.py"


def test_two_processes_build_one_dataset_once(tmp_path):
    root, start, log = tmp_path / "store", tmp_path / "start", tmp_path / "builders"
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(root), str(start), str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    start.touch()
    outputs = [w.communicate() for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [err for _, err in outputs]
    builders = log.read_text().split()
    assert len(builders) == 1, f"built by {builders}"
    paths = {stdout.strip().splitlines()[-1] for stdout, _ in outputs}
    assert len(paths) == 1
    # the other process waited on the lock rather than finding the dataset already there
    assert any("waiting for another process" in stdout for stdout, _ in outputs)
    load_dataset(Path(paths.pop()))  # complete and valid
    hidden = [p.name for p in root.rglob(".*") if p.is_dir() and p.name != ".locks"]
    assert hidden == []  # no temporary dataset directory left
