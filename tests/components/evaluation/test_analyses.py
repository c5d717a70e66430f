"""The analyses on inputs with known answers, and as a user runs them on a real (tiny) run."""

from __future__ import annotations

import json

import matplotlib.image
import numpy as np
import pytest
import torch

from components.data.context import ContextLayout
from components.data.sampler import TensorSampler
from components.data.store import QualityData
from components.encoders.context import ContextEncoder
from components.evaluation.attention_weights import (
    AttentionWeights,
    attention_weights,
    weights_auc,
)
from components.evaluation.embedding_variance import embedding_variance, variance_over_draws
from components.evaluation.tsne import tsne_map
from components.first_edition.batch_gate import BatchGate
from components.outputs.figures import scatter_by_label
from components.transitions import Transitions
from tests.conftest import cli, run_row

LAYOUT = ContextLayout(obs_dim=2, act_dim=2, next_obs=True, sparse=True)


def dataset(tasks: int = 4, n: int = 30, *, constant: bool, rewarded_every: int = 3) -> QualityData:
    """Per-task transitions; with `constant`, all of a task's transitions are the same one."""
    rng = np.random.default_rng(0)
    shape = (tasks, 1 if constant else n)
    obs = np.broadcast_to(rng.normal(size=(*shape, 2)), (tasks, n, 2)).astype(np.float32)
    action = np.broadcast_to(rng.normal(size=(*shape, 2)), (tasks, n, 2)).astype(np.float32)
    sparse = np.zeros((tasks, n), np.float32)
    if not constant:
        sparse[:, ::rewarded_every] = 1.0
    transitions = Transitions(
        obs=obs.copy(),
        action=action.copy(),
        reward=np.zeros((tasks, n), np.float32),
        sparse_reward=sparse,
        next_obs=obs.copy(),
        terminated=np.zeros((tasks, n), bool),
        truncated=np.zeros((tasks, n), bool),
    )
    return QualityData(transitions, np.full(tasks, n))


def sampler(data: QualityData) -> TensorSampler:
    return TensorSampler(data, range(len(data.length)), generator=torch.Generator().manual_seed(1))


def test_variance_over_draws_known_values():
    same = torch.ones(5, 3, 4)
    assert torch.equal(variance_over_draws(same), torch.zeros(3))
    z = torch.tensor([[[0.0, 0.0]], [[2.0, 4.0]]])  # 2 draws, 1 task, 2 dims: variances 1 and 4
    assert variance_over_draws(z).tolist() == [2.5]


def test_identical_contexts_have_zero_embedding_variance():
    torch.manual_seed(0)
    encoder = ContextEncoder(sizes=LAYOUT.sizes, latent_dim=3)
    result = embedding_variance(
        encoder, sampler(dataset(constant=True)), LAYOUT, context_batch=8, draws=6
    )
    # zero but for rounding: a matrix product may round a row by its place in the matrix (the
    # OpenBLAS kernels of portable numerics do: components/products.py), so copies of one
    # context at other places give task vectors equal to about 1e-9, not to the bit
    assert 0.0 <= result.mean < 1e-15 and all(0.0 <= v < 1e-15 for v in result.per_task)
    varied = embedding_variance(
        encoder, sampler(dataset(constant=False)), LAYOUT, context_batch=8, draws=6
    )
    assert varied.mean > 0 and all(v > 0 for v in varied.per_task)


def test_auc_known_values():
    rewarded = np.array([True, True, False, False])
    assert weights_auc(np.array([3.0, 2.0, 1.0, 0.5]), rewarded) == 1.0
    assert weights_auc(np.array([0.0, 0.1, 1.0, 2.0]), rewarded) == 0.0
    assert weights_auc(np.ones(4), rewarded) == 0.5  # all tied: blind
    assert weights_auc(np.ones(4), np.ones(4, bool)) is None  # one class only


def test_auc_is_scikit_learns_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    weights = rng.integers(0, 6, size=300) / 5.0  # many ties
    rewarded = rng.random(300) < 0.2 + 0.1 * weights
    assert weights_auc(weights, rewarded) == pytest.approx(roc_auc_score(rewarded, weights))


def test_densities_integrate_to_one():
    rng = np.random.default_rng(0)
    result = AttentionWeights(rng.gamma(2.0, size=1000), rng.random(1000) < 0.3)
    d = result.densities(bins=20)
    widths = np.diff(d["edges"])
    for name in ("rewarded", "unrewarded"):
        assert np.isclose((d[name] * widths).sum(), 1.0)


