from __future__ import annotations

import numpy as np
import pytest

minari = pytest.importorskip("minari")  # the optional extra; CI installs it

from components.data.minari_bridge import episodes_of, export_quality, import_datasets  # noqa: E402
from components.transitions import FIELDS  # noqa: E402


@pytest.fixture
def minari_root(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def test_round_trip_through_minari(tiny_dataset, minari_root):
    ids = export_quality(tiny_dataset, "mixed", "focalpp-test", tasks=[3, 90])
    assert ids == ["focalpp-test/task-3-mixed-v0", "focalpp-test/task-90-mixed-v0"]
    loaded = minari.load_dataset(ids[1])  # a plain Minari user sees episodes and metadata
    assert loaded.total_episodes == 6 and loaded.total_steps == 120
    quality, meta = import_datasets(ids)
    original = tiny_dataset.quality("mixed")
    for field in FIELDS:
        np.testing.assert_array_equal(
            getattr(quality.transitions, field), getattr(original.transitions, field)[[3, 90]]
        )
    assert quality.length.tolist() == [120, 120]
    assert meta[0]["task"] == tiny_dataset.tasks[3] and meta[0]["quality"] == "mixed"
    assert (meta[0]["split"], meta[1]["split"]) == ("train", "test")


def test_relabeled_transitions_become_one_step_episodes(tiny_dataset):
    t = tiny_dataset.quality("expert").transitions.map(lambda x: x[0])
    assert len(episodes_of(t, 40)) == 2  # two 20-step episodes
    shuffled = t.map(lambda x: x[np.random.default_rng(0).permutation(40)])
    assert len(episodes_of(shuffled, 40)) >= 30  # no longer a continuous sequence
