"""Studies through tools/sweep.py: a killed worker is reported and the rest finish, running the
study again resumes it and skips the finished runs, and Ray gives the index the local pool does.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.data.store import load_dataset
from tests.conftest import ROOT, cli, logged_steps

STEPS = 120


def write_study(path: Path, data_root: Path, *, seeds=(0, 1, 2), retries=0, steps=STEPS) -> Path:
    path.write_text(
        f"""
name = "killtest"
recipes = ["focal.gin"]
envs = ["sparse_point_robot"]
seeds = {list(seeds)}
scale = "tiny"
retries = {retries}
bindings = [
    "task_data.root = '{data_root}'",
    "loop.steps = {steps}",
    "loop.eval_every = 100",
    "loop.log_every = 10",
    "loop.checkpoint_every = 20",
]
"""
    )
    return path


def run_pid(run_dir: Path) -> int | None:
    """The pid of the run process (`python -m components.sweep.worker`, as a study starts it)
    working in `run_dir`, if one is running."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        quoted = f'"{run_dir}"'.encode()  # as the worker's JSON holds it: not -s1 in -s10
        if b"components.sweep.worker" in argv and any(quoted in a for a in argv):
            return int(proc.name)
    return None


def sweep(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "sweep.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "250"},
        cwd=ROOT,
    )


def kill_when_logged(run_dir: Path, step: int, proc: subprocess.Popen) -> None:
    while True:  # until the step is logged or the process ends (no clock: load varies)
        assert proc.poll() is None, proc.communicate()
        if any(logged >= step for logged in logged_steps(run_dir)):
            pid = run_pid(run_dir)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                return
        time.sleep(0.02)


def test_killed_worker_is_reported_then_resumed_by_running_again(tiny_data, tmp_path):
    study = write_study(tmp_path / "study.toml", tiny_data, seeds=(0, 1), retries=0)
    out = tmp_path / "study"
    victim = out / "runs" / "focal-sparse_point_robot-s0"
    proc = sweep(str(study), "--out", str(out), "--workers", "1")
    kill_when_logged(victim, 50, proc)
    _, stderr = proc.communicate()
    assert proc.returncode == 2
    assert "1 of 2 runs failed: focal-sparse_point_robot-s0 (killed by SIGKILL)" in stderr
    index = json.loads((out / "index.json").read_text())
    status = {r["name"]: (r["status"], r["reason"]) for r in index["runs"]}
    assert status == {
        "focal-sparse_point_robot-s0": ("failed", "killed by SIGKILL"),
        "focal-sparse_point_robot-s1": ("done", ""),
    }
    assert index["failed"] == ["focal-sparse_point_robot-s0"]
    report = cli("report", str(out))
    assert report.returncode == 0 and "failed: focal-sparse_point_robot-s0" in report.stdout

    again = cli("sweep", str(study), "--out", str(out), "--retries", "1")
    assert again.returncode == 0, again.stderr
    index = json.loads((out / "index.json").read_text())
    how = {r["name"]: (r["status"], r["how"]) for r in index["runs"]}
    assert how == {
        "focal-sparse_point_robot-s0": ("done", "resumed"),
        "focal-sparse_point_robot-s1": ("done", "ran"),  # finished before: skipped, kept
    }
    assert "focal-sparse_point_robot-s1: done, skipped" in again.stdout


