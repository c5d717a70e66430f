"""Build (or load) the tiny Sparse-Point-Robot dataset from a separate process, as a sweep's
workers do: `python build_dataset_worker.py ROOT START_FILE LOG_FILE`.

Waits until START_FILE exists (so several workers start together), then asks for the dataset;
if this process is the one that builds it, it appends its pid to LOG_FILE. Prints the dataset's
path.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from components.data.build import ensure_dataset
from registry.recipes import compose_columns

root, start, log = (Path(a) for a in sys.argv[1:4])
compose_columns("sparse_point_robot", "tiny")
while not start.exists():
    time.sleep(0.01)


def built(done: int, total: int) -> None:
    if done == total:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")


dataset = ensure_dataset("sparse_point_robot", "checkpoints", 0, root=root, progress=built)
print(dataset.path)
