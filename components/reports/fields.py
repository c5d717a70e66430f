"""The type and range of every field a report reads from a run's evaluation.

A run's final meta-test (eval.json, a record's `eval` column) and each meta-test line of its
log (metrics.jsonl's `"kind": "eval"` lines, a record's meta_tests.jsonl) are checked field by
field when read, so a hand edit or a damaged file is named — file, field, value and what was
expected — instead of printing as a number: a success rate of 1.5, a negative standard deviation
or time, a step that is a text, a context of −1 transitions. A field this file does not know is
refused too: a reader that let it through would not know what it means.

The fields are those `MetaTestResult.to_dict` (components/evaluation/meta_test.py) and
`write_final` (components/algorithms/meta_tests.py) write; a new field is added here with them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from registry import FocalppError

Check = Callable[[Any], "str | None"]  # None when the value is fine, else what was expected


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(lo: float = -math.inf, hi: float = math.inf, *, nullable: bool = False) -> Check:
    """A finite number in [lo, hi] (null too where an older run did not measure it)."""
    span = (
        "a finite number"
        if (lo, hi) == (-math.inf, math.inf)
        else f"a number in [{lo:g}, {hi:g}]"
        if hi < math.inf
        else f"a finite number ≥ {lo:g}"
    )

    def check(value: Any) -> str | None:
        if value is None and nullable:
            return None
        if _number(value) and math.isfinite(value) and lo <= value <= hi:
            return None
        return span + (" or null" if nullable else "")

    return check


def integer(lo: int) -> Check:
    def check(value: Any) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= lo
        return None if ok else f"an integer ≥ {lo}"

    return check


def text(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "a text"


def integers(lo: int) -> Check:
    one = integer(lo)

    def check(value: Any) -> str | None:
        ok = isinstance(value, list) and value and all(one(v) is None for v in value)
        return None if ok else f"a list of integers ≥ {lo}"

    return check


def numbers(value: Any) -> str | None:
    ok = isinstance(value, list) and all(_number(x) and math.isfinite(x) for x in value)
    return None if ok else "a list of finite numbers"


def per_task(inner: Check, *, nan: bool = False) -> Check:
    """An object of test task -> value, each value checked by `inner` (`check_fields` names the
    task); with `nan`, NaN too: a task whose normalised score is undefined, left out of the
    mean by nanmean (components/data/returns.py)."""

    def check(value: Any) -> str | None:
        ok = isinstance(value, dict) and value
        return None if ok else "an object of test task -> number"

    def item(value: Any) -> str | None:
        return None if nan and _number(value) and math.isnan(value) else inner(value)

    check.item = item  # type: ignore[attr-defined]
    return check


def nested(fields: dict[str, Check], required: tuple[str, ...] = (), *, each: bool = False):
    """An object whose fields follow `fields` (or, with `each`, an object of name -> such an
    object: a test-context protocol's cells); `check_fields` checks the inner fields and names
    each one."""

    def check(value: Any) -> str | None:
        ok = isinstance(value, dict) and (value or not each)
        return None if ok else ("an object of name -> object" if each else "an object")

    check.fields, check.required, check.each = fields, required, each  # type: ignore[attr-defined]
    return check


FINITE, NULLABLE = number(), number(nullable=True)
STD, SECONDS, SHARE = number(0), number(0), number(0, 1)

# a test-context protocol's cell (MetaTestResult.cell)
CELL = {
    "mean": FINITE,
    "std": STD,
    "dense_mean": NULLABLE,
    "per_task": per_task(FINITE),
    "paper_mean": FINITE,
    "success_rate": SHARE,
    "normalised_score": NULLABLE,
}

# one meta-test: a line of the log, eval.json's top level and its last-meta-tests means
SCORES: dict[str, Check] = {
    "test_return_mean": FINITE,
    "test_return_std": STD,
    "dense_return_mean": NULLABLE,
    "sparse_return_mean": NULLABLE,
    "paper_return_mean": NULLABLE,
    "paper_return_std": number(0, nullable=True),
    "paper_formula": text,
    "success_rate": SHARE,
    "normalised_score": NULLABLE,
    "normalised_score_std": number(0, nullable=True),
    "dataset_return_mean": NULLABLE,
    "context_sizes": integers(1),
}
META_TEST: dict[str, Check] = {"kind": text, "step": integer(0), **SCORES}
EVAL: dict[str, Check] = {
    **SCORES,
    "per_task_return": per_task(FINITE),
    "per_task_sparse_return": per_task(FINITE),
    "per_task_paper_return": per_task(FINITE),
    "per_task_success": per_task(SHARE),
    "per_task_normalised_score": per_task(FINITE, nan=True),
    "per_task_dataset_return": per_task(FINITE),
    "ceiling": per_task(FINITE),  # headline name -> the true-task encoder's return
    "steps": integer(0),
    "train_seconds": SECONDS,
    "meta_test_seconds": SECONDS,
    "last_meta_tests": nested(
        {"count": integer(1), "steps": integers(0), **SCORES}, required=("count", "steps")
    ),
    "test_contexts": nested(CELL, required=("mean",), each=True),  # protocol -> its cell
    "curve": numbers,  # the headline return per episode of a growing context
}


def check_fields(
    record: Any,
    fields: dict[str, Check],
    where: str,
    fix: str,
    required: tuple[str, ...] = ("test_return_mean",),
    path: str = "",
) -> None:
    """Refuse `record` unless it is an object whose every field follows `fields`, naming the
    file (`where`), the field (`path` dotted inside), its value and what was expected, then
    `fix` (what the user can do)."""
    if not isinstance(record, dict):
        raise FocalppError(
            f"{where} has {path or 'a record'} = {_shown(record)}, expected a JSON object: {fix}"
        )
    for key in required:
        if key not in record:
            raise FocalppError(f"{where} lacks {path + '.' if path else ''}{key}: {fix}")
    for key, value in record.items():
        name = f"{path}.{key}" if path else key
        check = fields.get(key)
        if check is None:
            raise FocalppError(
                f"{where} has {name}, which is not a field of a meta-test (expected some of "
                f"{', '.join(fields)}): {fix}"
            )
        expected = check(value)
        if expected is not None:
            raise FocalppError(f"{where} has {name} = {_shown(value)}, expected {expected}: {fix}")
        for part, item in value.items() if hasattr(check, "item") else ():
            expected = check.item(item)
            if expected is not None:
                raise FocalppError(
                    f"{where} has {name}.{part} = {_shown(item)}, expected {expected}: {fix}"
                )
        if hasattr(check, "fields"):
            inner = value.items() if check.each else [(None, value)]
            for part, item in inner:
                at = name if part is None else f"{name}.{part}"
                check_fields(item, check.fields, where, fix, check.required, at)


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "…"


# a run line's scores (the final and last-three paper-comparable returns; null: not enough
# meta-tests) and its training time
RUN_SCORES: dict[str, Check] = {
    "final": NULLABLE,
    "last_three": NULLABLE,
    "train_seconds": number(0, nullable=True),
}

# a run line's `numerics` (components/numerics.py `state`): what decided its floating point
NUMERICS: dict[str, Check] = {
    "mode": lambda v: None if v in ("portable", "free") else "'portable' or 'free'",
    "mkl_cbwr": text,
    "torch_cpu_capability": text,
    "numpy_dispatch": lambda v: (
        None
        if isinstance(v, list) and all(isinstance(x, str) for x in v)
        else "a list of CPU feature names"
    ),
    "openblas": text,  # numpy's OpenBLAS: its kernels and threads (recorded since 2026-12-06)
    "torch_threads": integer(1),
    "torch": text,
    "numpy": text,
    "mujoco": text,
    "libc": text,
    "vector_math": lambda v: None if v in ("portable", "mkl") else "'portable' or 'mkl'",
    "products": lambda v: None if v in ("openblas", "mkl") else "'openblas' or 'mkl'",
}
