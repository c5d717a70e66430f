"""A run directory's lock: one process trains in it at a time; the lock dies with its holder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from components.outputs.run_dir import LOCK, run_lock
from registry import FocalppError
from tests.conftest import ROOT

HOLD = (
    "import sys\nfrom components.outputs.run_dir import run_lock\n"
    "with run_lock(sys.argv[1]):\n    print('held', flush=True)\n    sys.stdin.read()\n"
)


def holder(run_dir: Path) -> subprocess.Popen:
    """Another process that holds the run's lock until its stdin closes."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout.readline() == "held\n"
    return proc


def test_a_second_holder_is_refused_until_the_first_lets_go(tmp_path):
    other = holder(tmp_path)
    with pytest.raises(FocalppError, match="another process is training it"), run_lock(tmp_path):
        pass
    other.stdin.close()
    assert other.wait() == 0
    assert not (tmp_path / LOCK).exists()  # removed on release
    with run_lock(tmp_path):
        assert (tmp_path / LOCK).exists()
    assert list(tmp_path.iterdir()) == []


def test_the_lock_of_a_killed_holder_is_free(tmp_path):
    other = holder(tmp_path)
    other.send_signal(signal.SIGKILL)
    other.wait()
    assert (tmp_path / LOCK).exists()  # left behind, empty and not held
    with run_lock(tmp_path):
        pass
    assert not (tmp_path / LOCK).exists()


def test_a_read_only_run_directory_is_refused_by_name():
    """Unwritable for the process that resumes it. Tests run as root, whom permissions do not
    stop: the check then runs in a child process that has given root up (user nobody)."""
    with tempfile.TemporaryDirectory() as place:
        run_dir = Path(place) / "run"
        run_dir.mkdir()
        os.chmod(place, 0o755)
        os.chmod(run_dir, 0o555)
        code = (
            "import os, sys\nfrom components.outputs.run_dir import run_lock\n"
            "from registry import FocalppError\n"
            "if os.geteuid() == 0:\n    os.setgid(65534)\n    os.setuid(65534)\n"
            "try:\n    with run_lock(sys.argv[1]):\n        print('locked')\n"
            "except FocalppError as e:\n    print(e)\n"
        )
        r = subprocess.run(
            [sys.executable, "-c", code, str(run_dir)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert r.returncode == 0, r.stderr
        assert f"cannot resume {run_dir}: cannot write in it (Permission denied)" in r.stdout
        assert f"chmod -R u+w {run_dir}" in r.stdout
        assert list(run_dir.iterdir()) == []
