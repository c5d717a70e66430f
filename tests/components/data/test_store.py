"""The dataset store: manifests, determinism, and every kind of bad dataset."""

from __future__ import annotations

import json
import shutil

import gin
import numpy as np
import pytest

from components.data import store
from components.data.build import ensure_dataset
from components.data.store import DatasetError, load_dataset
from registry import WriteError
from tests.components.data.conftest import build_tiny


def copy_of(dataset, tmp_path):
    target = tmp_path / dataset.path.parent.name / dataset.path.name
    shutil.copytree(dataset.path, target)
    return target


def test_manifest_records_what_a_user_needs(tiny_dataset):
    m = tiny_dataset.manifest
    assert (m["format"], m["family"], m["protocol"], m["seed"]) == (
        "focalpp-dataset/1",
        "sparse_point_robot",
        "checkpoints",
        0,
    )
    assert len(m["tasks"]) == 100 and "goal" in m["tasks"][0]
    assert (len(m["split"]["train"]), len(m["split"]["test"])) == (80, 20)
    assert set(m["qualities"]) == {"random", "medium", "expert", "mixed"}
    expert = m["qualities"]["expert"]
    assert expert["per_task_counts"] == [40] * 100  # 2 episodes × 20 steps
    assert expert["files"]["obs"]["shape"] == [100, 40, 2]
    assert expert["files"]["obs"]["dtype"] == "float32"
    assert expert["files"]["terminated"]["dtype"] == "bool"
    assert len(expert["files"]["obs"]["sha256"]) == 64
    assert expert["sources"][0]["checkpoint_steps"] == [60]
    assert m["qualities"]["random"]["sources"][0]["checkpoint_steps"] == [0]
    assert m["qualities"]["mixed"]["sources"][0]["checkpoint_steps"] == [0, 30, 60]
    assert m["settings"]["env_steps"] == 60
    assert "collect.py --env sparse_point_robot" in m["rebuild"]
    assert m["focalpp_version"]


def test_quality_arrays_are_consistent(tiny_dataset):
    q = tiny_dataset.quality("mixed")
    assert q.transitions.obs.shape == (100, 120, 2) and q.length.tolist() == [120] * 100
    t = q.transitions
    np.testing.assert_allclose(
        t.sparse_reward, np.where(t.reward > -0.2, (t.reward + 0.2) / 0.2, 0), atol=1e-6
    )
    assert t.truncated.sum() == 100 * 6  # one time-limit end per episode


def test_same_seed_same_checksums(tiny_dataset, tmp_path):
    again = build_tiny(tmp_path)

    def files(d):
        return {
            q: {f: e["sha256"] for f, e in v["files"].items()}
            for q, v in d.manifest["qualities"].items()
        }

    assert files(again) == files(tiny_dataset)
    # built into another store: another build (its manifest names the store), the same data
    assert again.manifest["rebuild"] != tiny_dataset.manifest["rebuild"]
    assert again.digest != tiny_dataset.digest
    assert again.content_digest == tiny_dataset.content_digest
    other = build_tiny(tmp_path, seed=1)
    assert files(other) != files(tiny_dataset)
    assert other.content_digest != tiny_dataset.content_digest


def test_reuse_and_settings_mismatch(tiny_dataset):
    root = tiny_dataset.path.parent.parent
    assert build_tiny(root).path == tiny_dataset.path  # cached: no rebuild
    with pytest.raises(DatasetError, match="was built with other settings"):
        build_tiny(root, extra=["behaviour_sac.lr = 0.01"])


def test_corrupted_file_names_the_file(tiny_dataset, tmp_path):
    path = copy_of(tiny_dataset, tmp_path)
    target = path / "expert" / "reward.npy"
    data = bytearray(target.read_bytes())
    data[-5] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match=r"expert/reward.npy: checksum mismatch.*rebuild"):
        load_dataset(path).quality("expert")
    load_dataset(path).quality("random")  # other qualities are still fine


def test_truncated_file(tiny_dataset, tmp_path):
    path = copy_of(tiny_dataset, tmp_path)
    target = path / "medium" / "obs.npy"
    target.write_bytes(target.read_bytes()[:100])
    with pytest.raises(DatasetError, match=r"medium/obs.npy: checksum mismatch"):
        load_dataset(path).quality("medium")


