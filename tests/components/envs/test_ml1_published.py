"""Meta-World ML1 on the published recipe (`ml1pub_<name>`): one draw's 50 variations split
40 / 10, the scripted expert with N(0, 0.1) action noise, every episode kept, the goal hidden in
what is stored; built by the real tool at the tiny scale (episodes of 10 steps)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import components.envs  # noqa: F401 (registers the families)
from components.data.scripted import ScriptedRollouts, scripted_policy
from components.data.store import DatasetError, load_dataset
from components.envs.ml1 import ML1_NAMES, ml1_tasks, published_family_name
from registry import FocalppError, get, names
from tests.conftest import cli


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    store = tmp_path_factory.mktemp("ml1pub") / "store"
    r = cli("collect", "--env", "ml1pub_push", "--scale", "tiny", "--out", str(store))
    assert r.returncode == 0, r.stderr
    (path,) = (store / "ml1pub_push").iterdir()
    return store, load_dataset(path)


def test_every_ml1_environment_has_a_published_family():
    assert {published_family_name(n) for n in ML1_NAMES} <= set(names("env"))
    assert get("env", "ml1pub_reach_wall").env_name == "reach-wall-v3"


def test_the_split_is_one_draws_first_40_and_last_10():
    family = get("env", "ml1pub_push")(seed=0)
    drawn, _ = ml1_tasks("push-v3", 0)  # ML1's 50 training variations at the seed
    train, test = family.split_indices()
    assert (len(train), len(test)) == (40, 10)
    tasks = [tuple(t["rand_vec"]) for t in family.all_tasks()]
    assert tasks[:40] == list(drawn[:40]) and tasks[40:] == list(drawn[40:])
    other = get("env", "ml1pub_push")(seed=0, train_variations=30, test_variations=5)
    assert [tuple(t["rand_vec"]) for t in other.all_tasks()] == [*drawn[:30], *drawn[45:]]


@pytest.mark.parametrize("train, test", [(40, 45), (50, 1)])
def test_a_split_that_does_not_fit_the_draw_is_refused_naming_the_numbers(train, test):
    with pytest.raises(FocalppError, match=rf"{train} train \+ {test} test variations = "):
        get("env", "ml1pub_push")(seed=0, train_variations=train, test_variations=test)


def test_the_published_data_expert_only_every_episode_kept_goal_hidden(built):
    _, dataset = built
    manifest = dataset.manifest
    assert manifest["settings"]["tiers"] == ["expert"]
    assert manifest["settings"]["expert_noise"] == 0.1
    assert set(dataset.qualities) == {"expert"}
    expert = dataset.quality("expert")
    episodes, steps = manifest["settings"]["episodes"], 10  # the tiny scale: 2 of 10 steps
    assert episodes == 2
    # every episode kept: each of the 50 variations holds all its episodes, step for step
    assert expert.length.tolist() == [episodes * steps] * 50
    t = expert.transitions
    assert int(np.asarray(t.truncated).sum()) == 50 * episodes
    assert not np.asarray(t.obs)[..., -3:].any()  # the goal hidden in what is stored
    sources = manifest["qualities"]["expert"]["sources"]
    assert [s["noise"] for s in sources] == [0.1] * 50


def test_the_stored_actions_are_the_expert_told_the_goal_plus_noise_of_01(built):
    """The scripted policy, told each variation's goal, acting on the stored observations:
    what the stored actions add to it (where no clip touched them) is N(0, 0.1)."""
    from components.envs.ml1 import start_state

    _, dataset = built
    family = get("env", "ml1pub_push")(seed=0)
    policy = scripted_policy("push-v3")
    t = dataset.quality("expert").transitions
    obs, actions = np.asarray(t.obs, np.float64), np.asarray(t.action, np.float64)
    residuals = []
    for k, task in enumerate(family.all_tasks()):
        goal = start_state("push-v3", tuple(task["rand_vec"]))[1]
        for seen, action in zip(obs[k], actions[k], strict=True):
            seen = seen.copy()
            seen[-3:] = goal
            expert = policy.get_action(seen)
            free = (np.abs(action) < 1.0) & (np.abs(expert) < 1.0)
            residuals.append((action - expert)[free])
    noise = np.concatenate(residuals)
    assert len(noise) > 2_000
    assert abs(noise.mean()) < 0.01 and 0.09 < noise.std() < 0.11


def test_data_of_another_recipe_is_refused_by_its_manifest(built):
    from components.data.build import cached

    _, dataset = built
    family = get("env", "ml1pub_push")(seed=0)
    five = ScriptedRollouts(episodes=5, tiers=["expert"], episode_steps=10)
    with pytest.raises(DatasetError, match="episodes is 2 there, 5 here"):
        cached(dataset.path, five, "ml1pub_push", family)
    every_tier = ScriptedRollouts(episodes=2, episode_steps=10)
    with pytest.raises(DatasetError, match=r"tiers is \['expert'\] there, None here"):
        cached(dataset.path, every_tier, "ml1pub_push", family)
    # the same family with another split: other tasks than the manifest's
    same = ScriptedRollouts(**settings(dataset))
    narrower = get("env", "ml1pub_push")(seed=0, train_variations=40, test_variations=5)
    with pytest.raises(DatasetError, match="50 tasks, but ml1pub_push"):
        cached(dataset.path, same, "ml1pub_push", narrower)
    assert cached(dataset.path, same, "ml1pub_push", family).digest == dataset.digest


def settings(dataset) -> dict:
    stored = dict(dataset.manifest["settings"])
    stored.pop("protocol")
    return stored


def test_tiers_must_be_known_qualities():
    with pytest.raises(DatasetError, match=r"scripted.tiers = \['expert', 'best'\]"):
        ScriptedRollouts(tiers=["expert", "best"])


def test_manifest_records_the_split(built):
    _, dataset = built
    manifest = json.loads((dataset.path / "manifest.json").read_text())
    assert len(manifest["tasks"]) == 50
    assert manifest["family"] == "ml1pub_push"


def test_the_data_do_not_depend_on_the_workers_or_parts(monkeypatch, built):
    """Each episode draws its noise from its own generator: one process collecting every task
    and two processes collecting parts of a few tasks each give the same bytes."""
    import components.data.scripted as scripted

    _, dataset = built
    family = get("env", "ml1pub_push")(seed=0)
    tasks = [0, 1, 40, 49]

    def build(workers: int):
        protocol = ScriptedRollouts(**{**settings(dataset), "workers": workers})
        return protocol.build(family, seed=0, tasks=tasks).qualities["expert"]

    alone = build(1)
    monkeypatch.setattr(scripted, "PART_STEPS", 20)  # 4 parts of one task each
    parted = build(2)
    stored = dataset.quality("expert").transitions
    for field in ("obs", "action", "reward"):
        assert np.array_equal(getattr(alone.transitions, field), getattr(parted.transitions, field))
        assert np.array_equal(
            getattr(alone.transitions, field), np.asarray(getattr(stored, field))[tasks]
        )


def test_a_run_scores_against_every_dataset_episode_over_its_last_meta_tests(tmp_path, built):
    """The published score: each meta-test's test return ÷ the mean return of all the
    dataset's episodes (every variation's), and eval.json's mean of the last meta-tests."""
    from components.data.returns import dataset_returns
    from components.outputs.metrics import read_metrics
    from tests.conftest import run_row

    store, dataset = built
    run_row("focal.gin", "ml1pub_push", store, tmp_path / "run", bindings=("loop.score_over = 2",))
    evaluation = json.loads((tmp_path / "run" / "eval.json").read_text())
    pooled = dataset_returns(dataset.quality("expert"), range(50), pooled=True)
    references = list(evaluation["per_task_dataset_return"].values())
    assert references == pytest.approx([pooled] * len(references))
    assert evaluation["normalised_score"] == pytest.approx(evaluation["test_return_mean"] / pooled)
    evals = [r for r in read_metrics(tmp_path / "run") if r["kind"] == "eval"]
    last = evaluation["last_meta_tests"]
    assert last["count"] == 2 and last["steps"] == [r["step"] for r in evals[-2:]]
    for key in ("normalised_score", "success_rate", "test_return_mean"):
        assert last[key] == pytest.approx(np.mean([r[key] for r in evals[-2:]]))


