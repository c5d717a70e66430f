"""tools/report.py groups finished runs by (env, scale, recipe) and averages over seeds."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import cli


@pytest.fixture(scope="module")
def tiny_runs(tiny_data, tmp_path_factory) -> Path:
    """Two seeds of FOCAL and of the batch-wise row on Sparse-Point-Robot, and of FOCAL and
    CSRO on Point-Robot-Wind (named `<recipe>-wind-s<seed>`), at the tiny scale, analysed."""
    runs = tmp_path_factory.mktemp("report-runs")
    cases = [(r, "sparse_point_robot", r) for r in ("focal", "focalpp_batchwise", "csro")]
    cases += [(r, "point_robot_wind", f"{r}-wind") for r in ("focal", "csro")]
    for recipe, env, name in cases:
        for seed in (0, 1):
            done = cli(
                "run",
                "--recipe",
                f"{recipe}.gin",
                "--env",
                env,
                "--scale",
                "tiny",
                "--seed",
                str(seed),
                "--out",
                str(runs / f"{name}-s{seed}"),
                "--gin_param",
                f"task_data.root = '{tiny_data}'",
            )
            assert done.returncode == 0, done.stderr
    for which, analyses in (
        ("*", "embedding_variance,task_vectors"),
        ("focalpp_batchwise-*", "distribution_shift,context_grid"),
        ("focal-s*", "context_grid"),
        ("csro-s*", "context_grid"),
        ("*-wind-*", "context_grid"),
    ):
        analysed = cli("analyze", *map(str, sorted(runs.glob(which))), "--analyses", analyses)
        assert analysed.returncode == 0, analysed.stderr
    return runs


def _records(runs: Path, recipe: str, name: str) -> list[dict]:
    return [json.loads((runs / f"{recipe}-s{s}" / name).read_text()) for s in (0, 1)]


def test_report_averages_seeds_of_real_runs(tiny_runs, tmp_path):
    record = json.loads((tiny_runs / "focal-s0" / "run.json").read_text())
    assert (record["env"], record["scale"], record["seed"]) == ("sparse_point_robot", "tiny", 0)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text(json.dumps(record))

    result = cli("report", str(tiny_runs), str(tmp_path), "--markdown", "--reps", "200")
    assert result.returncode == 0, result.stderr
    evals = _records(tiny_runs, "focal", "eval.json")
    means = [e["test_return_mean"] for e in evals]
    dense = [e["dense_return_mean"] for e in evals]
    paper = [e["paper_return_mean"] for e in evals]
    row = next(
        line
        for line in result.stdout.splitlines()
        if "| sparse_point_robot | tiny | focal |" in line
    )
    # the paper-comparable return, its interquartile mean (two seeds: none trimmed, so the
    # mean) with an interval around it, then the paper's number for this row and env
    assert row.startswith(
        f"| sparse_point_robot | tiny | focal | 0,1 | {np.mean(paper):.2f} ± {np.std(paper):.2f}"
        f" | {np.mean(paper):.2f} ["
    )
    low, high = map(float, re.findall(r"\[([-\d.]+), ([-\d.]+)\]", row)[0])
    assert round(min(paper), 2) <= low <= np.mean(paper) + 0.005
    assert np.mean(paper) - 0.005 <= high <= round(max(paper), 2)
    assert "] | 11.84 ± 1.05 | " in row
    # then each run's mean of its last three meta-tests (a tiny run has two), over seeds
    last = []
    for run in sorted(tiny_runs.glob("focal-s*")):
        logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        evals_logged = [r["paper_return_mean"] for r in logged if r["kind"] == "eval"]
        assert len(evals_logged) == 2
        last.append(np.mean(evals_logged[-3:]))
    assert f"] | 11.84 ± 1.05 | {np.mean(last):.2f} ± {np.std(last):.2f} | " in row
    assert f"| {np.mean(means):.2f} ± {np.std(means):.2f} |" in row
    assert f"| {np.mean(dense):.2f} ± {np.std(dense):.2f} |" in row
    # each test split's ceiling: an oracle's return on the 20 test tasks of data seed 0
    assert evals[0]["ceiling"] == evals[1]["ceiling"]
    ceiling_row = "| sparse_point_robot | 20 | 13.48 | 12.62 | -3.76 |"
    assert ceiling_row in result.stdout
    assert f"| {100 * np.mean(paper) / evals[0]['ceiling']['paper']:.0f}% |" in row
    assert "unfinished (no eval.json)" in result.stdout and "broken" in result.stdout


def test_report_orders_two_rows_by_probability_of_improvement(tiny_runs):
    result = cli("report", str(tiny_runs), "--markdown", "--reps", "200")
    assert result.returncode == 0, result.stderr
    ours = [e["paper_return_mean"] for e in _records(tiny_runs, "focalpp_batchwise", "eval.json")]
    focal = [e["paper_return_mean"] for e in _records(tiny_runs, "focal", "eval.json")]
    # P(X > Y) + ½ P(X = Y) over the four pairs of runs
    p = np.mean([(x > y) + 0.5 * (x == y) for x in ours for y in focal])
    prefix = (
        "| sparse_point_robot | tiny | - | return (paper-comparable) | focalpp_batchwise | focal"
    )
    row = next(line for line in result.stdout.splitlines() if line.startswith(prefix))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[6] == "2 v 2" and cells[8] == "12.54 > 11.84"
    point, low, high = map(float, re.findall(r"[-\d.]+", cells[7]))  # "P [low, high]"
    assert point == pytest.approx(p, abs=0.005) and low <= point <= high
    expected = (
        "same within noise" if low <= 0.5 <= high else "reproduced" if low > 0.5 else "reversed"
    )
    assert cells[9] == expected
    # these runs made two meta-tests: no reading of the last three
    assert "last 3 meta-tests | focalpp_batchwise" not in result.stdout
    # the variances are set against Table 2's numbers: lower is better there
    variance = next(
        line
        for line in result.stdout.splitlines()
        if line.startswith(
            "| sparse_point_robot | tiny | - | embedding variance | focalpp_batchwise"
        )
    )
    assert "| 7.73e-05 < 8.54e-05 |" in variance


def test_report_without_runs_is_an_error(tmp_path):
    result = cli("report", str(tmp_path))
    assert result.returncode == 2 and "no finished runs" in result.stderr


def test_report_tables_from_analyses_and_figures(tiny_runs, tmp_path):
    import matplotlib.image

    runs = tiny_runs
    variances = [
        a["embedding_variance"]["embedding_variance"]
        for a in _records(runs, "focalpp_batchwise", "analysis.json")
    ]
    result = cli(
        "report", str(runs), "--markdown", "--out", str(tmp_path / "report"), "--reps", "200"
    )
    assert result.returncode == 0, result.stderr
    assert "### Table 2: embedding variance" in result.stdout
    row = next(
        line
        for line in result.stdout.splitlines()
        if line.startswith("| sparse_point_robot | tiny | focalpp_batchwise | 0,1 | ")
        and "e-" in line
    )
    ratios = [
        a["task_vectors"]["variance_ratio"]
        for a in _records(runs, "focalpp_batchwise", "analysis.json")
    ]
    assert f"{np.mean(variances):.2e} ± {np.std(variances):.2e}" in row
    # the paper's number for this row and env, then the scale-free ratio
    ratio = f"{np.mean(ratios):.1e} ± {np.std(ratios):.1e} (context 256)"
    assert row.endswith(f"| 7.73e-05 | {ratio} |")
    assert "### Task vectors" in result.stdout
    # Table 3: one row per test-context quality, the paper's column "-" for this row
    shift_rows = [
        line
        for line in result.stdout.splitlines()
        if line.startswith("| sparse_point_robot | tiny | focalpp_batchwise | mixed | ")
    ]
    assert len(shift_rows) == 4
    # the paper has no number for this row: "-" beside the paper-comparable return
    assert all(" | 2 | " in r and " | - | " in r for r in shift_rows)
    # the drop: each seed's paper-comparable return with its own (mixed) context minus with
    # expert contexts, mean ± std over seeds
    shifts = [
        a["distribution_shift"]["shift"]
        for a in _records(runs, "focalpp_batchwise", "analysis.json")
    ]
    drops = [s["mixed"]["paper_mean"] - s["expert"]["paper_mean"] for s in shifts]
    expert = next(r for r in shift_rows if "| mixed | expert |" in r)
    assert expert.endswith(f"| {np.mean(drops):.2f} ± {np.std(drops):.2f} | - |")
    assert next(r for r in shift_rows if "| mixed | mixed |" in r).endswith("| - | - |")
    # the context grid: another task's behaviour policy against the task's own data, per seed
    grids = [
        a["context_grid"]["cells"]["test"]
        for a in _records(runs, "focalpp_batchwise", "analysis.json")
    ]
    change = [g["other_policy"]["paper_mean"] - g["own"]["paper_mean"] for g in grids]
    prefix = "| sparse_point_robot | tiny | focalpp_batchwise | test | other_policy | 2 | "
    grid_row = next(line for line in result.stdout.splitlines() if line.startswith(prefix))
    assert grid_row.endswith(f"| {np.mean(change):.2f} ± {np.std(change):.2f} |")
    # the successors' table sets UNICORN's dense numbers beside a dense drop: on a sparse
    # family the grid's dense cells, not the paper-comparable ones
    dense = [g["own"]["dense_mean"] - g["other_policy"]["dense_mean"] for g in grids]
    drops = [g["own"]["paper_mean"] - g["other_policy"]["paper_mean"] for g in grids]
    assert dense != drops
    section = result.stdout.split("### In- and out-of-distribution context")[1]
    prefix = "| sparse_point_robot | tiny | focalpp_batchwise | 2 | "
    row = [c.strip() for c in next(x for x in section.splitlines() if x.startswith(prefix))
           .strip("|").split("|")]  # fmt: skip
    assert row[6] == f"{np.mean(drops):.2f} ± {np.std(drops):.2f}"
    assert row[8] == f"{np.mean(dense):.2f} ± {np.std(dense):.2f}"
    report = (tmp_path / "report" / "report.md").read_text()
    assert "Table 1" in report
    for figure in ("iqm", "orders", "curves"):  # one question each (report_figures.py)
        name = f"{figure}-sparse_point_robot-tiny.png"
        assert name in report
        image = matplotlib.image.imread(tmp_path / "report" / name)
        assert min(image.shape[:2]) > 100 and image.std() > 0


def test_variance_sparsity_study_end_to_end(tmp_path, monkeypatch):
    """Started from the study's own directory with relative paths, as a user types them: the
    runs (processes of their own) find the store and write where the study looks."""
    import matplotlib.image

    monkeypatch.chdir(tmp_path)
    store = "store"
    variants = "".join(
        f'"r{r}" = ["relabeled.goal_radius = -{r}", "sparse_point_robot.goal_radius = -{r}", '
        f"\"task_data.tag = 'tiny{r}'\"]\n"
        for r in ("0.3", "1.0")
    )
    Path("study.toml").write_text(
        'name = "vs"\nrecipes = ["focal.gin", "focalpp_batchwise.gin"]\n'
        'envs = ["sparse_point_robot_relabeled"]\nseeds = [0]\nscale = "tiny"\n'
        'analyses = ["embedding_variance"]\n'
        # each run analyses itself at its end (`experiment.analyses`): no analysis jobs after
        f"bindings = [\"task_data.root = '{store}'\", "
        "\"experiment.analyses = ['embedding_variance', 'task_vectors']\"]\n"
        f"[variants]\n{variants}"
    )
    out = tmp_path / "study"
    swept = cli("sweep", "study.toml", "--out", "study")
    assert swept.returncode == 0, swept.stderr
    index = json.loads((out / "index.json").read_text())
    assert [r["analyses"] for r in index["runs"]] == ["done"] * 4
    assert not list((out / "logs").glob("analyze-*"))  # the runs did them
    runs = sorted((out / "runs").iterdir())
    # a run whose process was stopped while its own analyses ran: the study, run again,
    # finishes them (task_vectors is the run's alone, not the study's)
    (runs[0] / "analysis.json").unlink()
    again = cli("sweep", "study.toml", "--out", "study")
    assert again.returncode == 0, again.stderr
    assert set(json.loads((runs[0] / "analysis.json").read_text())) == {
        "embedding_variance",
        "task_vectors",
    }
    assert [r["how"] for r in json.loads((out / "index.json").read_text())["runs"]] == ["ran"] * 4
    sparsity = {
        run.name: json.loads((run / "analysis.json").read_text())["embedding_variance"]["sparsity"]
        for run in runs
    }
    assert (
        sparsity["focal-sparse_point_robot_relabeled-r0.3-s0"]
        > (sparsity["focal-sparse_point_robot_relabeled-r1.0-s0"])
    )  # a smaller goal radius leaves more transitions without reward
    result = cli(
        "report", str(out), "--markdown", "--out", str(tmp_path / "report"), "--reps", "200"
    )
    assert result.returncode == 0, result.stderr
    assert (
        "Variance-sparsity" in result.stdout and "focalpp_batchwise crosses focal" in result.stdout
    )
    assert "| sparse_point_robot_relabeled | tiny | focal (r0.3) |" in result.stdout
    figure = tmp_path / "report" / "variance-sparsity-sparse_point_robot_relabeled-tiny.png"
    height, width = matplotlib.image.imread(figure).shape[:2]
    assert 400 <= height <= 540 and 560 <= width <= 720  # 640 × 480 at DPI 100, cut to its ink


def test_report_sets_the_successors_drop_against_focals(tiny_runs):
    """The context grid's drop from the task's own data to another task's behaviour policy,
    per seed, in the successors' table, and CSRO against FOCAL in the orders, where the
    successors claim a smaller drop (on Point-Robot-Wind the wind shows in every context)."""
    result = cli("report", str(tiny_runs), "--markdown", "--reps", "200")
    assert result.returncode == 0, result.stderr
    drops = {}
    for recipe in ("focal", "csro"):
        grids = [
            a["context_grid"]["cells"]["test"]
            for a in _records(tiny_runs, f"{recipe}-wind", "analysis.json")
        ]
        drops[recipe] = [g["own"]["mean"] - g["other_policy"]["mean"] for g in grids]
    assert drops["csro"] != drops["focal"]  # real, different numbers to compare
    section = result.stdout.split("### In- and out-of-distribution context")[1]
    row = next(x for x in section.splitlines() if x.startswith("| point_robot_wind | tiny | csro"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "2"
    assert cells[6] == f"{np.mean(drops['csro']):.2f} ± {np.std(drops['csro']):.2f}"
    assert cells[8] == cells[6]  # a dense family: its drop is the dense drop
    assert cells[9:] == ["-", "-"]  # UNICORN's Table 2 has no point robot
    prefix = "| point_robot_wind | tiny | - | drop, own → other_policy context (test) | csro"
    line = next(x for x in result.stdout.splitlines() if x.startswith(prefix))
    order = [c.strip() for c in line.strip("|").split("|")]
    # P(CSRO's drop < FOCAL's) + ½ P(equal) over the four pairs of runs
    p = np.mean([(x < y) + 0.5 * (x == y) for x in drops["csro"] for y in drops["focal"]])
    point, low, high = map(float, re.findall(r"[-\d.]+", order[7]))
    assert point == pytest.approx(p, abs=0.005) and low <= point <= high
    assert order[8] == "smaller (the successors' claim)"
    expected = (
        "same within noise" if low <= 0.5 <= high else "reproduced" if low > 0.5 else "reversed"
    )
    assert order[9] == expected
    # a sparse family: the same test again in dense return (UNICORN's metric), from the
    # grid's dense cells
    dense = {}
    for recipe in ("focal", "csro"):
        grids = [
            a["context_grid"]["cells"]["test"] for a in _records(tiny_runs, recipe, "analysis.json")
        ]
        dense[recipe] = [g["own"]["dense_mean"] - g["other_policy"]["dense_mean"] for g in grids]
    prefix = (
        "| sparse_point_robot | tiny | - | drop, own → other_policy context (test), dense | csro"
    )
    line = next(x for x in result.stdout.splitlines() if x.startswith(prefix))
    p = np.mean([(x < y) + 0.5 * (x == y) for x in dense["csro"] for y in dense["focal"]])
    point = float(re.findall(r"[-\d.]+", line.split("|")[8])[0])
    assert point == pytest.approx(p, abs=0.005)
    wind = "| point_robot_wind | tiny | - | drop, own → other_policy context (test), dense"
    assert not any(x.startswith(wind) for x in result.stdout.splitlines())  # dense family


def test_a_seed_run_again_with_other_bindings_is_flagged_then_labelled_apart(tiny_runs, tmp_path):
    """A probe of one seed with other bindings beside a study's runs: not a copy (no refusal),
    but the row would mix configurations; the warning says so, and a label splits the row."""
    probe = tmp_path / "focal-s0-probe"
    shutil.copytree(tiny_runs / "focal-s0", probe)
    record = json.loads((probe / "run.json").read_text())
    record["bindings"] = [*record["bindings"], "brac.lr = 3e-4"]
    (probe / "run.json").write_text(json.dumps(record))
    runs = [str(tiny_runs / "focal-s0"), str(tiny_runs / "focal-s1"), str(probe)]
    mixed = cli("report", *runs)
    assert mixed.returncode == 0, mixed.stderr
    assert "mixes runs of other bindings, seed 0 among them" in " ".join(mixed.stderr.split())
    record["label"] = "lr 3e-4"
    (probe / "run.json").write_text(json.dumps(record))
    apart = cli("report", *runs)
    assert apart.returncode == 0 and "mixes" not in apart.stderr
    assert "focal (lr 3e-4)" in apart.stdout


def test_rows_read_from_different_builds_of_a_dataset_are_flagged(tiny_runs, tmp_path):
    """A seed trained on a dataset rebuilt elsewhere into other numbers (its content digest
    differs): the report warns that the rows compare unlike data, names the run, and refuses
    the order that would compare them."""
    runs = [tiny_runs / "focal-s0", tiny_runs / "focalpp_batchwise-s0"]
    same = cli("report", *map(str, runs))
    assert same.returncode == 0 and "different builds" not in same.stderr, same.stderr
    other = tmp_path / "focalpp_batchwise-s1"
    shutil.copytree(tiny_runs / "focalpp_batchwise-s1", other)
    record = json.loads((other / "run.json").read_text())
    assert len(record["dataset"]["content_sha256"]) == 64
    record["dataset"]["content_sha256"] = "f" * 64
    (other / "run.json").write_text(json.dumps(record))
    mixed = cli("report", *map(str, runs), str(other))
    assert mixed.returncode == 2 and "Traceback" not in mixed.stderr
    warning = " ".join(mixed.stderr.split())
    assert "read 2 different builds of dataset sparse_point_robot/" in warning
    assert "ffffffffffff… (1 run: focalpp_batchwise-s1)" in warning
    assert "focalpp_batchwise against focal compares runs built differently, in dataset" in warning


def test_orders_read_from_the_last_three_meta_tests(tiny_data, tmp_path):
    """Runs with three meta-tests or more: the order is also tested on the mean of each run's
    last three, beside the final one's."""
    for recipe in ("focal", "focalpp_batchwise"):
        for seed in (0, 1):
            done = cli(
                "run",
                *("--recipe", f"{recipe}.gin", "--env", "sparse_point_robot", "--scale", "tiny"),
                *("--seed", str(seed), "--out", str(tmp_path / f"{recipe}-s{seed}")),
                *("--gin_param", f"task_data.root = '{tiny_data}'"),
                *("--gin_param", "loop.eval_every = 2"),
            )
            assert done.returncode == 0, done.stderr
    result = cli("report", str(tmp_path), "--markdown", "--reps", "200")
    assert result.returncode == 0, result.stderr

    def last_three(recipe: str) -> list[float]:
        means = []
        for seed in (0, 1):
            log = (tmp_path / f"{recipe}-s{seed}" / "metrics.jsonl").read_text().splitlines()
            tests = [r["paper_return_mean"] for r in map(json.loads, log) if r["kind"] == "eval"]
            assert len(tests) == 3
            means.append(np.mean(tests[-3:]))
        return means

    ours, focal = last_three("focalpp_batchwise"), last_three("focal")
    p = np.mean([(x > y) + 0.5 * (x == y) for x in ours for y in focal])
    prefix = (
        "| sparse_point_robot | tiny | - | return, last 3 meta-tests | focalpp_batchwise | focal"
    )
    row = next(line for line in result.stdout.splitlines() if line.startswith(prefix))
    point = float(re.findall(r"[-\d.]+", row.strip("|").split("|")[7])[0])
    assert point == pytest.approx(p, abs=0.005)


