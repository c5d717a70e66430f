"""Meta-World ML1 beside the published comparison, for reports.

The one published comparison of FOCAL and FOCAL++ on ML1 (normalised score = test return ÷ the
dataset's return, mean ± std over seeds, on 30 ML1 tasks; mean over the 30: FOCAL 0.525,
FOCAL++ 0.691, CORRO 0.653, CSRO 0.656). Eight of its rows are kept here. Its datasets are not
ours (another behaviour policy, another size), so ours are compared by order and rough level,
not by digits.
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
# corro_model (CORRO with its generative negatives) is the CORRO that runs on Meta-World
RECIPE_OF = {"corro_model": "corro"}
# Where the goal varies apart from what the first observation shows (components/envs/ml1.py)
HIDDEN_GOAL = frozenset({"ml1_coffee_push", "ml1_plate_slide_back", "ml1_push", "ml1_reach_wall"})
FLOOR, CEILING = "reference_no_context", "reference_oracle"
REFERENCES = (FLOOR, CEILING)  # the reference rows' recipes (components/algorithms/reference.py)


def published(env: str, recipe: str) -> tuple[float, float] | None:
    return PUBLISHED.get(env, {}).get(RECIPE_OF.get(recipe, recipe))


def place(score: float, floor: Sequence[float], ceiling: Sequence[float]) -> float | None:
    """Where `score` lies between the floor and the ceiling of task inference (0 = as without
    context, 1 = as told the task), or None where the gap is too small to divide by (under
    0.05 normalised score: the context cannot matter there)."""
    low, high = float(np.mean(floor)), float(np.mean(ceiling))
    if high - low < 0.05:
        return None
    return (score - low) / (high - low)
