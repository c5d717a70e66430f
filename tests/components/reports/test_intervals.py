"""Interval estimates through rliable: the IQM, the probability of improvement, verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from components.reports.intervals import Estimate, improvement, iqm, verdict


def test_iqm_is_the_mean_of_the_middle_half_inside_its_interval():
    values = [10.0, 12.1, 12.2, 12.4, 3.0, 12.3, 12.0, 30.0]
    found = iqm(values, reps=500)
    assert found.point == pytest.approx(stats.trim_mean(values, 0.25))
    assert min(values) <= found.low <= found.point <= found.high <= max(values)
    assert iqm(values, reps=500) == found  # seeded: the same runs give the same interval
    assert iqm([1.0, 2.0, 3.0], reps=500).point == pytest.approx(2.0)  # 3 seeds: none trimmed


def test_probability_of_improvement_counts_pairs_and_ties():
    above = improvement([5.0, 6.0, 7.0], [1.0, 2.0, 3.0], reps=300)
    assert above == Estimate(1.0, 1.0, 1.0)  # every run above every run: no resample disagrees
    assert improvement([1.0, 2.0], [1.0, 2.0], reps=300).point == pytest.approx(0.5)
    x, y = [1.0, 4.0, 4.0], [2.0, 4.0, 0.0]
    expected = np.mean([(a > b) + 0.5 * (a == b) for a in x for b in y])
    mixed = improvement(x, y, reps=300)
    assert mixed.point == pytest.approx(expected) and mixed.low < 0.5 < mixed.high


@pytest.mark.parametrize(
    "low, high, claim, expected",
    [
        (0.6, 1.0, True, "reproduced"),
        (0.0, 0.4, True, "reversed"),
        (0.0, 0.4, False, "reproduced"),
        (0.3, 0.9, True, "same within noise"),
        (0.5, 0.9, True, "same within noise"),  # an interval that reaches 0.5 holds no order
        (0.7, 0.9, None, "above"),
        (0.1, 0.2, None, "below"),
    ],
)
def test_verdict_reads_the_interval_against_the_claim(low, high, claim, expected):
    assert verdict(Estimate((low + high) / 2, low, high), claim) == expected


def test_an_interval_needs_two_finite_scores():
    with pytest.raises(ValueError, match="at least 2 finite scores"):
        iqm([1.0])
    with pytest.raises(ValueError, match="at least 2 finite scores"):
        improvement([1.0, float("nan")], [0.0, 1.0])


def test_intervals_leave_numpys_global_generator_as_they_found_it():
    np.random.seed(7)
    expected = np.random.rand()
    np.random.seed(7)
    iqm([1.0, 2.0, 3.0, 4.0], reps=200)
    assert np.random.rand() == expected


def test_probability_of_improvement_counts_what_rliable_computes():
    """The direct count gives rliable's numbers to the last bit (ties, equal rows, several
    tasks), so reports keep their digits while their orders run without a SciPy call per task
    per replication."""
    import numpy as np
    from rliable import metrics

    from components.reports.intervals import probability_of_improvement

    rng = np.random.default_rng(0)
    for _ in range(300):
        n, m, tasks = rng.integers(2, 11), rng.integers(2, 11), rng.integers(1, 9)
        x = np.round(rng.normal(size=(n, tasks)), rng.integers(0, 3))  # rounded: ties
        y = x.copy() if n == m and rng.random() < 0.2 else np.round(rng.normal(size=(m, tasks)), 1)
        assert probability_of_improvement(x, y) == metrics.probability_of_improvement(x, y)


def test_the_difference_of_means_and_its_interval():
    from components.reports.intervals import difference

    gap = difference([1.0, 1.1, 0.9, 1.0], [0.0, 0.1, -0.1, 0.0])
    assert gap.point == pytest.approx(1.0) and 0 < gap.low <= 1.0 <= gap.high
    same = difference([0.5, 0.6, 0.4], [0.6, 0.4, 0.5])
    assert same.low < 0 < same.high


def test_the_context_can_matter_only_where_floor_and_ceiling_differ_by_the_interval():
    """On the published recipe's committed references: knowing the goal lifts reach-wall's
    score, not sweep's; push's success rate, not its score."""
    from components.reports.readings import normalised, success
    from components.reports.records import read_records
    from components.reports.sections.metaworld_gap import context_can_matter
    from tests.conftest import ROOT

    runs = read_records(ROOT / "results" / "metaworld_published" / "references")

    def matters(env: str, read) -> bool:
        rows = {r: [read(x) for x in runs if x["env"] == env and r in x["recipe"]]
                for r in ("no_context", "oracle")}  # fmt: skip
        return context_can_matter(rows["no_context"], rows["oracle"], 2000)[1]

    assert matters("ml1pub_reach_wall", normalised) and not matters("ml1pub_sweep", normalised)
    assert matters("ml1pub_push", success) and not matters("ml1pub_push", normalised)
