"""A study's worker process: the library call its argv names, or one `error:` line and exit
status 2 (not retried) for a call it cannot make, whether the job built it wrong or the library
refused it."""

from __future__ import annotations

import subprocess

import pytest

from components.checkout import checkout_env
from components.sweep import worker


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["nope", "{}"], "no worker call 'nope': one of run, resume"),
        (["run", '{"recipe": 1'], "the arguments of run are not JSON"),
        (["run", "[1]"], "the arguments of run must be a JSON object"),
        (["run", "{}"], "do not fit it: missing a required argument: 'recipe'"),
        (["resume", '{"run_dirs": [], "extra": 1}'], "got an unexpected keyword argument 'extra'"),
        ([], "expected CALL JSON (2 arguments), got 0"),
        (
            ["collect", '{"env": "x", "scale": "tiny", "bindings": [], "root": "/"}'],
            "got an unexpected keyword argument 'root'",
        ),
    ],
)
def test_a_call_the_worker_cannot_make_is_refused_before_anything_runs(argv, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
        worker.parse(argv)


def test_the_worker_process_says_what_is_wrong_and_exits_2(tmp_path):
    bad = subprocess.run(
        worker.command("run", {}), capture_output=True, text=True, env=checkout_env()
    )
    assert bad.returncode == worker.USER_ERROR
    assert bad.stderr.startswith("error: python -m components.sweep.worker: the arguments of run")
    arguments = {
        "recipe": "no_such_recipe.gin",
        "env": "sparse_point_robot",
        "scale": "tiny",
        "seeds": [0],
        "grouped": False,
        "out": str(tmp_path / "run"),
        "numerics": "free",
    }
    refused = subprocess.run(
        worker.command("run", arguments), capture_output=True, text=True, env=checkout_env()
    )
    assert refused.returncode == worker.USER_ERROR, refused.stderr
    assert refused.stderr.startswith("error: ") and "no_such_recipe" in refused.stderr
    assert not (tmp_path / "run").exists()  # refused before a run directory was made
