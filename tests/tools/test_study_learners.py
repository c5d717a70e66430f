"""The test-context studies compare the learners alone: in every study with an `iql_shared`
variant, those rows run IQL at the reward scale, learning rate and discount that the environment
column and scale bind for BRAC, and its `iql` rows at IQL's own, so brac v iql_shared changes
the learner only and iql_shared v iql the settings only (docs/DECISIONS.md §6)."""

from __future__ import annotations

import inspect
from pathlib import Path

import gin
import pytest

from components.rl.brac import BRAC
from components.rl.iql import IQL
from components.sweep.study import load_study
from registry import compose

STUDIES = sorted((Path(__file__).resolve().parents[2] / "studies").glob("*.toml"))
SHARED = [
    (path, env)
    for path in STUDIES
    if "iql_shared" in (study := load_study(path)).variants
    for env in study.envs
]
SETTINGS = ("reward_scale", "lr", "discount")


def settings(path: Path, env: str, variant: str) -> dict:
    """learner -> its settings, as a run of the study's FOCAL row, `env` and `variant` composes
    them (an unbound one: the constructor's default); "agent": the learner it builds."""
    study = load_study(path)
    spec = next(
        s for s in study.runs() if (s.variant, s.recipe, s.env) == (variant, "focal.gin", env)
    )
    compose(spec.recipe, env=spec.env, scale=study.scale, seed=spec.seed,
            bindings=list(spec.bindings), plugins=list(spec.plugins))  # fmt: skip
    found = {}
    for name, cls in (("brac", BRAC), ("iql", IQL)):
        defaults = inspect.signature(cls.__init__).parameters
        found[name] = {key: bound(f"{name}.{key}", defaults[key].default) for key in SETTINGS}
    agent = bound("focal.agent", None)
    found["agent"] = "brac" if agent is None else agent.selector  # the trainer's default: BRAC
    return found


def bound(name: str, default):
    try:
        return gin.query_parameter(name)
    except ValueError:  # not bound: the constructor's default
        return default


def test_the_test_context_studies_compare_the_learners_alone():
    assert {p.stem for p, _ in SHARED} >= {"test_contexts_point_robot", "test_contexts_ml1"}


@pytest.mark.parametrize("path, env", SHARED, ids=lambda x: getattr(x, "stem", x))
def test_the_shared_variant_runs_iql_at_brac_s_settings(path, env):
    found = settings(path, env, "iql_shared")
    assert found["agent"] == "iql"
    assert found["iql"] == found["brac"], (
        f"{path.name} on {env}: IQL {found['iql']}, BRAC {found['brac']}"
    )


@pytest.mark.parametrize("path, env", SHARED, ids=lambda x: getattr(x, "stem", x))
def test_the_other_variants_keep_each_learner_s_own(path, env):
    for variant, agent in (("iql", "iql"), ("brac", "brac")):
        found = settings(path, env, variant)
        assert found["agent"] == agent
        assert (found["iql"]["reward_scale"], found["iql"]["lr"]) == (1.0, 3e-4)  # IQL's own
        assert found["iql"]["discount"] == found["brac"]["discount"]  # each column binds both
    assert found["brac"] != found["iql"]  # the settings differ: the shared variant changes them


def test_the_point_robot_s_shared_settings_are_brac_s_at_the_cpu_scale():
    path = next(p for p, _ in SHARED if p.stem == "test_contexts_point_robot")
    found = settings(path, "sparse_point_robot", "iql_shared")
    assert found["iql"] == {"reward_scale": 100.0, "lr": 3e-3, "discount": 0.9}
