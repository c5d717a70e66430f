"""A study's job in a process of its own, calling the library: `run`, `resume`, `analyse`,
`collect` or `collect_shard`, as `python -m components.sweep.worker CALL JSON`.

The process is fresh for each job so that its numerics and thread budget are set before torch
loads (`job.py` gives it the environment), a crash stays in it, and gin's global state is its
own. It prints what the command line would (the run's metrics and headline) into the job's log;
a user's error (a bad recipe, binding or dataset) ends it with one `error:` line and exit
status 2, which the study does not retry.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

MODULE = "components.sweep.worker"  # `__name__` is `__main__` in the worker process itself
CALLS = ("run", "resume", "analyse", "collect", "collect_shard")
USER_ERROR = 2


def command(call: str, arguments: dict[str, Any]) -> list[str]:
    """argv of a worker process doing `call` with `arguments` (JSON-able)."""
    if call not in CALLS:
        raise ValueError(f"no worker call {call!r}: one of {CALLS}")
    return [sys.executable, "-m", MODULE, call, json.dumps(arguments, sort_keys=True)]


def _run(
    recipe, env, scale, seeds, grouped, out, numerics, bindings=(), plugins=(), label=""
) -> None:
    from components.experiment import run
    from components.numerics import require
    from registry import compose

    require(numerics)  # set by the job before this process loaded torch
    comp = compose(recipe, env=env, scale=scale, seed=seeds[0], bindings=bindings, plugins=plugins)
    print(f"composed {comp.recipe} for {env} at scale {scale}, seeds {list(seeds)}")
    for said in comp.overridden:  # as tools/run.py warns
        print(f"warning: {said} (a column or scale file changed the row's own binding)")
    _show(run(comp, out, seeds=tuple(seeds) if grouped else None, label=label))


def _resume(run_dirs) -> None:
    from components.experiment import resume

    finished = resume(*run_dirs)
    if finished is not None:
        _show(finished)


def _analyse(run_dir, analyses, plugins=()) -> None:
    from components.evaluation.analyses import scalars
    from components.experiment import analyse

    for name, result in analyse(run_dir, analyses, plugins).items():
        print(f"{name}: {scalars(result)}")


def _collect(env, scale, bindings, merge=None) -> None:
    from components.data.collect import collect
    from components.outputs.progress import progress_lines

    progress = progress_lines(f"collecting {env}")  # a line with rate and time left, 30 s apart
    dataset = collect(env, scale=scale, bindings=bindings, merge=merge, progress=progress)
    print(f"dataset: {dataset.path}")


def _collect_shard(env, index, count, scale, bindings, numerics="portable") -> None:
    from components.data.collect import collect_shard
    from components.outputs.progress import progress_lines

    progress = progress_lines(f"collecting {env}, shard {index}/{count}")
    path = collect_shard(
        env, index, count, scale=scale, bindings=bindings, progress=progress, numerics=numerics
    )
    print(f"shard {index}/{count}: {path}")


def _show(finished: Any) -> None:
    for key, value in finished.metrics.items():
        print(f"{key}: {value}")
    if finished.headline is not None:
        print(finished.headline)


DO: dict[str, Callable[..., None]] = {
    "run": _run,
    "resume": _resume,
    "analyse": _analyse,
    "collect": _collect,
    "collect_shard": _collect_shard,
}


def parse(argv: Sequence[str]) -> tuple[Callable[..., None], dict[str, Any]]:
    """The library call and its arguments a worker's argv names; a ValueError saying what is
    wrong (the job that started it built a bad call: nothing is run)."""
    if len(argv) != 2:
        raise ValueError(f"expected CALL JSON (2 arguments), got {len(argv)}: {list(argv)}")
    call, text = argv
    if call not in DO:
        raise ValueError(f"no worker call {call!r}: one of {', '.join(CALLS)}")
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"the arguments of {call} are not JSON ({e}): {text[:200]!r}") from e
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of {call} must be a JSON object, got {text[:200]!r}")
    try:
        inspect.signature(DO[call]).bind(**arguments)
    except TypeError as e:
        raise ValueError(f"the arguments of {call} do not fit it: {e}") from e
    return DO[call], arguments


def main(argv: Sequence[str] | None = None) -> int:
    try:
        do, arguments = parse(sys.argv[1:] if argv is None else list(argv))
    except ValueError as e:
        print(f"error: python -m {MODULE}: {e}", file=sys.stderr)
        return USER_ERROR
    from components.outputs.console import err
    from components.runtime import tune_allocator
    from registry import FocalppError

    tune_allocator()
    try:
        do(**arguments)
    except FocalppError as e:
        err.print(f"error: {e}", markup=False)
        return USER_ERROR
    except KeyboardInterrupt as e:
        err.print(f"interrupted: {e}" if str(e) else "interrupted", markup=False)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
