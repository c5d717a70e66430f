"""Meta-World ML1 beside the published comparison, for reports.

The one published comparison of FOCAL and FOCAL++ on ML1 (normalised score = test return ÷ the
dataset's return, mean ± std over seeds, on 30 ML1 tasks; mean over the 30: FOCAL 0.525,
FOCAL++ 0.691, CORRO 0.653, CSRO 0.656). Eight of its rows are kept here, with the mean episode
return of each task's published dataset. The `ml1_<name>` families' data are not theirs (our
noise tiers, ML1's split), so there orders and rough levels are compared, not digits; the
`ml1pub_<name>` families are built on their recipe (components/envs/ml1.py), so there the levels
are comparable too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# env column -> recipe stem -> (mean, std) normalised score
PUBLISHED: dict[str, dict[str, tuple[float, float]]] = {
    "ml1_button_press": {"focal": (1.09, 0.18), "focalpp": (1.24, 0.07),
                         "corro": (1.15, 0.06), "csro": (1.10, 0.08)},
    "ml1_coffee_push": {"focal": (0.64, 0.07), "focalpp": (1.00, 0.05),
                        "corro": (1.17, 0.16), "csro": (1.22, 0.01)},
    "ml1_door_lock": {"focal": (0.90, 0.02), "focalpp": (0.96, 0.00),
                      "corro": (0.89, 0.05), "csro": (0.94, 0.02)},
    "ml1_peg_unplug_side": {"focal": (0.26, 0.13), "focalpp": (0.68, 0.07),
                            "corro": (0.29, 0.09), "csro": (0.30, 0.08)},
    "ml1_plate_slide_back": {"focal": (0.71, 0.06), "focalpp": (1.15, 0.04),
                             "corro": (1.00, 0.24), "csro": (0.38, 0.17)},
    "ml1_push": {"focal": (0.34, 0.14), "focalpp": (0.62, 0.09),
                 "corro": (0.57, 0.08), "csro": (0.60, 0.07)},
    "ml1_reach_wall": {"focal": (0.53, 0.18), "focalpp": (0.92, 0.03),
                       "corro": (0.84, 0.07), "csro": (0.91, 0.01)},
    "ml1_sweep": {"focal": (0.32, 0.08), "focalpp": (0.37, 0.11),
                  "corro": (0.53, 0.18), "csro": (0.75, 0.06)},
}  # fmt: skip
# env column -> the mean return of all the episodes of its published dataset
DATASET_RETURN = {
    "ml1_button_press": 553.36, "ml1_coffee_push": 1531.27, "ml1_door_lock": 3352.69,
    "ml1_peg_unplug_side": 1128.56, "ml1_plate_slide_back": 1132.48, "ml1_push": 3016.54,
    "ml1_reach_wall": 4804.65, "ml1_sweep": 4356.22,
}  # fmt: skip
# corro_model (CORRO with its generative negatives) is the CORRO that runs on Meta-World
RECIPE_OF = {"corro_model": "corro"}
# Where the goal varies apart from what the first observation shows (components/envs/ml1.py)
HIDDEN_GOAL = frozenset({"ml1_coffee_push", "ml1_plate_slide_back", "ml1_push", "ml1_reach_wall"})
FLOOR, CEILING = "reference_no_context", "reference_oracle"
REFERENCES = (FLOOR, CEILING)  # the reference rows' recipes (components/algorithms/reference.py)


def task_of(env: str) -> str:
    """The ML1 environment a family runs, by its ML1 column name (`ml1pub_push` -> `ml1_push`)."""
    return env.replace("ml1pub_", "ml1_", 1)


def hidden_goal(env: str) -> bool:
    return task_of(env) in HIDDEN_GOAL


def published(env: str, recipe: str) -> tuple[float, float] | None:
    return PUBLISHED.get(task_of(env), {}).get(RECIPE_OF.get(recipe, recipe))


def level(score: float, env: str, recipe: str, within: float = 0.10) -> str:
    """Where a row's mean score lies beside its published one: "above", "within 0.10" or
    "below" (by how much), on the families built on the published recipe only; "-" elsewhere
    (the `ml1_<name>` data are not the published ones: their levels are not comparable)."""
    theirs = published(env, recipe)
    if theirs is None or not env.startswith("ml1pub_"):
        return "-"
    gap = score - theirs[0]
    if abs(gap) <= within:
        return f"within {within:.2f} ({gap:+.2f})"
    return f"{'above' if gap > 0 else 'below'} by {abs(gap):.2f}"


def place(score: float, floor: Sequence[float], ceiling: Sequence[float]) -> float | None:
    """Where `score` lies between the floor and the ceiling of task inference (0 = as without
    context, 1 = as told the task), or None where the gap is too small to divide by (under
    0.05 normalised score: the context cannot matter there)."""
    low, high = float(np.mean(floor)), float(np.mean(ceiling))
    if high - low < 0.05:
        return None
    return (score - low) / (high - low)
