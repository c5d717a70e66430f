"""Test-context protocols on real point-robot environments: what each reads, when z is inferred,
what the greedy protocol tries, and that scoring more protocols leaves the headline alone."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json

import numpy as np
import pytest
import torch

from components.contracts.test_contexts import probe_scene
from components.data.store import QualityData
from components.evaluation.meta_test import MetaTest
from components.evaluation.test_contexts import NotApplicable, Scene
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
        assert row[4] == "-"  # no floor and ceiling in this report: no share
        assert row[7] == f"{offline - cells[row[3]]['mean']:.2f} ± 0.00"


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


def test_every_path_to_the_test_data_is_sealed_for_a_protocol_that_reads_none(tiny_data):
    """What a protocol that reads no test data is handed: the offline transitions and the
    dataset's files raise on any use, naming the protocol; the dataset's description and its
    kept behaviour policies stay (other_behaviour collects with them, and still scores)."""
    from components.data.collect import collect
    from components.evaluation.test_contexts.sealed import TestDataRead, without_test_data

    dataset = collect("sparse_point_robot", scale="tiny", root=tiny_data)
    scene, env = probe_scene([0])
    try:
        sealed = without_test_data(dataclasses.replace(scene, dataset=dataset), "mine")
        reaches = {
            "scene.data.transitions": lambda: sealed.data.transitions,
            "scene.data.length": lambda: sealed.data.length,
            "scene.data": lambda: bool(sealed.data),
            "scene.dataset.quality": lambda: sealed.dataset.quality("expert"),
            "scene.dataset.path": lambda: sealed.dataset.path,
            "scene.dataset.digest": lambda: sealed.dataset.digest,
            r"scene.data\[0\]": lambda: sealed.data[0],
        }
        for what, reach in reaches.items():
            with pytest.raises(TestDataRead, match=f"'mine' says it reads none.*{what}"):
                reach()
        for use in (lambda: 0 in sealed.data, lambda: list(sealed.data)):
            with pytest.raises(TestDataRead, match=r"reached for scene\.data"):
                use()
        copy.copy(sealed.data), copy.deepcopy(sealed)  # copying touches none of it
        assert sealed.dataset.split_indices("test") == dataset.split_indices("test")
        assert sealed.dataset.has_policies and sealed.dataset.policies().weights
        returns = get("test_context", "other_behaviour")()(sealed)
        assert np.isfinite(returns.dense).all()
    finally:
        env.close()


class ReadsTheTestTasks:
    """Says it reads no test data, then infers z from the test tasks' offline transitions."""

    reads_test_data = False

    def __call__(self, scene):
        scene.data.transitions  # noqa: B018  (the read the guard must see)
        return get("test_context", "offline")()(scene)


class ReadsTheStore:
    """Says it reads no test data, then loads the test tasks' transitions from the store."""

    reads_test_data = False

    def __call__(self, scene):
        scene.dataset.quality("expert")  # the other path to the same data
        return get("test_context", "offline")()(scene)


@pytest.mark.parametrize(
    "protocol, read",
    [(ReadsTheTestTasks, r"scene\.data\.transitions"), (ReadsTheStore, r"scene\.dataset\.quality")],
)
def test_a_protocol_that_reads_what_it_says_it_does_not_breaks_its_contract(protocol, read):
    """The contract's probe seals both paths to the test tasks' offline data, the scene's data
    and its store dataset, so either read is caught by the registry and named."""
    from components.contracts import ContractError, check

    with pytest.raises(ContractError, match=f"read none of the test tasks' offline data.*{read}"):
        check(protocol, "test_context")


@dataclasses.dataclass
class Watched(Scene):
    """A scene that keeps every episode it plays (its z, and what it collected) and every z it
    infers (from which context)."""

    played: list = dataclasses.field(default_factory=list)
    inferred: list = dataclasses.field(default_factory=list)

    def play(self, z, **kwargs):
        episode = super().play(z, **kwargs)
        self.played.append((z, kwargs.get("episode"), episode))
        return episode

    def infer(self, context):
        z = super().infer(context)
        self.inferred.append((context, z))
        return z


def one_horizon_scene() -> tuple[Watched, object]:
    """The probe scene with an offline context of one episode (Meta-World's shape)."""
    scene, env = probe_scene([0])
    fields = {f.name: getattr(scene, f.name) for f in dataclasses.fields(Scene)}
    return Watched(**{**fields, "context_transitions": scene.family.horizon}), env