def test_rows_of_portable_and_free_numerics_side_by_side_are_flagged(tiny_runs, tmp_path):
    """A run of free numerics (its CPU's own bits) beside portable ones: the report says the
    rows compare the same computation only on that CPU, counts each kind, and refuses the order
    that would compare them."""
    runs = [tiny_runs / "focal-s0", tiny_runs / "focalpp_batchwise-s0"]
    same = cli("report", *map(str, runs))
    assert same.returncode == 0 and "mix numerics" not in same.stderr, same.stderr
    other = tmp_path / "focalpp_batchwise-s1"
    shutil.copytree(tiny_runs / "focalpp_batchwise-s1", other)
    record = json.loads((other / "run.json").read_text())
    assert record["numerics"]["mode"] == "portable"  # the suite runs with portable numerics
    del record["numerics"]  # as a run recorded before numerics were: it trained free
    (other / "run.json").write_text(json.dumps(record))
    mixed = cli("report", *map(str, runs), str(other))
    assert mixed.returncode == 2 and "Traceback" not in mixed.stderr
    warning = " ".join(mixed.stderr.split())
    assert "mix numerics (free: 1 run (focalpp_batchwise-s1); portable: 2 runs" in warning
    assert (
        "in numerics: portable (focal, focal-s0) v free (focalpp_batchwise, focalpp_batchwise-s1)"
        in warning
    )
