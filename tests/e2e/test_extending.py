"""docs/EXTENDING.md's example runs as written (at the tiny scale), with no edit elsewhere."""

from __future__ import annotations

import json
import shlex

import torch

from tests.conftest import ROOT, cli

DOC = ROOT / "docs" / "EXTENDING.md"


def documented_command() -> list[str]:
    lines = [ln for ln in DOC.read_text().splitlines() if ln.startswith("python tools/run.py")]
    assert len(lines) == 1, "EXTENDING.md should show exactly one run command"
    return shlex.split(lines[0])


def test_documented_example_runs(tiny_data, tmp_path):
    command = documented_command()
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