def test_gate_at_initialisation_is_blind_to_reward():
    torch.manual_seed(0)
    encoder = ContextEncoder(sizes=LAYOUT.sizes, latent_dim=4, gate=BatchGate)
    result = attention_weights(
        encoder, sampler(dataset(constant=False)), LAYOUT, context_batch=12, draws=2
    )
    assert result.weights.shape == (4 * 2 * 12,)
    assert 0 < result.rewarded.mean() < 1
    assert np.allclose(result.weights, 1.0) and result.auc == 0.5


def test_tsne_keeps_separated_clusters_apart(tmp_path):
    rng = np.random.default_rng(0)
    centres = np.array([[0.0] * 5, [10.0] * 5, [-10.0] * 5])
    labels = np.repeat(np.arange(3), 40)
    points = centres[labels] + rng.normal(scale=0.3, size=(120, 5))
    task_map = tsne_map(points, labels, seed=0)
    assert task_map.points.shape == (120, 2)
    distance = np.linalg.norm(task_map.points[:, None] - task_map.points[None], axis=-1)
    np.fill_diagonal(distance, np.inf)
    nearest = labels[distance.argmin(1)]
    assert (nearest == labels).mean() > 0.95
    path = scatter_by_label(task_map.points, labels, title="t", path=tmp_path / "t.png")
    height, width = matplotlib.image.imread(path).shape[:2]
    assert 400 <= height <= 540 and 560 <= width <= 720  # 640 × 480 at DPI 100, cut to its ink