def test_scoring_over_more_meta_tests_than_a_run_makes_is_refused(tmp_path, built):
    store, _ = built
    r = cli(
        "run", "--recipe", "focal.gin", "--env", "ml1pub_push", "--scale", "tiny",
        "--gin_param", f"task_data.root = '{store}'", "--gin_param", "loop.score_over = 3",
        "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "loop.score_over = 3: this run makes 2 meta-tests" in r.stderr
    assert not (tmp_path / "run").exists()


def test_the_published_data_go_to_minari_and_come_back_bit_for_bit(built, tmp_path, monkeypatch):
    """docs/DATASETS.md's ids: `focalpp/ml1pub_<name>/task-<k>-expert-v0`, one per variation."""
    minari = pytest.importorskip("minari")  # the optional extra; CI installs it
    from components.data.minari_bridge import export_quality, import_datasets
    from components.transitions import FIELDS

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _, dataset = built
    ids = export_quality(dataset, "expert", "focalpp/ml1pub_push", tasks=[0, 49])
    assert ids == ["focalpp/ml1pub_push/task-0-expert-v0", "focalpp/ml1pub_push/task-49-expert-v0"]
    loaded = minari.load_dataset(ids[1])
    assert loaded.total_episodes == 2 and loaded.total_steps == 20  # the tiny scale's episodes
    quality, meta = import_datasets(ids)
    original = dataset.quality("expert")
    for field in FIELDS:
        np.testing.assert_array_equal(
            getattr(quality.transitions, field), getattr(original.transitions, field)[[0, 49]]
        )
    assert (meta[0]["split"], meta[1]["split"]) == ("train", "test")
    assert meta[1]["task"] == dataset.tasks[49]
    env = loaded.recover_environment()  # the variation's own environment, goal hidden
    assert env.unwrapped.task == dataset.tasks[49] and env.unwrapped.family.n_test == 10
    env.close()


def test_reports_read_the_published_score_beside_the_published_numbers():
    from components.reports import metaworld
    from components.reports.readings import normalised

    assert metaworld.published("ml1pub_push", "focalpp") == metaworld.published(
        "ml1_push", "focalpp"
    )
    assert metaworld.hidden_goal("ml1pub_reach_wall") and not metaworld.hidden_goal("ml1pub_sweep")
    run = {"eval": {"normalised_score": 0.5, "last_meta_tests": {"normalised_score": 0.7}}}
    assert normalised(run) == 0.7  # the mean of the last meta-tests, where the run made it
    assert normalised({"eval": {"normalised_score": 0.5}}) == 0.5
