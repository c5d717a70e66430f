"""Dataset returns, and the score Meta-World papers report: a test return over them.

Normalised score of a test task = its meta-test return ÷ the mean return of the complete
episodes of that task's offline data, of the quality trained on (or, for a family whose
`score_reference` is "dataset", as the published Meta-World scores are computed: ÷ the mean
return of all the dataset's episodes, every task's). It reads 1 where the learned
policy matches its data and above 1 where it does better; averaged over the test tasks. Only
families that ask for it have it (`EnvFamily.normalised_score`): a ratio of returns means
something only where returns are positive.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from components.data.store import DatasetError, QualityData


def dataset_returns(data: QualityData, tasks: Sequence[int], pooled: bool = False):
    """Mean return of the complete episodes (ending in termination or truncation) of each of
    `tasks`' data, [len(tasks)]; `pooled`: of all their episodes together, a float."""
    t = data.transitions
    rows = np.asarray(list(tasks), dtype=np.int64)
    reward = np.asarray(t.reward[rows], dtype=np.float64)  # [N, M]
    real = np.arange(reward.shape[1])[None, :] < data.length[rows][:, None]
    ends = (np.asarray(t.terminated[rows]) | np.asarray(t.truncated[rows])) & real
    episodes = ends.sum(1)
    if (episodes == 0).any():
        missing = rows[episodes == 0].tolist()
        raise DatasetError(
            f"tasks {missing[:5]} have no complete episode in their data, so their dataset "
            "return (the normalised score's denominator) is undefined"
        )
    last = ends.shape[1] - 1 - np.argmax(ends[:, ::-1], axis=1)  # each task's last episode end
    complete = np.arange(reward.shape[1])[None, :] <= last[:, None]
    if pooled:
        return float((reward * complete).sum() / episodes.sum())
    return (reward * complete).sum(1) / episodes


def normalised(returns: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """returns ÷ reference per task; NaN where the reference return is not positive."""
    reference = np.asarray(reference, dtype=np.float64)
    safe = np.where(reference > 0, reference, 1.0)
    return np.where(reference > 0, np.asarray(returns, dtype=np.float64) / safe, np.nan)