@pytest.fixture(scope="module")
def tiny_run(tiny_data, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("analysed") / "run"
    run_row("focalpp_batchwise.gin", "sparse_point_robot", tiny_data, run_dir)
    record = {
        "recipe": "focalpp_batchwise.gin",
        "env": "sparse_point_robot",
        "scale": "tiny",
        "seed": 0,
        "device": "cpu",
        "bindings": [f"task_data.root = '{tiny_data}'"],
    }
    (run_dir / "run.json").write_text(json.dumps(record))
    return run_dir


def test_analyze_cli_on_a_real_run(tiny_run):
    r = cli("analyze", str(tiny_run))
    assert r.returncode == 0, r.stderr
    results = json.loads((tiny_run / "analysis.json").read_text())
    assert set(results) == {
        "embedding_variance",
        "task_vectors",
        "attention_auc",
        "tsne",
        "distribution_shift",
        "ood_context",
        "context_grid",
        "representation_trend",
    }
    assert results["embedding_variance"]["embedding_variance"] >= 0
    # a tiny run logs too few steps to tell a trend: nothing is flagged, no term judged
    assert results["representation_trend"] == {"rising": [], "terms": {}}
    vectors = results["task_vectors"]
    assert vectors["parameters"] == ["goal angle"] and vectors["unit"] == "°"
    assert 0 <= vectors["decoding_error"] < 180 and 0 <= vectors["nearest_train_task_error"] < 180
    assert 0 <= vectors["identification_accuracy"] <= 1 and vectors["variance_ratio"] >= 0
    assert set(vectors["holding_error"]) == {"distance", "angle"}
    assert results["attention_auc"]["attention_gated"] in (True, False)
    shift = results["distribution_shift"]
    assert set(shift["shift"]) == {"random", "medium", "expert", "mixed"}
    # the run's own test quality reproduces its final meta-test exactly
    final = json.loads((tiny_run / "eval.json").read_text())["test_return_mean"]
    assert shift["shift"][shift["train_quality"]]["mean"] == final
    paper_final = json.loads((tiny_run / "eval.json").read_text())["paper_return_mean"]
    assert shift["shift"][shift["train_quality"]]["paper_mean"] == paper_final
    ood = results["ood_context"]
    assert ood["ood_applies"] and ood["in_distribution"] == final
    assert set(ood["donors"]) == {str(t) for t in range(80, 100)}  # the test tasks
    assert all(0 <= d < 80 for d in ood["donors"].values())  # donors: training tasks
    grid = results["context_grid"]
    # the test split's own-data cell is the run's final meta-test, exactly
    assert grid["cells"]["test"]["own"]["mean"] == final
    dense_final = json.loads((tiny_run / "eval.json").read_text())["dense_return_mean"]
    assert grid["cells"]["test"]["own"]["dense_mean"] == dense_final != final
    sources = {"own", "random", "medium", "expert", "mixed", "other_policy", "online"}
    sources.discard(shift["train_quality"])  # the test quality is "own"
    assert set(grid["cells"]["train"]) == set(grid["cells"]["test"]) == sources | {"own"}
    assert grid["tasks"]["test"] == list(range(80, 100)) and len(grid["tasks"]["train"]) == 20
    assert all(0 <= t < 80 for t in grid["tasks"]["train"])
    for split, donors in grid["donors"].items():  # another training task's policy per task
        assert all(int(t) != d and 0 <= d < 80 for t, d in donors.items()), split
    image = matplotlib.image.imread(tiny_run / "figures" / "tsne.png")
    assert 400 <= image.shape[0] <= 540 and 560 <= image.shape[1] <= 720 and image.std() > 0


def test_analyze_refuses_an_unknown_analysis(tiny_run):
    r = cli("analyze", str(tiny_run), "--analyses", "embeding_variance")
    assert r.returncode == 2 and "embedding_variance" in r.stderr


def test_crossovers_known_values():
    from components.reports.sections.variance_sparsity import crossovers

    x = [0.2, 0.4, 0.6, 0.8]
    assert crossovers(x, [1, 1, 1, 1], [2, 1.5, 0.5, 0]) == pytest.approx([0.5])
    assert crossovers(x, [1, 1, 1, 1], [2, 2, 2, 2]) == []
    assert crossovers(x, [0, 0, 0, 0], [1, -1, 1, -1]) == pytest.approx([0.3, 0.5, 0.7])


def test_donor_context_moves_transitions_and_relabels_rewards():
    import components.envs  # noqa: F401
    from components.envs.sparse import sparsify
    from components.evaluation.ood_context import donor_context
    from registry import get

    family = get("env", "sparse_point_robot")(seed=0)
    data = dataset(tasks=6, constant=False)  # 6 tasks of 30 transitions
    data.length[4] = 20
    moved = donor_context(family, data, tasks=[1, 3], donors=[4, 0])
    t, m = data.transitions, moved.transitions
    np.testing.assert_array_equal(m.obs[1], t.obs[4])  # task 1 now holds task 4's behaviour
    np.testing.assert_array_equal(m.action[3], t.action[0])
    assert moved.length.tolist() == [30, 20, 30, 30, 20, 30]
    goal = family.task_vectors([family.all_tasks()[1]])[0]
    expected = family.reward(t.obs[4], t.action[4], t.next_obs[4], goal[None, :])
    np.testing.assert_allclose(m.reward[1], expected, rtol=1e-6)  # the TEST task's reward
    np.testing.assert_allclose(m.sparse_reward[1], sparsify(expected, family.goal_radius))
    for untouched in (0, 2, 4, 5):
        np.testing.assert_array_equal(m.obs[untouched], t.obs[untouched])
        np.testing.assert_array_equal(m.reward[untouched], t.reward[untouched])


def test_analysis_from_a_plugin_file(tiny_run):
    from tests.conftest import DATA

    plugin = str(DATA / "step_count_analysis.py")
    r = cli("analyze", str(tiny_run), "--analyses", "step_count", "--plugin", plugin)
    assert r.returncode == 0, r.stderr
    results = json.loads((tiny_run / "analysis.json").read_text())
    assert results["step_count"] == {"steps_trained": 6}  # the tiny scale's last step


def test_an_analysis_that_fails_leaves_no_figures_folder_behind(tiny_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run, ignore=shutil.ignore_patterns("figures", "analysis.json"))
    plugin = tmp_path / "failing_analysis.py"
    plugin.write_text(
        "from registry import register\n\n\n"
        "@register('analysis', 'fails_half_way')\n"
        "class FailsHalfWay:\n"
        "    section = None\n\n"
        "    def __call__(self, trained, figures):\n"
        "        raise ValueError('measured nothing')\n"
    )
    r = cli("analyze", str(run), "--analyses", "fails_half_way", "--plugin", str(plugin))
    assert r.returncode != 0 and "measured nothing" in r.stderr
    assert not (run / "figures").exists() and not (run / "analysis.json").exists()


def test_the_library_analyses_finished_runs_only_and_holds_their_lock(tiny_run, tmp_path):
    """`components.experiment.analyse` refuses a run that has not finished (its checkpoint is
    not its final state, and the run would later merge its own results beside these), writing
    nothing; on a finished run it runs while holding the run's lock, and lets go of it."""
    import shutil

    from components.experiment import analyse
    from components.outputs.run_dir import run_lock
    from registry import FocalppError

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run, ignore=shutil.ignore_patterns("figures", "analysis.json"))
    (run / "eval.json").rename(tmp_path / "eval.json")
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(FocalppError, match=r"has not finished \(it has no eval.json\)"):
        analyse(run, ["embedding_variance"])
    assert sorted(p.name for p in run.iterdir()) == before
    (tmp_path / "eval.json").rename(run / "eval.json")
    with run_lock(run), pytest.raises(FocalppError, match="is training it"):
        analyse(run, ["embedding_variance"])  # the lock is held (here, as a trainer would)
    assert not (run / "analysis.json").exists()
    results = analyse(run, ["embedding_variance"])
    assert results["embedding_variance"]["embedding_variance"] >= 0
    assert not (run / ".lock").exists()  # given back
