"""A build's block workers: an error raised in one reaches the tool whole, and a worker that
dies without one (killed, out of memory) ends the build at once with an error that says so,
instead of leaving the tool waiting for a block that will never come."""

from __future__ import annotations

import os
import pickle
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.data.blocks import WORKERS_ENV, block_dir, partial_dir
from registry.errors import FocalppError, WriteError
from tests.conftest import ROOT

SETTINGS = [  # 50 wind tasks in two blocks; resume points show that both blocks are under way
    "behaviour_sac.env_steps = 3000",
    "behaviour_sac.start_steps = 20",
    "behaviour_sac.batch_size = 16",
    "behaviour_sac.resume_every = 20",
    "checkpoints.checkpoints = 4",
    "checkpoints.episodes = 2",
]
FAMILY = "point_robot_wind"


class Shaped(FocalppError):
    """Any error with arguments of its own, as a plugin's might have."""

    def __init__(self, promise: str, found: int):
        super().__init__(f"{promise}: found {found}")
        self.found = found


def test_an_error_whose_arguments_are_not_its_message_crosses_processes_whole():
    """pickle rebuilds an exception by calling its class with the message alone, which a
    WriteError (path, cause) refuses: a worker's error never reached the tool, which waited."""
    error = WriteError("/data/block", OSError(28, "No space left on device"))
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is WriteError and str(back) == str(error)
    assert back.path == "/data/block" and back.cause.errno == 28

    back = pickle.loads(pickle.dumps(Shaped("a square", 3)))
    assert str(back) == "a square: found 3" and back.found == 3


def _file_size_limit(limit: int):
    def start() -> None:  # in the tool's process before Python runs; its workers inherit both
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return start


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a build of one core has no workers")
def test_a_write_refused_in_a_worker_ends_the_build_named(tmp_path):
    """A block's files outgrow the file-size limit (as on a full disk): the worker's WriteError
    reaches the tool, which ends with it, instead of waiting for the block."""
    tool = str(ROOT / "tools" / "collect.py")
    out = tmp_path / "store"
    build = subprocess.run(
        [sys.executable, tool, "--env", "sparse_point_robot", "--scale", "tiny", "--out", str(out)],
        env={**os.environ, WORKERS_ENV: "2"},
        preexec_fn=_file_size_limit(16384),  # above the progress array, below a block's files
        capture_output=True,
        text=True,
        timeout=120,  # a tiny build takes seconds; waiting on a lost block, forever
    )
    assert build.returncode == 2, build.stderr
    assert "cannot write" in build.stderr and "(a short write" in build.stderr
    assert "Traceback" not in build.stderr
    assert not out.exists()  # a store it made is removed again


def _workers(pid: int) -> list[int]:
    """The block workers among the children of process `pid` (Linux /proc)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [
        int(child)
        for child in children
        if b"multiprocessing.spawn" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a build of one core has no workers")
def test_a_worker_killed_mid_build_ends_the_build_at_once(tmp_path):
    params = [a for b in SETTINGS for a in ("--gin_param", b)]
    tool = str(ROOT / "tools" / "collect.py")
    build = subprocess.Popen(
        [sys.executable, tool, "--env", FAMILY, "--out", str(tmp_path), *params],
        env={**os.environ, WORKERS_ENV: "2"},  # the suite's one worker builds here
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    path = tmp_path / FAMILY / "checkpoints-s0"
    states = [partial_dir(block_dir(path, i, 2)) / "state.pt" for i in (0, 1)]
    # a guard against a build that hangs before its blocks start, not a timing: on a loaded
    # machine the two workers' start alone has taken minutes
    deadline = time.monotonic() + 1800
    while not all(s.exists() for s in states) and build.poll() is None:
        assert time.monotonic() < deadline, "the two blocks never got under way"
        time.sleep(0.01)
    assert build.poll() is None, build.stderr.read()
    workers = _workers(build.pid)
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    try:
        _, err = build.communicate(timeout=60)  # the other block alone would take minutes
    except subprocess.TimeoutExpired:
        build.kill()
        raise AssertionError("the build waited on after a worker was killed") from None
    assert build.returncode == 2, err
    assert "ended without an error of its own (signal SIGKILL" in err
    assert "Traceback" not in err
    assert not path.exists()  # no dataset from half the blocks
    assert not any(Path(f"/proc/{w}").exists() for w in workers)  # the other one was stopped