def test_a_study_run_in_parts_lists_every_part(tiny_data, tmp_path):
    """Seeds 0 then seed 1 into one folder: its index and spec list both parts' runs, each
    invocation reports its own part, and a record made from the folder holds both runs. A part
    with other numerics is refused before it trains: its runs would be other arithmetic."""
    study = write_study(tmp_path / "study.toml", tiny_data, seeds=(0, 1), steps=40)
    out = tmp_path / "study"
    first = cli("sweep", str(study), "--out", str(out), "--seeds", "0")
    assert first.returncode == 0, first.stderr
    second = cli("sweep", str(study), "--out", str(out), "--seeds", "1")
    assert second.returncode == 0, second.stderr
    assert "focal-sparse_point_robot-s1" in second.stdout
    assert "focal-sparse_point_robot-s0" not in second.stdout  # the other part's run
    index = json.loads((out / "index.json").read_text())
    assert [(r["name"], r["status"]) for r in index["runs"]] == [
        ("focal-sparse_point_robot-s1", "done"),
        ("focal-sparse_point_robot-s0", "done"),
    ]
    assert index["done"] == 2 and index["study"]["seeds"] == [0, 1]
    assert json.loads((out / "study.json").read_text())["seeds"] == [0, 1]
    r = cli("records", str(out), "--out", str(tmp_path / "record"))
    assert r.returncode == 0, r.stderr
    recorded = (tmp_path / "record" / "runs.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["seed"] for line in recorded) == [0, 1]

    study.write_text(study.read_text() + 'numerics = "free"\n')
    other = cli("sweep", str(study), "--out", str(out), "--seeds", "1")
    assert other.returncode == 2
    assert "other numerics" in other.stderr and "'portable'" in other.stderr


def test_a_run_that_dies_is_retried_within_the_study(tiny_data, tmp_path):
    study = write_study(tmp_path / "study.toml", tiny_data, seeds=(0,), retries=1)
    out = tmp_path / "study"
    victim = out / "runs" / "focal-sparse_point_robot-s0"
    proc = sweep(str(study), "--out", str(out), "--workers", "1")
    kill_when_logged(victim, 50, proc)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr
    assert "focal-sparse_point_robot-s0: failed, ran (killed by SIGKILL)" in stdout
    entry = json.loads((out / "index.json").read_text())["runs"][0]
    assert (entry["status"], entry["how"], entry["attempts"]) == ("done", "resumed", 2)
    assert entry["steps"] == STEPS


def test_ray_backend_gives_the_index_of_the_local_backend(tiny_data, tmp_path):
    pytest.importorskip("ray")
    study = write_study(tmp_path / "study.toml", tiny_data, seeds=(0, 1), steps=40)
    indexes = {}
    for backend in ("local", "ray"):
        out = tmp_path / backend
        r = cli("sweep", str(study), "--out", str(out), "--backend", backend, "--workers", "2")
        assert r.returncode == 0, r.stderr
        indexes[backend] = json.loads((out / "index.json").read_text())
    assert indexes["ray"]["backend"] == "ray"
    local, ray = (
        [{k: v for k, v in run.items() if k != "train_seconds"} for run in indexes[b]["runs"]]
        for b in ("local", "ray")
    )
    assert local == ray and all(run["status"] == "done" for run in local)
    for run in local:  # the same runs, step for step
        logs = [(tmp_path / b / run["run_dir"] / "metrics.jsonl").read_text() for b in indexes]
        assert logs[0] == logs[1]


@pytest.mark.parametrize("path", sorted((ROOT / "studies").glob("*.toml")), ids=lambda p: p.name)
def test_shipped_studies_resolve(path):
    from components.sweep.study import load_study

    study = load_study(path)
    study.check()  # every recipe, env column, scale and analysis exists
    assert study.runs()


def test_runs_start_environment_by_environment(tmp_path):
    """A study stopped part-way has every recipe of its first environments to compare."""
    from components.sweep.study import load_study

    path = tmp_path / "study.toml"
    path.write_text(
        'name = "order"\nrecipes = ["focal.gin", "focalpp.gin"]\n'
        'envs = ["sparse_point_robot", "point_robot_wind"]\nseeds = [0, 1]\nscale = "tiny"\n'
    )
    names = [run.name for run in load_study(path).runs()]
    assert names[:4] == [
        "focal-sparse_point_robot-s0",
        "focal-sparse_point_robot-s1",
        "focalpp-sparse_point_robot-s0",
        "focalpp-sparse_point_robot-s1",
    ]
    assert len(names) == 8 and all("point_robot_wind" in n for n in names[4:])


def test_dry_run_lists_the_runs():
    r = cli("sweep", str(ROOT / "studies" / "smoke.toml"), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("tools/run.py --recipe") == 5


def test_envs_runs_a_study_on_some_of_its_environments():
    """One Meta-World study lists its eight tasks; `--envs` runs one (recorded in its folder)."""
    study = str(ROOT / "studies" / "metaworld_published.toml")
    r = cli("sweep", study, "--envs", "ml1pub_push", "--dry-run")
    assert r.returncode == 0, r.stderr
    listed = [line for line in r.stdout.splitlines() if "tools/run.py --recipe" in line]
    assert len(listed) == 4 and all("--env ml1pub_push" in line for line in listed)
    r = cli("sweep", study, "--envs", "ml1_push", "--dry-run")
    assert r.returncode == 2
    assert "--envs ml1_push: not an environment of" in r.stderr and "ml1pub_push" in r.stderr


def test_seeds_runs_a_study_on_some_of_its_seeds():
    """A ten-seed study in two sittings: `--seeds 5-9` forms its seed groups within those seeds;
    a seed the study does not list is named with the ones it does."""
    study = str(ROOT / "studies" / "backbones_reach_wall.toml")
    r = cli("sweep", study, "--seeds", "5-9", "--dry-run")
    assert r.returncode == 0, r.stderr
    listed = " ".join(r.stdout.split())  # rich wraps long lines
    assert listed.count("--seeds 5,6,7,8,9") == 4 and "--seeds 0,1,2,3,4" not in listed
    assert "20 runs" in listed and "4 processes of up to 5 seeds" in listed
    r = cli("sweep", study, "--seeds", "8-11", "--dry-run")
    assert r.returncode == 2
    assert "--seeds 10,11: not a seed of" in r.stderr and "0,1,2,3,4,5,6,7,8,9" in r.stderr


def test_recipes_runs_a_study_on_some_of_its_rows():
    """A part of a long study may hold one of its rows: `--recipes focal.gin` lists that row's
    processes only; a recipe the study does not name is refused with the ones it does."""
    study = str(ROOT / "studies" / "backbones_reach_wall.toml")
    r = cli("sweep", study, "--recipes", "focal.gin", "--seeds", "0-4", "--dry-run")
    assert r.returncode == 0, r.stderr
    listed = " ".join(r.stdout.split())  # rich wraps long lines
    assert listed.count("tools/run.py --recipe") == 1
    assert "tools/run.py --recipe focal.gin --env" in listed and "5 runs" in listed
    r = cli("sweep", study, "--recipes", "focal.gin", "corro.gin", "--dry-run")
    assert r.returncode == 2
    assert "--recipes corro.gin: not a recipe of" in r.stderr and "focalpp.gin" in r.stderr


def test_variants_runs_a_study_on_some_of_its_variants():
    """A study of three learners in parts: `--variants brac` lists that variant's processes
    only, its bindings untouched; a variant the study lacks, or a study without variants, is
    refused naming what it has."""
    study = str(ROOT / "studies" / "test_contexts_ml1.toml")
    r = cli("sweep", study, "--variants", "brac", "--envs", "ml1pub_push", "--dry-run")
    assert r.returncode == 0, r.stderr
    listed = " ".join(r.stdout.split())  # rich wraps long lines
    assert "40 runs" in listed and listed.count("tools/run.py --recipe") == 8
    assert listed.count("--label brac") == 8 and "@iql" not in listed
    r = cli("sweep", study, "--variants", "iql", "--envs", "ml1pub_push", "--dry-run")
    listed = " ".join(r.stdout.split())
    assert listed.count("--label iql ") == 8 and listed.count("@iql") == 8
    r = cli("sweep", study, "--variants", "brac", "IQL", "--dry-run")
    assert r.returncode == 2
    assert "--variants IQL: not a variant of" in r.stderr and "brac, iql_shared, iql" in r.stderr
    r = cli("sweep", str(ROOT / "studies" / "smoke.toml"), "--variants", "brac", "--dry-run")
    assert r.returncode == 2 and "it has no variants" in r.stderr


def test_dataset_built_in_shards_before_the_runs(tmp_path):
    store = tmp_path / "store"
    study = tmp_path / "study.toml"
    study.write_text(
        'name = "sharded"\nrecipes = ["focal.gin"]\nenvs = ["sparse_point_robot"]\n'
        f'seeds = [0]\nscale = "tiny"\ndataset_shards = 2\n'
        f"bindings = [\"task_data.root = '{store}'\"]\n"
    )
    r = cli("sweep", str(study), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert [(d["name"], d["status"]) for d in index["datasets"]] == [
        ("dataset-sparse_point_robot-0-of-2", "done"),
        ("dataset-sparse_point_robot-1-of-2", "done"),
        ("dataset-sparse_point_robot-merge", "done"),
    ]
    assert index["runs"][0]["status"] == "done"
    # a build in shards is another dataset than one in one piece: a tag of its own
    assert not (store / "sparse_point_robot" / "checkpoints-s0-tiny").exists()
    manifest = store / "sparse_point_robot" / "checkpoints-s0-tiny-shards2" / "manifest.json"
    assert json.loads(manifest.read_text())["built_in_shards"] == 2
    # the run says which build it read: name, tag, the manifest's digest and the content's
    record = json.loads(next((tmp_path / "out").rglob("run.json")).read_text())
    assert record["dataset"] == {
        "name": "sparse_point_robot/checkpoints-s0-tiny-shards2",
        "tag": "tiny-shards2",
        "manifest_sha256": hashlib.sha256(manifest.read_bytes()).hexdigest(),
        "content_sha256": load_dataset(manifest.parent).content_digest,
        "numerics": "portable",
    }


def test_a_job_held_by_another_process_is_not_run_twice(tmp_path):
    import fcntl

    from components.sweep.job import Job, execute
    from components.sweep.study import RunSpec

    job = Job(RunSpec("focal-x-s0", "focal.gin", "sparse_point_robot", 0, "tiny"), str(tmp_path))
    job.lock.parent.mkdir(parents=True)
    with open(job.lock, "a") as held:  # as a still-running run of an earlier sweep holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        outcome = execute(job)
    assert (outcome.status, outcome.reason) == ("failed", "another process is running this job")
    assert not job.run_dir.exists() and not job.log.exists()


def test_variants_repeat_runs_with_their_bindings_and_label(tmp_path):
    from components.sweep.study import load_study

    path = tmp_path / "s.toml"
    path.write_text(
        'name = "v"\nrecipes = ["focal.gin"]\nenvs = ["sparse_point_robot"]\nseeds = [0, 1]\n'
        'bindings = ["loop.steps = 7"]\n'
        '[variants]\n"r0.3" = ["relabeled.goal_radius = -0.3"]\nwide = ["brac.hidden = (8,)"]\n'
    )
    runs = load_study(path).runs()
    assert [r.name for r in runs] == [
        "focal-sparse_point_robot-r0.3-s0",
        "focal-sparse_point_robot-r0.3-s1",
        "focal-sparse_point_robot-wide-s0",
        "focal-sparse_point_robot-wide-s1",
    ]
    assert runs[0].bindings == ("loop.steps = 7", "relabeled.goal_radius = -0.3")
    assert runs[0].call("out")[1]["label"] == "r0.3"


def test_a_run_that_died_before_its_first_checkpoint_is_started_afresh_whatever_it_held(
    tiny_data, tmp_path
):
    """Only a run the sweep keeps (finished, or checkpointed) must have been built as the study
    builds it now: one that died before its first checkpoint is removed and trained again, so
    another configuration in its run.json is no reason to refuse the study; a run the record
    holds is not taken from the folder either."""
    study = tmp_path / "afresh.toml"
    study.write_text(
        'name = "afresh"\nrecipes = ["focal.gin"]\nenvs = ["sparse_point_robot"]\n'
        f'seeds = [0]\nscale = "tiny"\nbindings = ["task_data.root = \'{tiny_data}\'"]\n'
    )
    out, records = tmp_path / "out", tmp_path / "results" / "afresh"
    assert cli("sweep", str(study), "--out", str(out)).returncode == 0
    assert cli("records", str(out), "--out", str(records)).returncode == 0
    run_dir = out / "runs" / "focal-sparse_point_robot-s0"
    record = json.loads((run_dir / "run.json").read_text())
    record["effective_bindings"]["loop.loop.steps"] = "7"
    (run_dir / "run.json").write_text(json.dumps(record))
    assert cli("sweep", str(study), "--out", str(out)).returncode == 2  # finished: refused
    recorded = cli("sweep", str(study), "--out", str(out), "--records", str(records))
    assert recorded.returncode == 0, recorded.stderr  # the record holds it: not read from out
    assert "focal-sparse_point_robot-s0: done, recorded" in recorded.stdout
    for name in ("eval.json", "checkpoint.pt", "checkpoint.prev.pt"):
        (run_dir / name).unlink(missing_ok=True)
    again = cli("sweep", str(study), "--out", str(out))
    assert again.returncode == 0, again.stderr + again.stdout
    assert "focal-sparse_point_robot-s0: done, ran" in again.stdout
    trained = json.loads((run_dir / "run.json").read_text())["effective_bindings"]
    assert trained["loop.loop.steps"] == "6"


def test_a_study_runs_an_analysis_from_its_plugins(tiny_data, tmp_path):
    """An analysis defined in a study's plugin file is found when the study is checked and runs
    on every finished run (its plugin is passed to tools/analyze.py)."""
    study = tmp_path / "plugin-study.toml"
    study.write_text(
        f"""
name = "plugin-study"
recipes = ["focal.gin"]
envs = ["sparse_point_robot"]
seeds = [0]
scale = "tiny"
plugins = ["{ROOT / "tests" / "data" / "step_count_analysis.py"}"]
analyses = ["step_count"]
bindings = ["task_data.root = '{tiny_data}'"]
"""
    )
    records = tmp_path / "results" / "plugin-study"
    r = cli("sweep", str(study), "--out", str(tmp_path / "out"), "--records", str(records))
    assert r.returncode == 0, r.stderr + r.stdout
    analysis = tmp_path / "out" / "runs" / "focal-sparse_point_robot-s0" / "analysis.json"
    assert json.loads(analysis.read_text())["step_count"] == {"steps_trained": 6}
    # the study lands in one step: its compact record, and a report in which the plugin's own
    # section tables the plugin's analysis (no file of the package edited)
    row = json.loads((records / "runs.jsonl").read_text())
    assert (row["run"], row["recipe"], row["seed"]) == (
        "focal-sparse_point_robot-s0",
        "focal.gin",
        0,
    )
    report = (records / "report" / "report.md").read_text()
    assert "### Steps trained per seed" in report
    assert "| sparse_point_robot | focal | 6 |" in report
    # run again: the recorded run is not trained again, and the record keeps one line for it
    again = cli("sweep", str(study), "--out", str(tmp_path / "out2"), "--records", str(records))
    assert again.returncode == 0, again.stderr + again.stdout
    assert "focal-sparse_point_robot-s0: done, recorded" in again.stdout
    assert not (tmp_path / "out2" / "runs").exists()
    assert len((records / "runs.jsonl").read_text().splitlines()) == 1
    # the same run name asked for with other bindings: the recorded run is not this study's
    more = 'bindings = ["loop.log_every = 3", "'
    study.write_text(study.read_text().replace('bindings = ["', more))
    other = cli("sweep", str(study), "--out", str(tmp_path / "out3"), "--records", str(records))
    assert other.returncode == 2, other.stderr + other.stdout
    said = " ".join(other.stderr.split())
    assert "holds a run 'focal-sparse_point_robot-s0' trained otherwise" in said
    assert 'bindings ["task_data.root' in said and "it cannot count as done" in said
    assert not (tmp_path / "out3" / "runs").exists()
    # the same choices, but the recipe edited since: the recorded row was built otherwise, so
    # its run is not done (decided by the configuration, not the name), refused before training
    study.write_text(study.read_text().replace(more, 'bindings = ["'))
    edited = tmp_path / "recipes"
    shutil.copytree(ROOT / "recipes", edited)
    with (edited / "focal.gin").open("a") as recipe:
        recipe.write("\nbrac.policy_mean_reg = 0.002\n")
    for extra in (("--dry-run",), ()):
        drifted = cli(
            "sweep", str(study), "--out", str(tmp_path / "out4"), "--records", str(records),
            *extra, env={"FOCALPP_RECIPES": str(edited)},
        )  # fmt: skip
        assert drifted.returncode == 2, drifted.stderr + drifted.stdout
        said = " ".join(drifted.stderr.split())
        assert "holds runs of rows this study would build otherwise" in said
        assert (
            "focal.gin on sparse_point_robot: agent.brac.policy_mean_reg: 0.002 v (not bound)"
            in said
        )
        assert not (tmp_path / "out4" / "runs").exists()
    assert len((records / "runs.jsonl").read_text().splitlines()) == 1
    # the same in the study's own folder: its finished run, of the same name, was built from the
    # recipe before the edit, so it is not done either; refused, and the run is kept as it was
    finished = tmp_path / "out" / "runs" / "focal-sparse_point_robot-s0"
    before = (finished / "eval.json").read_bytes()
    again = cli(
        "sweep", str(study), "--out", str(tmp_path / "out"), env={"FOCALPP_RECIPES": str(edited)}
    )
    assert again.returncode == 2, again.stderr + again.stdout
    said = " ".join(again.stderr.split())
    assert "holds runs that this study cannot count as done or resume" in said
    assert (
        "focal-sparse_point_robot-s0: built otherwise (today v its run.json: "
        "agent.brac.policy_mean_reg: 0.002 v (not bound))" in said
    )
    assert (finished / "eval.json").read_bytes() == before
    # a record whose portable runs computed their products with MKL (made before they moved to
    # OpenBLAS): a new seed would be another build beside them, refused before it trains
    line = json.loads((records / "runs.jsonl").read_text())
    del line["numerics"]["products"]
    (records / "runs.jsonl").write_text(json.dumps(line) + "\n")
    study.write_text(study.read_text().replace("seeds = [0]", "seeds = [0, 1]"))
    older = cli("sweep", str(study), "--out", str(tmp_path / "out5"), "--records", str(records))
    assert older.returncode == 2, older.stderr + older.stdout
    said = " ".join(older.stderr.split())
    assert "whose matrix products were MKL's (focal-sparse_point_robot-s0, commit" in said
    assert "git worktree add DIR" in said and not (tmp_path / "out5" / "runs").exists()


def test_a_study_whose_analysis_fails_says_so_and_records_nothing_half_done(tiny_data, tmp_path):
    """A run that trained but whose analysis failed makes the study fail, naming the run and
    the error, and stays out of the compact record (recorded, it would not be analysed again)."""
    plugin = tmp_path / "broken_analysis.py"
    plugin.write_text(
        "from registry import register\n\n\n"
        "@register('analysis', 'broken')\n"
        "class Broken:\n"
        "    section = None\n\n"
        "    def __call__(self, trained, figures):\n"
        "        raise ValueError('the probe found no tasks')\n"
    )
    study = tmp_path / "broken.toml"
    study.write_text(
        f"""
name = "broken"
recipes = ["focal.gin"]
envs = ["sparse_point_robot"]
seeds = [0]
scale = "tiny"
retries = 0
plugins = ["{plugin}"]
analyses = ["broken"]
bindings = ["task_data.root = '{tiny_data}'"]
"""
    )
    records = tmp_path / "results" / "broken"
    r = cli("sweep", str(study), "--out", str(tmp_path / "out"), "--records", str(records))
    assert r.returncode != 0
    assert "the analyses of 1 finished runs failed: focal-sparse_point_robot-s0" in r.stderr
    assert (tmp_path / "out" / "runs" / "focal-sparse_point_robot-s0" / "eval.json").exists()
    assert not (records / "runs.jsonl").exists()


def test_a_study_whose_analysis_breaks_its_contract_is_refused_before_it_trains(tmp_path):
    """An analysis naming a report section that does not exist is refused when the study is
    read, as tools/run.py refuses it, not after every run has trained."""
    plugin = tmp_path / "nameless_analysis.py"
    plugin.write_text(
        "from registry import register\n\n\n"
        "@register('analysis', 'nameless')\n"
        "class Nameless:\n"
        "    section = 'no_such_section'\n\n"
        "    def __call__(self, trained, figures):\n"
        "        return {}\n"
    )
    study = tmp_path / "nameless.toml"
    study.write_text(
        'name = "nameless"\nrecipes = ["focal.gin"]\nenvs = ["sparse_point_robot"]\n'
        f'seeds = [0]\nscale = "tiny"\nplugins = ["{plugin}"]\nanalyses = ["nameless"]\n'
    )
    r = cli("sweep", str(study), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "@nameless breaks the contract of kind 'analysis'" in r.stderr
    assert not (tmp_path / "out" / "runs").exists()


def test_a_study_takes_every_family_tools_run_takes(tmp_path):
    """A Meta-World family without a column file of its own (it reads its group's) is a study's
    env as it is tools/run.py's --env."""
    study = tmp_path / "hammer.toml"
    study.write_text('name = "h"\nrecipes = ["focal.gin"]\nenvs = ["ml1_hammer"]\nseeds = [0]\n')
    r = cli("sweep", str(study), "--dry-run", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "--env ml1_hammer" in r.stdout
