"""A behaviour build with resume points: killed, it goes on where it stopped and writes the same
bytes as a build never stopped (its committed digest); a saved state of other settings is
refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gin
import pytest

from components.data.behaviour import Resume
from components.data.blocks import block_dir, partial_dir
from components.data.build import ensure_dataset
from components.data.store import DatasetError, load_dataset
from tests.conftest import ROOT

COMMITTED = json.loads((ROOT / "tests" / "data" / "portable_digests.json").read_text())[
    "other_settings"
]

SETTINGS = [  # 50 wind tasks, 300 SAC steps, resume points every 50 steps
    "behaviour_sac.env_steps = 300",
    "behaviour_sac.start_steps = 20",
    "behaviour_sac.batch_size = 16",
    "behaviour_sac.resume_every = 50",
    "checkpoints.checkpoints = 4",
    "checkpoints.episodes = 2",
]
FAMILY = "point_robot_wind"


def collect(root: Path) -> subprocess.Popen:
    params = [a for b in SETTINGS for a in ("--gin_param", b)]
    tool = str(ROOT / "tools" / "collect.py")
    return subprocess.Popen(
        [sys.executable, tool, "--env", FAMILY, "--out", str(root), *params],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def build(root: Path, **kwargs) -> None:
    """The build in this process, as tools/collect.py runs it."""
    gin.clear_config()
    gin.parse_config(SETTINGS)
    try:
        ensure_dataset(FAMILY, "checkpoints", 0, root=root, **kwargs)
    finally:
        gin.clear_config()


def test_a_killed_build_goes_on_to_the_same_bytes(tmp_path):
    """The same bytes as the build never stopped, whose digest is committed (the same on every
    x86 CPU with AVX2 and FMA: portable numerics)."""
    killed = collect(tmp_path / "killed")
    path = tmp_path / "killed" / FAMILY / "checkpoints-s0"
    state = partial_dir(block_dir(path, 0, 2)) / "state.pt"  # the first of two blocks
    while not state.exists() and killed.poll() is None:
        time.sleep(0.005)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert state.exists() and not path.exists(), "the build was not stopped half way"

    import torch

    stopped_at = torch.load(state, weights_only=False)["step"]
    seen = []
    build(tmp_path / "killed", progress=lambda done, total: seen.append(done))
    assert 0 < stopped_at < 300 and seen[0] == stopped_at + 1  # went on, did not start over
    assert load_dataset(path).content_digest == COMMITTED["point_robot_wind, resume points"]
    assert not partial_dir(block_dir(path, 0, 2)).exists()  # the saved state goes once written


def test_a_saved_state_of_other_settings_is_refused(tmp_path):
    mine = Resume(tmp_path / "state.pt", 100, {"settings": {"env_steps": 1500}, "seed": 0})
    mine.save({"step": 100})
    assert mine.load()["step"] == 100
    other = Resume(tmp_path / "state.pt", 100, {"settings": {"env_steps": 3000}, "seed": 0})
    with pytest.raises(DatasetError, match=r"state\.pt holds a stopped build of other settings"):
        other.load()
    (tmp_path / "state.pt").write_bytes(b"torn")
    with pytest.raises(DatasetError, match="cannot read the saved state"):
        mine.load()
    assert os.listdir(tmp_path) == ["state.pt"]  # saves leave no temporary files behind
