"""docs/EXTENDING.md's example runs as written (at the tiny scale), with no edit elsewhere."""

from __future__ import annotations

import json
import shlex

import torch

from tests.conftest import ROOT, cli

DOC = ROOT / "docs" / "EXTENDING.md"


def documented_command(recipe: str) -> list[str]:
    lines = [
        ln
        for ln in DOC.read_text().splitlines()
        if ln.startswith("python tools/run.py") and recipe in ln
    ]
    assert len(lines) == 1, f"EXTENDING.md should show exactly one run command of {recipe}"
    return shlex.split(lines[0])


def test_documented_example_runs(tiny_data, tmp_path):
    command = documented_command("residual_variance_ratio.gin")
    assert command[:2] == ["python", "tools/run.py"]
    out = tmp_path / "run"
    result = cli(
        "run",
        *command[2:],
        "--scale",
        "tiny",
        "--out",
        str(out),
        "--gin_param",
        f"task_data.root = '{tiny_data}'",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("test sparse return")
    config = (out / "config.gin").read_text()
    assert "@residual_mlp_encoder" in config and "@variance_ratio" in config
    trained = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("loss_variance_ratio" in r for r in trained)


def test_example_objective_matches_its_formula():
    import sys

    sys.path.insert(0, str(ROOT / "examples" / "extending"))
    from variance_ratio import VarianceRatio

    from components.objectives.embeddings import TaskEmbeddings

    query = torch.tensor([[[0.0], [2.0]], [[4.0], [6.0]]])  # tasks at 1 and 5, spread ±1
    emb = TaskEmbeddings(query=query, query_mean=query.mean(1), task=torch.tensor([0, 1]))
    out = VarianceRatio(eps=0.0)(emb)
    assert float(out["loss_variance_ratio"]) == 1.0 / 4.0  # within 1, between 4


def test_example_needs_no_edit_inside_the_package():
    """The example's names are unknown until its plugins are loaded (in a fresh process: this
    one may have loaded them for another test)."""
    recipe = "examples/extending/residual_variance_ratio.gin"
    result = cli("run", "--recipe", recipe, "--dry-run", process=True)
    assert result.returncode == 2
    assert "residual_mlp_encoder" in result.stderr


def test_documented_context_encoder_checks_and_trains_two_seeds_together(tiny_data, tmp_path):
    """Section 5: the new context encoder honours its kind's contract, and two seeds of its
    recipe train in one process, each with a momentum key encoder that is its own copy."""
    from components.experiment import load

    plugin = "examples/extending/score_pool.py"
    assert f"python tools/catalog.py --check {plugin}" in DOC.read_text()
    checked = cli("catalog", "--check", plugin)
    assert checked.returncode == 0 and "ok context_encoder score_pool" in checked.stdout
    command = documented_command("score_pool.gin")
    assert command[-2:] == ["--seeds", "0,1"]
    out = tmp_path / "seeds"
    result = cli(
        "run",
        *command[2:],
        *("--scale", "tiny", "--out", str(out)),
        *("--gin_param", f"task_data.root = '{tiny_data}'"),
    )
    assert result.returncode == 0, result.stderr
    keys = []
    for seed in (0, 1):
        run_dir = out / f"score_pool-sparse_point_robot-s{seed}"
        record = json.loads((run_dir / "run.json").read_text())
        assert record["trained_with_seeds"] == [0, 1] and "score_pool" in json.dumps(
            record["parts"]
        )
        trained = load(run_dir, plugins=[plugin])
        assert type(trained.key_encoder.copy).__name__ == "ScorePool"
        keys.append(trained.key_encoder.copy.score.weight.detach().clone())
    assert not torch.equal(*keys)  # each seed's own copy
