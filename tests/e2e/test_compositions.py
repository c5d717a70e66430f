"""A composition is a value: several composed in one process, in any order, each run trains
what it was composed from and records its own parts, bindings and configuration digest."""

from __future__ import annotations

import json

import gin

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


def test_runs_interleaved_with_compositions_train_their_own(tiny_data, tmp_path):
    alone = {}
    for recipe in ("focal.gin", "focalpp.gin", "focalpp_contrastive.gin"):  # each by itself
        alone[recipe] = recorded(
            run(composed(recipe, tiny_data), tmp_path / f"alone-{recipe}").run_dirs[0]
        )
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
