from __future__ import annotations

import json

from tests.components.data.conftest import TINY
from tests.conftest import cli


def collect(*args: str, process: bool = False):
    return cli("collect", *args, process=process)


def test_build_list_and_reuse(tmp_path):
    params = [a for b in TINY if b.startswith("behaviour_sac.") for a in ("--gin_param", b)]
    r = collect(  # a process of its own: the manifest records its command line
        "--env",
        "point_robot_wind",
        "--protocol",
        "replay",
        "--out",
        str(tmp_path),
        *params,
        process=True,
    )
    assert r.returncode == 0, r.stderr
    path = json.loads(r.stdout.strip().splitlines()[-1])["dataset"]
    assert path == str(tmp_path / "point_robot_wind" / "replay-s0")
    manifest = json.loads(
        (tmp_path / "point_robot_wind" / "replay-s0" / "manifest.json").read_text()
    )
    assert manifest["qualities"]["replay"]["per_task_counts"] == [60] * 50
    assert "collect.py" in manifest["command"]
    listed = collect("--list", "--out", str(tmp_path))
    assert listed.returncode == 0 and "point_robot_wind" in listed.stdout and "ok" in listed.stdout
    again = collect(
        "--env", "point_robot_wind", "--protocol", "replay", "--out", str(tmp_path), *params
    )
    assert again.returncode == 0 and "replay" in again.stdout


def test_bad_requests(tmp_path):
    r = collect("--env", "sparse_point_robt", "--out", str(tmp_path))
    assert (
        r.returncode == 2
        and "did you mean: sparse_point_robot" in r.stderr.lower()
        and "Traceback" not in r.stderr
    )
    r = collect("--env", "sparse_point_robot", "--protocol", "replays", "--out", str(tmp_path))
    assert r.returncode == 2 and "did you mean: replay" in r.stderr
    r = collect("--env", "point_robot_wind", "--protocol", "relabeled", "--out", str(tmp_path))
    assert r.returncode == 2 and "differ in dynamics" in r.stderr
    assert not (tmp_path / "point_robot_wind" / "relabeled-s0").exists()
    (tmp_path / "walker_params" / "checkpoints-s0").mkdir(parents=True)
    r = collect("--env", "walker_params", "--out", str(tmp_path))
    assert r.returncode == 2 and "half-written" in r.stderr
