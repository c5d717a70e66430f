"""Test-context protocols on real point-robot environments: what each reads, when z is inferred,
what the greedy protocol tries, and that scoring more protocols leaves the headline alone."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest
import torch

from components.contracts.test_contexts import probe_scene
from components.data.store import QualityData
from components.evaluation.meta_test import MetaTest
from components.evaluation.test_contexts.online_greedy import OnlineGreedy
from components.evaluation.test_contexts.zero_shot import ZeroShot
from components.reports.runs import groups
from components.reports.sections.test_contexts import ProtocolReturns
from components.reports.tables import RunGroups
from registry import FocalppError, UnknownComponentError, get, names
from tests.components.evaluation.test_meta_test import setup  # noqa: F401  (a fixture)
from tests.conftest import run_row

PROTOCOLS = names("test_context")
NOT_READING = [n for n in PROTOCOLS if not get("test_context", n)().reads_test_data]


def test_every_protocol_of_the_field_is_registered():
    assert {"offline", "other_behaviour", "non_prior", "online_prior", "online_greedy"} | {
        "zero_shot"
    } <= set(PROTOCOLS)
    assert NOT_READING and "offline" not in NOT_READING


def poisoned(data: QualityData) -> QualityData:
    """The same data with every float field NaN: z inferred from any of it is NaN, and so is
    every action taken with that z (the meta-test refuses it)."""
    t = data.transitions.map(lambda x: np.full_like(x, np.nan) if x.dtype.kind == "f" else x)
    return QualityData(t, data.length)


# other_behaviour needs a dataset's behaviour policies, which the probe scene has not; the
# meta-test hands it no test data at all (the run test below scores it)
@pytest.mark.parametrize("name", [n for n in NOT_READING if n != "other_behaviour"])
def test_a_protocol_that_reads_no_test_data_never_does(name):
    """Scored with the test tasks' offline data clean and with it poisoned: the same returns
    (zero_shot, non_prior, the online protocols never look at it)."""
    protocol = get("test_context", name)()
    clean, env_clean = probe_scene([3])
    dirty, env_dirty = probe_scene([3])
    dirty.data = poisoned(dirty.data)
    try:
        a, b = protocol(clean), protocol(dirty)
    finally:
        env_clean.close()
        env_dirty.close()
    assert np.isfinite(b.dense).all()
    np.testing.assert_array_equal(a.dense, b.dense)


def test_offline_reads_the_test_data_and_the_poison_shows():
    """The check above can fail: the offline protocol, which reads the data, is refused."""
    scene, env = probe_scene([3])
    scene.data = poisoned(scene.data)
    try:
        with pytest.raises(FocalppError, match="not finite"):
            get("test_context", "offline")()(scene)
    finally:
        env.close()


def z_per_step(every: int) -> list[torch.Tensor]:
    """The task vectors zero_shot acts with, step by step, on one point-robot episode."""
    scene, env = probe_scene([0])
    seen: list[torch.Tensor] = []

    def act(obs, z):
        seen.append(z.clone())
        return torch.tanh(z - 0.1 * obs)

    try:
        ZeroShot(every=every)(dataclasses.replace(scene, act=act, data=None))
    finally:
        env.close()
    return seen


def test_zero_shot_starts_from_z_zero_and_infers_again_after_every_step():
    seen = z_per_step(every=1)
    horizon = len(seen)
    assert horizon == 20 and torch.equal(seen[0], torch.zeros_like(seen[0]))
    changes = sum(not torch.equal(a, b) for a, b in itertools.pairwise(seen))
    assert changes == horizon - 1


def test_zero_shot_every_five_steps_infers_four_times_an_episode():
    seen = z_per_step(every=5)
    changes = [t for t in range(1, len(seen)) if not torch.equal(seen[t], seen[t - 1])]
    assert changes == [5, 10, 15]


def test_greedy_tries_the_training_task_farthest_from_what_it_tried():
    scene, env = probe_scene([0])
    env.close()
    hypotheses = torch.tensor([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]).expand(scene.rows, 3, 2)
    rows = torch.arange(scene.rows)
    greedy = OnlineGreedy(candidates=40)  # 40 draws of 3 tasks: each one drawn
    chosen = greedy.farthest(scene, hypotheses, [torch.zeros(scene.rows, 2)], rows, episode=1)
    assert torch.equal(chosen, torch.tensor([5.0, 5.0]).expand(scene.rows, 2))
    nearer = greedy.farthest(
        scene, hypotheses, [torch.tensor([6.0, 6.0]).expand(scene.rows, 2)], rows, episode=1
    )
    assert torch.equal(nearer, torch.tensor([0.0, 0.0]).expand(scene.rows, 2))


def test_more_protocols_leave_the_headline_alone(setup):  # noqa: F811
    """The headline with every protocol scored beside it is the headline alone, to the bit,
    and each protocol has its cell."""
    family, test, layout, encoder, data = setup

    def score(protocols):
        meta_test = MetaTest(runs=1, protocols=protocols, protocols_every_time=True)
        try:
            return meta_test(
                family=family,
                data=data,
                tasks=test,
                layout=layout,
                encoder=encoder,
                act=lambda obs, z: torch.tanh(z[:, :2] - 0.1 * obs),
                device=torch.device("cpu"),
                seed=0,
            )
        finally:
            meta_test.close()

    alone, beside = score(("offline",)), score(tuple(PROTOCOLS))
    np.testing.assert_array_equal(alone.returns, beside.returns)
    np.testing.assert_array_equal(alone.sparse_returns, beside.sparse_returns)
    assert not alone.protocols and "test_contexts" not in alone.to_dict()
    cells = beside.to_dict()["test_contexts"]
    assert set(cells) == set(PROTOCOLS)
    assert cells["offline"]["mean"] == beside.mean
    # no dataset given here: the donors' protocol says why it did not score
    assert "behaviour policies" in cells["other_behaviour"]["not_applicable"]
    for name in set(PROTOCOLS) - {"other_behaviour", "online_greedy"}:
        assert np.isfinite(cells[name]["mean"]) and len(cells[name]["per_task"]) == len(test)


@pytest.mark.parametrize(
    ("protocols", "message"),
    [
        (("offline", "zero_sho"), "did you mean: zero_shot"),
        (("offline", "offline"), "names a protocol twice"),
        ((), "expected a non-empty list"),
    ],
)
def test_a_wrong_protocol_list_is_refused_by_name(protocols, message):
    with pytest.raises((FocalppError, UnknownComponentError), match=message):
        MetaTest(protocols=protocols)


def test_a_run_records_every_protocol_s_cell(tiny_data, tmp_path):
    """A tiny FOCAL run on Sparse-Point-Robot scored under every protocol: eval.json holds a
    finite cell per protocol (the dataset keeps its behaviour policies: the donors collect)."""
    chosen = ", ".join(repr(p) for p in PROTOCOLS)
    run_row(
        "focal.gin",
        "sparse_point_robot",
        tiny_data,
        tmp_path / "run",
        bindings=(f"meta_test.protocols = [{chosen}]",),
    )
    evaluation = json.loads((tmp_path / "run" / "eval.json").read_text())
    cells = evaluation["test_contexts"]
    assert set(cells) == set(PROTOCOLS)
    for name, cell in cells.items():
        assert np.isfinite(cell["mean"]) and np.isfinite(cell["dense_mean"]), name
    # and a report tables one row per protocol, the drop from offline beside each
    run = {"recipe": "focal.gin", "env": "sparse_point_robot", "scale": "tiny", "seed": 0}
    section = ProtocolReturns()(RunGroups(groups([{**run, "eval": evaluation}])))
    (table,) = section.tables
    assert [row[3] for row in table.rows] == list(cells)
    offline = cells["offline"]["mean"]
    for row in table.rows[1:]:
        assert row[6] == f"{offline - cells[row[3]]['mean']:.2f} ± 0.00"


def test_the_protocols_score_the_last_meta_test_unless_asked_for_every_one(setup):  # noqa: F811
    family, test, layout, encoder, data = setup
    meta_test = MetaTest(runs=1, protocols=("offline", "zero_shot"), max_tasks=2)
    kwargs = dict(family=family, data=data, tasks=test, layout=layout, encoder=encoder,
                  act=lambda obs, z: torch.tanh(z[:, :2] - 0.1 * obs),
                  device=torch.device("cpu"), seed=0)  # fmt: skip
    try:
        assert meta_test(**kwargs).protocols == {}
        meta_test.final = True  # as the loop sets it before the run's last meta-test
        assert set(meta_test(**kwargs).protocols) == {"zero_shot"}
    finally:
        meta_test.close()


def test_online_greedy_keeps_the_best_episode_then_only_those_that_beat_it():
    """The keep-or-revert rule, replayed on returns of two rows: three exploring episodes keep
    the single best one; later episodes join the context only when they beat the best so far
    (the others leave it as it was); the scored z is the best episode's."""
    from components.evaluation.test_contexts.online_greedy import kept_after

    returns = torch.tensor(
        [[1.0, 3.0, 2.0, 2.5, 4.0, 1.0],  # row 0: best 3 at episode 1, then 4 at episode 4
         [5.0, 1.0, 0.0, 6.0, 5.5, 7.0]]  # row 1: best 5 at episode 0, then 6, then 7
    )  # fmt: skip
    kept = torch.zeros(2, 0, dtype=torch.bool)
    best = torch.full((2,), -float("inf"))
    best_episode = torch.full((2,), -1)
    for e in range(returns.shape[1]):
        better = returns[:, e] > best
        kept = kept_after(kept, better, exploring=e < 3)
        best = torch.where(better, returns[:, e], best)
        best_episode = torch.where(better, torch.tensor(e), best_episode)
    assert kept.tolist() == [
        [False, True, False, False, True, False],
        [True, False, False, True, False, True],
    ]
    assert best_episode.tolist() == [4, 5] and best.tolist() == [4.0, 7.0]