def collected_rows(scene: Watched) -> set[tuple]:
    """Every transition the protocol collected in the test task (collection episodes only)."""
    return {
        tuple(row.tolist())
        for _, e, episode in scene.played
        if e is not None
        for rows in episode.context
        for row in rows
    }


@pytest.mark.parametrize("name", ["online_prior", "online_posterior", "non_prior"])
def test_an_online_protocol_infers_the_scored_z_from_several_episodes_it_collected(name):
    """Where one episode fills the offline context, `episodes = 3` collects three in the test
    task, and the scored episode's z is the encoder's, from transitions among those."""
    scene, env = one_horizon_scene()
    try:
        assert scene.collection_episodes(None) == 1  # the default here: one episode
        get("test_context", name)(episodes=3)(scene)
    finally:
        env.close()
    collections = [e for _, e, _ in scene.played if e is not None]
    assert collections == [0, 1, 2]
    scored_z = scene.played[-1][0]
    context, z = scene.inferred[-1]
    assert torch.equal(scored_z, z)
    assert {tuple(r.tolist()) for rows in context for r in rows} <= collected_rows(scene)


def test_online_greedy_explores_the_test_task_before_it_chooses():
    """Three collection episodes: two try training tasks' z, the third infers z from what the
    test task gave; the scored z is the one that earned the best return."""
    scene, env = one_horizon_scene()
    try:
        get("test_context", "online_greedy")(episodes=3)(scene)
        with pytest.raises(NotApplicable, match=r"cannot both explore and choose.*episodes ≥ 2"):
            get("test_context", "online_greedy")()(scene)  # one episode: refused, said why
    finally:
        env.close()
    collections = [(z, episode) for z, e, episode in scene.played if e is not None][:3]
    test_task = collected_rows(scene)
    from_the_test_task = [
        z for context, z in scene.inferred if context.shape[0] == scene.rows
        and {tuple(r.tolist()) for rows in context for r in rows} <= test_task
    ]  # fmt: skip
    assert torch.equal(collections[2][0], from_the_test_task[0])  # phase 2 read the test task
    scores = torch.stack([torch.as_tensor(ep.score) for _, ep in collections])  # [E, R]
    best = scores.argmax(0)
    scored_z = next(z for z, e, _ in scene.played if e is None)
    for row in range(scene.rows):
        assert torch.equal(scored_z[row], collections[int(best[row])][0][row])


def wind_scene() -> tuple[Watched, object]:
    """The probe scene on Point-Robot-Wind (dense returns, so episodes differ in score), an
    offline context of one episode, and training tasks whose offline transitions differ (so
    their z do): greedy's rule then has something to choose between."""
    from components.data.context import ContextLayout
    from components.data.sampler import TensorSampler
    from components.envs.point_robot import PointRobotWind
    from components.transitions import FIELDS, Transitions

    scene, env = one_horizon_scene()
    env.close()
    family = PointRobotWind(seed=0)
    train, test = family.split_indices()
    k, n, rng = len(family.all_tasks()), 8, np.random.default_rng(0)
    arrays = {
        f: np.zeros((k, n), bool) if f in ("terminated", "truncated")
        else rng.normal(size=(k, n) if f in ("reward", "sparse_reward") else (k, n, 2))
        .astype(np.float32)
        for f in FIELDS
    }  # fmt: skip
    data = QualityData(Transitions(**arrays), np.full(k, n))
    env = family.make_batched([family.all_tasks()[t] for t in test[:2]])
    return dataclasses.replace(
        scene, family=family, env=env, layout=ContextLayout(2, 2, sparse=False),
        test_tasks=test[:2], context_transitions=family.horizon,
        train=TensorSampler(data, train[:5]), dataset=None,
    ), env  # fmt: skip