def rewrite(path, quality, field, array):
    """Replace an array and its checksum, as a buggy writer would."""
    np.save(path / quality / f"{field}.npy", array)
    manifest = json.loads((path / "manifest.json").read_text())
    entry = manifest["qualities"][quality]["files"][field]
    entry["sha256"] = store._sha256(path / quality / f"{field}.npy")
    (path / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def test_nan_data(tiny_dataset, tmp_path):
    path = copy_of(tiny_dataset, tmp_path)
    obs = np.load(path / "expert" / "next_obs.npy")
    obs[3, 7, 1] = np.nan
    rewrite(path, "expert", "next_obs", obs)
    with pytest.raises(
        DatasetError, match=r"expert/next_obs.npy: non-finite value .* at index \[3, 7, 1\]"
    ):
        load_dataset(path).quality("expert")


def test_wrong_shape(tiny_dataset, tmp_path):
    path = copy_of(tiny_dataset, tmp_path)
    obs = np.load(path / "expert" / "obs.npy")
    manifest = rewrite(path, "expert", "obs", obs[:, :10])
    assert manifest["qualities"]["expert"]["files"]["obs"]["shape"] == [100, 40, 2]
    with pytest.raises(
        DatasetError, match=r"expert/obs.npy: shape \[100, 10, 2\].*manifest says \[100, 40, 2\]"
    ):
        load_dataset(path).quality("expert")


def test_unknown_format_version(tiny_dataset, tmp_path):
    path = copy_of(tiny_dataset, tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["format"] = "focalpp-dataset/99"
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(
        DatasetError, match=r"unknown dataset format 'focalpp-dataset/99'.*rebuild with"
    ):
        load_dataset(path)
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(DatasetError, match=r"manifest.json is not valid JSON"):
        load_dataset(path)


def test_missing_quality_or_split(tiny_dataset):
    with pytest.raises(
        DatasetError,
        match=r"no quality 'perfect'; it has \['random', 'medium', 'expert', 'mixed'\]",
    ):
        tiny_dataset.quality("perfect")
    with pytest.raises(DatasetError, match=r"no split 'validation'"):
        tiny_dataset.split_indices("validation")


def test_half_written_directory(tmp_path):
    half = tmp_path / "sparse_point_robot" / "checkpoints-s0"
    (half / "expert").mkdir(parents=True)
    with pytest.raises(
        DatasetError,
        match=r"half-written.*collect.py --env sparse_point_robot --protocol checkpoints --seed 0",
    ):
        load_dataset(half)
    with pytest.raises(DatasetError, match="half-written"):
        ensure_dataset("sparse_point_robot", "checkpoints", 0, root=tmp_path)


def test_missing_dataset(tmp_path):
    with pytest.raises(
        DatasetError, match=r"no dataset at .*build it with: python tools/collect.py"
    ):
        load_dataset(tmp_path / "walker_params" / "replay-s2")


def test_interrupted_write_leaves_nothing(tmp_path, monkeypatch):
    calls = {"n": 0}
    real_save = np.save

    def failing_save(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError("disk full")
        return real_save(*args, **kwargs)

    monkeypatch.setattr(store.np, "save", failing_save)
    with pytest.raises(WriteError, match=r"cannot write .*sparse_point_robot.*disk full"):
        build_tiny(tmp_path)
    family_dir = tmp_path / "sparse_point_robot"
    assert list(family_dir.iterdir()) == []  # no final directory, no temporary one


@pytest.mark.parametrize("family", ["sparse_ant_fwd_back", "walker_params"])
def test_mujoco_collection_end_to_end(family, tiny_data):
    """The tiny scale's own dataset of the family, as the tiny runs build it (and share it with
    them in the session's store)."""
    from registry.recipes import compose_columns

    compose_columns(family, "tiny")
    try:
        dataset = ensure_dataset(family, "checkpoints", 0, root=tiny_data, tag="tiny", scale="tiny")
        episodes = gin.query_parameter("checkpoints.episodes")
    finally:
        gin.clear_config()
    q = dataset.quality("mixed")
    n_tasks = len(dataset.tasks)
    assert (
        q.transitions.obs.shape[0] == n_tasks
        and q.transitions.obs.shape[2] == dataset.manifest["obs_dim"]
    )
    assert (q.length > 0).all() and (q.length <= 3 * episodes * 200).all()
    real = np.arange(q.transitions.obs.shape[1])[None] < q.length[:, None]
    ends = (q.transitions.terminated | q.transitions.truncated) & real
    assert ends.sum() == n_tasks * 3 * episodes  # every saved episode ends exactly once
    if family == "walker_params":  # random walkers fall: ragged tasks, padded
        assert q.transitions.terminated[real].any() and q.length.min() < q.length.max()
    assert not q.transitions.obs[~real].any()  # padding is zeros, never read by samplers


def test_medium_is_halfway_by_sparse_return_else_dense():
    from components.data.behaviour import Rollouts
    from components.data.protocols import CheckpointRollouts
    from components.transitions import Transitions
    from registry import get

    family = get("env", "sparse_cheetah_fwd_back")()  # goal radius 6

    def run(dense, sparse):  # K = 2 tasks, 1 episode of 2 steps each
        z = np.zeros((2, 2))
        t = Transitions(z[..., None], z[..., None], z, z, z[..., None], z > 0, z > 0)
        return Rollouts(
            t, np.ones((2, 2), bool), np.array(dense)[:, None], np.array(sparse)[:, None]
        )

    runs = [  # task 0: sparse separates (0 → 10, halfway 5); task 1: sparse all zero
        run([-50, -50], [0, 0]),
        run([0, 20], [4, 0]),
        run([10, -10], [9, 0]),
        run([100, 80], [10, 0]),
    ]
    collected = CheckpointRollouts(checkpoints=4, episodes=1)._qualities(family, runs, np.arange(4))
    medium = collected.sources["medium"]
    assert medium[0]["checkpoint_steps"] == [1] and medium[0]["ranked_by"] == "sparse_return"
    assert medium[1]["checkpoint_steps"] == [1] and medium[1]["ranked_by"] == "return"  # 20 ≈ 15
