"""A dataset built in task shards and merged: every task's data is its shard's, the merged
dataset loads like any other, and missing or impossible shards are named."""

from __future__ import annotations

import json

import gin
import numpy as np
import pytest

from components import numerics
from components.data.shards import build_shard, merge_shards, shard_dir, shard_tasks
from components.data.store import DatasetError, dataset_dir, load_dataset
from components.transitions import FIELDS
from tests.components.data.conftest import TINY


@pytest.mark.parametrize(("n", "k"), [(100, 2), (100, 3), (2, 2), (10, 4)])
def test_shards_partition_the_tasks_in_order(n, k):
    parts = [shard_tasks(n, i, k) for i in range(k)]
    assert [t for p in parts for t in p] == list(range(n))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.fixture
def tiny_gin():
    gin.clear_config()
    gin.parse_config(TINY)
    yield
    gin.clear_config()


def test_merged_dataset_is_the_shards_task_by_task(tmp_path, tiny_gin):
    shards = [
        load_dataset(build_shard("sparse_point_robot", "checkpoints", 0, i, 3, root=tmp_path))
        for i in range(3)
    ]
    arrays = [{q: shard.quality(q) for q in shard.qualities} for shard in shards]  # before merge
    policies = [shard.policies() for shard in shards]
    merged = merge_shards("sparse_point_robot", "checkpoints", 0, 3, root=tmp_path)
    assert merged.path == dataset_dir(tmp_path, "sparse_point_robot", "checkpoints", 0, "shards3")
    assert merged.manifest["tag"] == "shards3" and "--merge 3" in merged.manifest["rebuild"]
    assert merged.manifest["built_in_shards"] == 3
    assert not shard_dir(merged.path, 0, 3).parent.exists()  # shards removed once merged
    assert merged.manifest["settings"] == shards[0].manifest["settings"]
    for quality in merged.qualities:
        whole = merged.quality(quality)  # validates checksums, shapes, finiteness
        assert len(whole.length) == 100
        for shard, loaded in zip(shards, arrays, strict=True):
            part, tasks = loaded[quality], shard.manifest["shard"]["tasks"]
            assert whole.length[tasks].tolist() == part.length.tolist()
            for local, task in enumerate(tasks):
                n = int(part.length[local])
                for f in FIELDS:
                    np.testing.assert_array_equal(
                        getattr(whole.transitions, f)[task, :n],
                        getattr(part.transitions, f)[local, :n],
                    )
        sources = merged.manifest["qualities"][quality]["sources"]
        assert sources == [s for sh in shards for s in sh.manifest["qualities"][quality]["sources"]]
    # the behaviour policies side by side too: task k's actor is its shard's
    kept = merged.policies()
    for shard, part in zip(shards, policies, strict=True):
        tasks = shard.manifest["shard"]["tasks"]
        for name, weights in kept.weights.items():
            np.testing.assert_array_equal(weights[:, tasks], part.weights[name])


def test_merge_names_missing_shards(tmp_path, tiny_gin):
    build_shard("sparse_point_robot", "checkpoints", 0, 1, 2, root=tmp_path)
    with pytest.raises(DatasetError, match=r"shard\(s\) \[0\] of 2"):
        merge_shards("sparse_point_robot", "checkpoints", 0, 2, root=tmp_path)


def test_impossible_shards_are_refused(tmp_path, tiny_gin):
    with pytest.raises(DatasetError, match="count ≥ 2"):
        build_shard("sparse_point_robot", "checkpoints", 0, 0, 1, root=tmp_path)
    with pytest.raises(DatasetError, match="has no tasks"):
        build_shard("sparse_cheetah_fwd_back", "checkpoints", 0, 2, 3, root=tmp_path)
    with pytest.raises(DatasetError, match="cannot be built in shards"):
        build_shard("sparse_point_robot", "relabeled", 0, 0, 2, root=tmp_path)


def test_a_missing_sharded_dataset_is_not_built_in_one_piece(tmp_path, tiny_gin):
    from components.data.shards import load_merged

    with pytest.raises(DatasetError, match=r"checkpoints-s0-shards2 does not exist.*--merge 2"):
        load_merged("sparse_point_robot", "checkpoints", 0, 2, root=tmp_path)
    assert not (tmp_path / "sparse_point_robot" / "checkpoints-s0-shards2").exists()


def test_a_conditioned_learner_is_not_built_in_shards(tmp_path, tiny_gin):
    gin.parse_config(["behaviour_sac.learner = 'conditioned'"])
    with pytest.raises(DatasetError, match="one network on every task together"):
        build_shard("sparse_point_robot", "checkpoints", 0, 0, 2, root=tmp_path)
    from components.data.protocols import BehaviourSettings

    with pytest.raises(DatasetError, match=r"learner = 'shared': expected one of"):
        BehaviourSettings(learner="shared")


def test_shards_of_other_numerics_are_not_merged(tmp_path, tiny_gin):
    """A shard built with other numerics or library versions (another machine's free kernels,
    say) is other arithmetic: the merge names it and keeps the shards."""
    for index in (0, 1):
        build_shard("sparse_point_robot", "checkpoints", 0, index, 2, root=tmp_path)
    merged = dataset_dir(tmp_path, "sparse_point_robot", "checkpoints", 0, "shards2")
    manifest = shard_dir(merged, 1, 2) / "manifest.json"
    record = json.loads(manifest.read_text())
    assert record["numerics"]["mode"] == "portable"  # in force when the shard trained
    assert record["numerics"]["products"] == "openblas"
    record["numerics"] = {**record["numerics"], "mode": "free", "torch_threads": 2}
    manifest.write_text(json.dumps(record))
    with pytest.raises(DatasetError, match="built with different numerics") as e:
        merge_shards("sparse_point_robot", "checkpoints", 0, 2, root=tmp_path)
    assert "--numerics portable" in str(e.value)
    assert shard_dir(merged, 0, 2).is_dir() and not merged.exists()


def test_a_shard_checks_its_numerics_before_it_trains(tmp_path, tiny_gin):
    """The numerics a shard asks for are checked (and put in force) before its first kernel: a
    mode that does not exist trains nothing and writes no shard."""
    with pytest.raises(numerics.NumericsError, match="numerics 'exact': expected one of"):
        build_shard("sparse_point_robot", "checkpoints", 0, 0, 2, root=tmp_path, mode="exact")
    merged = dataset_dir(tmp_path, "sparse_point_robot", "checkpoints", 0, "shards2")
    assert not shard_dir(merged, 0, 2).exists()