def test_online_greedy_infers_only_from_the_episodes_its_rule_keeps():
    """Through the protocol itself: every phase-2 inference draws its context from the episodes
    the keep-or-revert rule keeps (replayed here from the returns the scene played: the best of
    phase 1, then a phase-2 episode only where it beat the best so far), never from an episode
    the rule left out."""
    scene, env = wind_scene()
    try:
        get("test_context", "online_greedy")(episodes=6)(scene)  # phase 1: 3 episodes
    finally:
        env.close()
    collections = [episode for _, e, episode in scene.played if e is not None]
    scores = np.stack([episode.score for episode in collections])  # [E, R]
    phase_2 = [c for c, _ in scene.inferred if c.shape[:2] == (scene.rows, scene.family.horizon)]
    assert len(collections) == 6 and len(phase_2) == 3
    left_out = 0
    for row in range(scene.rows):
        kept = {int(scores[:3, row].argmax())}
        for e, context in zip(range(3, 6), phase_2, strict=True):
            allowed = {tuple(r.tolist()) for k in kept for r in collections[k].context[row]}
            drawn = {tuple(r.tolist()) for r in context[row]}
            assert drawn <= allowed, f"row {row}, episode {e}: drew from an episode not kept"
            left_out += e - len(kept)
            if scores[e, row] > scores[:e, row].max():
                kept.add(e)
    assert left_out > 0  # some episode was left out when z was inferred: the rule was tested


def test_online_greedy_bound_to_one_episode_is_refused_when_built():
    with pytest.raises(FocalppError, match=r"online_greedy.episodes = 1: expected at least 2"):
        get("test_context", "online_greedy")(episodes=1)


def test_the_meta_world_column_collects_idaq_s_ten_episodes():
    from registry import compose

    comp = compose("focal.gin", env="ml1_reach_wall", scale="tiny")
    comp.apply()
    for name in ("online_greedy", "online_prior", "online_posterior", "non_prior"):
        assert get("test_context", name)().episodes == 9, name
    assert get("test_context", "other_behaviour")().episodes is None  # UNICORN's one


def test_each_protocol_is_read_against_the_floor_and_the_ceiling_of_its_learner(
    tiny_data, tmp_path
):
    """Tiny FOCAL runs on both learners (the dense point robot) scored under three protocols,
    beside the no-context floor and the true-task ceiling of each learner: every protocol's
    recovered share is computed from its own learner's floor and ceiling, and a drop is given
    only where both cells are above the floor's interval."""
    from components.reports.sections.test_context_gaps import ProtocolGaps
    from registry.provenance import built_parts

    protocols = "meta_test.protocols = ['offline', 'zero_shot', 'online_prior']"
    lines = []
    for recipe in ("focal.gin", "reference_no_context.gin", "reference_oracle.gin"):
        for agent in ("brac", "iql"):
            for seed in (0, 1):
                out = tmp_path / f"{recipe}-{agent}-{seed}"
                run_row(
                    recipe, "point_robot_wind", tiny_data, out, seed=seed,
                    bindings=(protocols, f"focal.agent = @{agent}"),
                    plugins=("components.rl.iql",),
                )  # fmt: skip
                lines.append(
                    {
                        "recipe": recipe, "env": "point_robot_wind", "scale": "tiny",
                        "seed": seed, "parts": built_parts(),
                        "eval": json.loads((out / "eval.json").read_text()),
                    }
                )  # fmt: skip
    (table,) = ProtocolGaps()(RunGroups(groups(lines))).tables
    rows = {(row[2], row[4]): row for row in table.rows}
    assert set(rows) == {
        (a, p) for a in ("brac", "iql") for p in ("offline", "zero_shot", "online_prior")
    }

    def offline_of(recipe, agent):
        return np.mean(
            [r["eval"]["test_return_mean"] for r in lines  # a reference row: offline only
             if r["recipe"] == recipe and r["parts"]["agent"] == [agent]]
        )  # fmt: skip

    for (agent, protocol), row in rows.items():
        focal = [r for r in lines if r["recipe"] == "focal.gin" and r["parts"]["agent"] == [agent]]
        value = np.mean([r["eval"]["test_contexts"][protocol]["mean"] for r in focal])
        floor = offline_of("reference_no_context.gin", agent)
        ceiling = offline_of("reference_oracle.gin", agent)
        assert ceiling != floor  # a dense task: the gap is there to be recovered
        assert row[5] == f"{(value - floor) / (ceiling - floor):.2f}", (agent, protocol)
        assert row[8] == f"{ceiling:.2f}"
        if row[9].startswith("at the floor") or rows[(agent, "offline")][9].startswith("at"):
            assert row[10] == "-"  # no inference shown: no inference lost
