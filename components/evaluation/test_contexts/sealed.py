"""The scene a protocol that reads no test data gets: every path to the test tasks' offline data
sealed, so that reading any of it raises, naming the protocol and what it reached for.

`data` (the test tasks' offline transitions) becomes `SealedData`, which raises on any use;
`dataset` (the run's store dataset, which a protocol may need for the behaviour policies it
keeps, as `other_behaviour` does) becomes `WithoutTestData`, which offers what describes the
dataset and its kept policies and raises on the transitions and on the files. `train` holds the
training tasks' transitions only (`TensorSampler` packs the tasks it is given) and is left as it
is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from components.evaluation.test_contexts.scene import Scene
from registry import FocalppError


class TestDataRead(FocalppError):
    """A protocol that says it reads no test data (`reads_test_data = False`) reached for it."""

    __test__ = False  # a name pytest would collect otherwise


def _refuse(protocol: str, what: str) -> TestDataRead:
    return TestDataRead(
        f"test-context protocol {protocol!r} says it reads none of the test tasks' offline "
        f"data (reads_test_data = False) but reached for {what}: collect the context in the "
        "test task instead, or set reads_test_data = True (its cells are then no online "
        "protocol's)"
    )


class SealedData:
    """Stands where the test tasks' offline data would be: any use of it raises."""

    def __init__(self, protocol: str):
        object.__setattr__(self, "_protocol", protocol)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and the like ask for these: not the data
            raise AttributeError(name)
        raise _refuse(self._protocol, f"scene.data.{name}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise _refuse(self._protocol, f"scene.data.{name}")

    def __bool__(self) -> bool:
        raise _refuse(self._protocol, "scene.data")

    def __len__(self) -> int:
        raise _refuse(self._protocol, "scene.data")

    def __getitem__(self, key: Any) -> Any:
        raise _refuse(self._protocol, f"scene.data[{key!r}]")

    def __iter__(self) -> Any:
        raise _refuse(self._protocol, "scene.data")

    def __contains__(self, item: Any) -> bool:
        raise _refuse(self._protocol, "scene.data")


class WithoutTestData:
    """A dataset's description and kept behaviour policies, without its transitions or files."""

    OFFERED = ("manifest", "tasks", "qualities", "split_indices", "has_policies", "policies")

    def __init__(self, dataset: Any, protocol: str):
        object.__setattr__(self, "_dataset", dataset)
        object.__setattr__(self, "_protocol", protocol)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self.OFFERED:
            return getattr(self._dataset, name)
        raise _refuse(self._protocol, f"scene.dataset.{name}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise _refuse(self._protocol, f"scene.dataset.{name}")


def without_test_data(scene: Scene, protocol: str) -> Scene:
    """`scene` as `protocol`, which reads no test data, may see it."""
    dataset = None if scene.dataset is None else WithoutTestData(scene.dataset, protocol)
    return dataclasses.replace(scene, data=SealedData(protocol), dataset=dataset)
