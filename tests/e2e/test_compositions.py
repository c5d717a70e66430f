"""A composition is a value: several composed in one process, in any order, each run trains
what it was composed from and records its own parts, bindings and configuration digest."""

from __future__ import annotations

import json

import gin
import pytest

from components.experiment import run
from registry import compose


def composed(recipe: str, data_root, seed: int = 0):
    return compose(
        recipe,
        env="sparse_point_robot",
        scale="tiny",
        seed=seed,
        bindings=[f"task_data.root = '{data_root}'"],
    )


def recorded(run_dir) -> dict:
    return json.loads((run_dir / "run.json").read_text())


RECIPES = ("focal.gin", "focalpp.gin", "focalpp_contrastive.gin")


@pytest.fixture(scope="module")
def alone(tiny_data, tmp_path_factory) -> dict[str, dict]:
    """Each recipe's run.json, composed and run by itself."""
    out = tmp_path_factory.mktemp("alone")
    return {r: recorded(run(composed(r, tiny_data), out / r).run_dirs[0]) for r in RECIPES}


def test_runs_interleaved_with_compositions_train_their_own(alone, tiny_data, tmp_path):
    a = composed("focal.gin", tiny_data)
    b = composed("focalpp.gin", tiny_data)
    c = composed("focalpp_contrastive.gin", tiny_data)
    order = [(a, "focal.gin"), (c, "focalpp_contrastive.gin"), (b, "focalpp.gin")]
    for comp, recipe in order:  # the last composed (c) is not the first run
        record = recorded(run(comp, tmp_path / f"mixed-{recipe}").run_dirs[0])
        assert record["recipe"].endswith(recipe)
        assert record["parts"] == alone[recipe]["parts"], recipe
        assert record["config_digest"] == alone[recipe]["config_digest"], recipe
        assert record["effective_bindings"] == alone[recipe]["effective_bindings"], recipe
    assert "attention_blocks" not in json.dumps(alone["focal.gin"]["parts"])
    assert "attention_blocks" in json.dumps(alone["focalpp.gin"]["parts"])


def test_a_composition_outlives_a_cleared_gin(tiny_data, tmp_path):
    """What happens to gin between composing and running (a test fixture, a notebook cell
    clearing it) does not reach the run."""
    comp = composed("focal.gin", tiny_data)
    gin.clear_config()
    gin.parse_config("loop.steps = 1")
    finished = run(comp, tmp_path / "run")
    assert (
        recorded(finished.run_dirs[0])["config_digest"]
        == recorded(run(composed("focal.gin", tiny_data), tmp_path / "again").run_dirs[0])[
            "config_digest"
        ]
    )


def test_a_study_s_workers_run_each_recipe_s_own_composition(alone, tiny_data, tmp_path):
    """The same through the sweep: three recipes of one study, run by its workers (library
    calls in worker processes), each record its recipe's own parts, bindings and digest."""
    from tests.conftest import cli

    recipes = RECIPES
    study = tmp_path / "three.toml"
    study.write_text(
        f'name = "three"\nrecipes = {list(recipes)}\nenvs = ["sparse_point_robot"]\n'
        f'seeds = [0]\nscale = "tiny"\nbindings = ["task_data.root = \'{tiny_data}\'"]\n'
    )
    out = tmp_path / "study"
    r = cli("sweep", str(study), "--out", str(out), "--workers", "2")
    assert r.returncode == 0, r.stderr
    for recipe in recipes:
        swept = recorded(out / "runs" / f"{recipe.removesuffix('.gin')}-sparse_point_robot-s0")
        assert swept["recipe"] == recipe
        for key in ("parts", "config_digest", "effective_bindings"):
            assert swept[key] == alone[recipe][key], (recipe, key)
        assert swept["numerics"]["mode"] == "portable"  # a study's runs: pinned in its workers
