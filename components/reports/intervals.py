"""Interval estimates as the field now reports them (Agarwal et al., NeurIPS 2021, "Deep RL at
the Edge of the Statistical Precipice"), computed by its library, `rliable`:

- the interquartile mean (IQM) over seeds with a 95% stratified-bootstrap confidence interval;
- the probability that a run of one row scores above a run of another, P(X > Y) (ties count
  half), with its interval; 0.5 means no difference.

A verdict on the order of two rows reads the interval of P(X > Y): the paper's order is
"reproduced" only where the whole interval lies on its side of 0.5, "reversed" where it lies
on the other side, and "same within noise" where it holds 0.5. With 3-5 seeds the percentile
bootstrap is coarse (a row whose every seed beats every seed of the other gets [1, 1]); the
intervals describe these seeds, not the method's spread at large.

Bootstraps are seeded, so a report of the same runs is the same report.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

REPS = 2000  # bootstrap replications: 2k keeps a report to seconds; rliable's default is 50k
CONFIDENCE = 0.95
SEED = 0


@dataclass(frozen=True)
class Estimate:
    """A point estimate and its confidence interval."""

    point: float
    low: float
    high: float

    def format(self, digits: str = ".2f") -> str:
        return f"{self.point:{digits}} [{self.low:{digits}}, {self.high:{digits}}]"


def _scores(values) -> np.ndarray:
    """rliable's layout: runs × tasks (one task, the environment's test split, for a list;
    a [runs, tasks] array as it is: seeds resampled within each task)."""
    scores = np.asarray(values, dtype=float)
    scores = scores if scores.ndim == 2 else scores.reshape(-1, 1)
    if len(scores) < 2 or not np.isfinite(scores).all():
        raise ValueError(f"an interval needs at least 2 finite scores, got {list(values)}")
    return scores


def _estimate(scores, func, reps: int, seed: int) -> Estimate:
    # imported here: rliable brings arch, SciPy and matplotlib (2 s), which a run that only
    # registers the report sections (its analyses' contract) never needs
    from rliable import library as rly

    # rliable's stratified resampling draws from NumPy's global generator whatever
    # random_state it is given: seed that one for the call and put its state back after.
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        with warnings.catch_warnings():
            # rliable hands a RandomState to arch under a keyword arch has deprecated
            warnings.filterwarnings("ignore", "random_state is deprecated", FutureWarning)
            point, interval = rly.get_interval_estimates(
                {"x": scores},
                func,
                reps=reps,
                confidence_interval_size=CONFIDENCE,
                random_state=np.random.RandomState(seed),
            )
    finally:
        np.random.set_state(saved)
    low, high = np.asarray(interval["x"], dtype=float).reshape(2)
    return Estimate(float(np.asarray(point["x"]).reshape(())), float(low), float(high))


def iqm(values: Sequence[float], *, reps: int = REPS, seed: int = SEED) -> Estimate:
    """Interquartile mean over seeds (the mean of the middle half; with fewer than 4 seeds no
    seed is trimmed) and its 95% stratified-bootstrap interval."""
    from rliable import metrics

    return _estimate(_scores(values), lambda s: np.array([metrics.aggregate_iqm(s)]), reps, seed)


def mean(values, *, reps: int = REPS, seed: int = SEED) -> Estimate:
    """The mean over runs (and tasks, for a [runs, tasks] array) and its 95% interval."""
    from rliable import metrics

    return _estimate(_scores(values), lambda s: np.array([metrics.aggregate_mean(s)]), reps, seed)


def difference(x, y, *, reps: int = REPS, seed: int = SEED) -> Estimate:
    """mean(X) − mean(Y) over the runs of two rows, with its 95% interval (each row's seeds
    resampled on their own)."""
    return _estimate(
        (_scores(x), _scores(y)), lambda a, b: np.array([a.mean() - b.mean()]), reps, seed
    )


def improvement(x, y, *, reps: int = REPS, seed: int = SEED) -> Estimate:
    """P(X > Y) + ½ P(X = Y) for a run X of one row and a run Y of another, with its 95%
    interval (each row's seeds resampled on their own). For [runs, tasks] arrays: averaged
    over tasks, each task's runs against the other row's on the same task."""
    return _estimate(
        (_scores(x), _scores(y)),
        lambda a, b: np.array([probability_of_improvement(a, b)]),
        reps,
        seed,
    )


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """rliable's `metrics.probability_of_improvement` (per task the Mann-Whitney U of x over y
    ÷ (runs of x × runs of y), then the mean over tasks) counted directly on [runs, tasks]
    arrays: the same numbers (U is a count of pairs, halves for ties, exact in floats), without
    a SciPy call per task per bootstrap replication, which made the reports' orders slow."""
    wins = (x[:, None, :] > y[None, :, :]).sum(axis=(0, 1))
    ties = (x[:, None, :] == y[None, :, :]).sum(axis=(0, 1))
    return float(np.mean((wins + 0.5 * ties) / (len(x) * len(y))))


def verdict(p: Estimate, claimed_above: bool | None) -> str:
    """The verdict on a claimed order, from the interval of P(X > Y). `claimed_above`: the
    claim is X above Y (True), X below Y (False), or there is no claim (None: say which side
    the interval is on, if any)."""
    if p.low <= 0.5 <= p.high:
        return "same within noise"
    ours_above = p.low > 0.5
    if claimed_above is None:
        return "above" if ours_above else "below"
    return "reproduced" if ours_above == claimed_above else "reversed"
