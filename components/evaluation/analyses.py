"""Importing this module registers every analysis of a trained run (kind `analysis`);
`analyse` runs some on a run directory and merges their results into its analysis.json."""

from collections.abc import Sequence

import components.evaluation.attention_weights
import components.evaluation.context_grid
import components.evaluation.distribution_shift
import components.evaluation.embedding_variance
import components.evaluation.ood_context
import components.evaluation.task_vectors
import components.evaluation.training_trend
import components.evaluation.tsne  # noqa: F401
from registry import RecipeError, entries, get
from registry.usage import bindings_outside

NAMES = (
    "embedding_variance",
    "task_vectors",
    "attention_auc",
    "tsne",
    "distribution_shift",
    "ood_context",
    "context_grid",
    "representation_trend",
)


def check_names(names: Sequence[str]) -> None:
    """An unknown analysis fails here, before any work, with suggestions."""
    for name in names:
        get("analysis", name)


GIVEN = "tools/analyze.py --gin_param"


def check_reach(names: Sequence[str]) -> None:
    """Every --gin_param configures one of the analyses run: the trained run was rebuilt from
    its record before they were read, so a binding of any other part configures nothing."""
    wanted = [e.gin_name for e in entries("analysis") if e.name in names]
    found = bindings_outside(wanted, GIVEN)
    if found:
        raise RecipeError(
            f"{len(found)} binding(s) configure nothing these analyses build, so the analysis "
            "would not be the one they describe; nothing was analysed:\n  "
            + "\n  ".join(f"{line}: not one of the analyses run" for line in found)
            + f"\nThe run was rebuilt from its record before they were read; bindings of "
            f"tools/analyze.py configure the analyses it runs ({', '.join(names)})"
        )


def scalars(result: dict) -> dict:
    """An analysis's result as one printable line's worth: its scalars, and Table 3's
    returns per test-context quality."""
    found = {k: v for k, v in result.items() if not isinstance(v, (list, dict))}
    for quality, cell in (result.get("shift") or {}).items():
        found[f"test with {quality}"] = round(cell["mean"], 3)
    return found
