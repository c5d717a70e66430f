"""The run CLI as a user runs it: a real subprocess, exit codes, messages, the run directory."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, ROOT, TOY_RECIPES, cli


def run_cli(*args: str, recipes=TOY_RECIPES, cwd=None, process=False):
    return cli("run", *args, env={"FOCALPP_RECIPES": str(recipes)}, cwd=cwd, process=process)


def test_dry_run_prints_choices_and_creates_nothing(tmp_path):
    r = run_cli(
        "--recipe", "toy_row.gin", "--scale", "big", "--seed", "5", "--dry-run", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    for expected in ("toy_algorithm", "toy_env", "big", "scales/big.gin", "experiment.seed = 5"):
        assert expected in r.stdout
    assert list(tmp_path.iterdir()) == []


def test_run_writes_run_directory_and_headline(tmp_path):
    out = tmp_path / "run"
    r = run_cli("--recipe", "toy_row.gin", "--seed", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "toy total 36.0"  # 2*x + 10 for x in 0..2
    assert json.loads((out / "result.json").read_text()) == {
        "env": "toy_env",
        "seed": 2,
        "values": [10.0, 12.0, 14.0],
    }
    config = (out / "config.gin").read_text()
    assert "experiment.seed = 2" in config and "toy_linear.shift = 10.0" in config


def test_bindings_longer_than_a_file_name_are_recorded(tmp_path):
    out = tmp_path / "run"
    shift = "toy_linear.shift = 10.000000000000000000000000000000000000000000000000000000000"
    r = run_cli("--recipe", "toy_row.gin", "--out", str(out), *["--gin_param", shift] * 6)
    assert r.returncode == 0, r.stderr
    (described,) = [s for s in json.loads((out / "run.json").read_text())["sources"] if shift in s]
    assert len(described) > 255 and described.startswith("bindings:")


def test_default_run_directory_is_named_and_never_reused(tmp_path):
    for _ in range(2):
        r = run_cli("--recipe", "toy_row.gin", "--runs-root", str(tmp_path / "runs"))
        assert r.returncode == 0, r.stderr
    made = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(made) == 2
    assert all("-toy_row-toy_env-s0" in name for name in made)


def test_plugin_flag_makes_outside_component_usable(tmp_path):
    out = tmp_path / "run"
    r = run_cli(
        "--recipe", "lab_row.gin", "--plugin", str(DATA / "lab_plugin.py"), "--out", str(out)
    )
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "result.json").read_text())["values"] == [0.0, 0.5, 4.0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--recipe", "missing.gin"], "recipe file not found: missing.gin"),
        (["--recipe", "toy_row.gin", "--env", "nowhere"], "unknown --env 'nowhere'"),
        (["--recipe", "toy_row.gin", "--scale", "galactic"], "unknown --scale 'galactic'"),
        (
            ["--recipe", "toy_row.gin", "--gin_param", "toy_algorithm.encoder = @toy_sqare"],
            "Did you mean: toy_square",
        ),
        (
            ["--recipe", "toy_row.gin", "--gin_param", "toy_linear.gain = 2"],
            "has no argument 'gain'",
        ),
        (["--recipe", "lab_row.gin"], "unknown component or configurable 'lab_cube'"),
        (["--recipe", "toy_row.gin", "--plugin", "/nope/x.py"], "plugin file not found"),
        (
            ["--recipe", "toy_row.gin", "--gin_param", "experiment.analyses = ['context_grd']"],
            "unknown analysis 'context_grd'. did you mean: context_grid",
        ),
    ],
)
def test_bad_input_exits_nonzero_with_message_and_no_traceback(args, message, tmp_path):
    # A plugin that another test loaded stays registered in this process: the case of a plugin's
    # part asked for without --plugin gets a process of its own, as a user's run has.
    r = run_cli(*args, "--out", str(tmp_path / "run"), process="lab_cube" in message)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "run").exists()


def test_syntax_error_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.gin"
    bad.write_text("include 'toy_row.gin'\ntoy_linear.scale = 2 3\n")
    r = run_cli("--recipe", str(bad))
    assert r.returncode == 2
    assert f"gin syntax error in {bad} line 2" in r.stderr
    assert "Traceback" not in r.stderr


def test_existing_output_directory_is_refused_and_kept(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    r = run_cli("--recipe", "toy_row.gin", "--out", str(out))
    assert r.returncode == 2
    assert "already exists" in r.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_debug_shows_the_traceback():
    r = run_cli("--recipe", "missing.gin", "--debug")
    assert r.returncode != 0
    assert "Traceback" in r.stderr and "RecipeError" in r.stderr


def test_missing_required_binding_removes_fresh_run_dir(tmp_path):
    out = tmp_path / "run"
    recipe = tmp_path / "needs.gin"
    recipe.write_text("include 'toy_row.gin'\ntoy_algorithm.encoder = @toy_needs_width\n")
    plugin = tmp_path / "needs_plugin.py"
    plugin.write_text(
        "import gin\nfrom registry import register\n\n"
        "@register('transition_encoder', 'toy_needs_width')\nclass NeedsWidth:\n"
        "    def __init__(self, *, width=gin.REQUIRED):\n        self.width = width\n"
    )
    r = run_cli("--recipe", str(recipe), "--plugin", str(plugin), "--out", str(out))
    assert r.returncode == 2
    assert "needs a value for 'width'" in r.stderr
    assert not out.exists()


def test_run_builds_a_missing_dataset_on_first_use(tmp_path, monkeypatch):
    from tests.components.data.conftest import TINY

    monkeypatch.setenv("FOCALPP_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("PYTHONPATH", str(TOY_RECIPES))
    params = [a for b in TINY for a in ("--gin_param", b)]
    args = ["--recipe", str(DATA / "toy_dataset_row.gin"), *params]
    first = run_cli(*args, "--out", str(tmp_path / "run1"), recipes=ROOT / "recipes")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().splitlines()[-1] == "expert transitions: 4000"  # 100 tasks × 2 × 20
    manifest = tmp_path / "data" / "sparse_point_robot" / "checkpoints-s0" / "manifest.json"
    built = manifest.stat().st_mtime_ns
    second = run_cli(*args, "--out", str(tmp_path / "run2"), recipes=ROOT / "recipes")
    assert second.returncode == 0, second.stderr
    assert manifest.stat().st_mtime_ns == built  # reused, not rebuilt


def test_a_run_ends_with_the_analyses_its_recipe_asks_for(tiny_data, tmp_path):
    """`experiment.analyses`: the finished run is analysed as tools/analyze.py would (the
    context grid's own-data test cell is the run's final meta-test), and asking for analyses
    leaves the configuration's fingerprint, so the run still resumes and re-analyses."""
    out = tmp_path / "run"
    r = cli(
        "run", "--recipe", "csro.gin", "--env", "point_robot_wind", "--scale", "tiny",
        "--out", str(out), "--gin_param", f"task_data.root = '{tiny_data}'",
        "--gin_param", "experiment.analyses = ['context_grid']",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "context_grid: {'episodes':" in r.stdout
    grid = json.loads((out / "analysis.json").read_text())["context_grid"]
    final = json.loads((out / "eval.json").read_text())["test_return_mean"]
    assert grid["cells"]["test"]["own"]["mean"] == final
    assert json.loads((out / "run.json").read_text())["analyses"] == ["context_grid"]
    # its process stopped while the analyses ran (eval.json is written before them): resuming
    # the finished run runs them, and only them
    (out / "analysis.json").unlink()
    resumed = cli("run", "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert "has finished" in resumed.stdout and "context_grid: {'episodes':" in resumed.stdout
    assert json.loads((out / "analysis.json").read_text())["context_grid"] == grid
    again = cli("analyze", str(out), "--analyses", "embedding_variance")
    assert again.returncode == 0, again.stderr
    assert set(json.loads((out / "analysis.json").read_text())) == {
        "context_grid",
        "embedding_variance",
    }


def test_dry_run_says_who_set_each_binding_and_warns_of_a_row_binding_overridden(tmp_path):
    """Later files win: a row's own binding undone by a scale file is warned about; the
    bindings table names the file and line that set each binding and what it overrode."""
    row = tmp_path / "my_row.gin"
    row.write_text("include 'focal.gin'\nmeta_test.runs = 5\n")
    r = cli("run", "--recipe", str(row), "--scale", "tiny", "--dry-run")
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stderr.split())
    assert f"warning: {row} line 2: `meta_test.runs = 5` is overridden by" in said
    assert "scales/tiny.gin" in said and "`meta_test.runs = 1`" in said
    table = " ".join(r.stdout.split())
    assert "meta_test.runs = 1" in table and f"{row}:2: meta_test.runs = 5" in table


def test_an_override_the_column_file_declares_is_not_warned_about():
    """The Fwd-Back columns sample tasks with replacement whatever the row says (two tasks), and
    say so with `# overrides: focal.tasks_with_replacement`."""
    r = cli("run", "--recipe", "csro.gin", "--env", "sparse_ant_fwd_back", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    assert "csro.gin" in r.stdout and "focal.tasks_with_replacement = False" in r.stdout
