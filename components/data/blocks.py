"""A dataset is built in fixed blocks of tasks, each in a process of portable numerics.

`behaviour_sac.blocks` (a collection setting, recorded in the manifest) cuts a family's tasks
into that many contiguous blocks; each block is one task-batched behaviour training of its own,
seeded by the dataset seed and the block (`block_seed`). A block's bytes are then a function of
the settings, the seed and the block alone: which process builds it, how many build beside it,
whether it was stopped and resumed, never enter (PyTorch's vectorised kernels round the last
few elements of a tensor otherwise than the rest, so a task batched beside other tasks is not
bit for bit the task batched alone: the blocks are fixed by the settings, never by the machine).

So a build spreads its blocks over as many worker processes as it has cores (`workers`), each
with portable numerics and one thread (components/numerics.py), and writes each finished block
to `<family>/.<dataset>.blocks/<i>-of-<n>/` (atomically; a killed build keeps its finished
blocks and continues the others from their resume points); then the blocks are joined task by
task into the dataset. A build of one block is written in place. Where this process already
has portable numerics and one worker is to run, blocks are built here, one after the other.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import shutil
import signal
import traceback
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import connection
from pathlib import Path
from typing import Any

import numpy as np

import components.numerics as numerics
import components.products as products
from components.data.behaviour import Progress
from components.data.protocols import Collected
from components.data.store import Dataset, DatasetError, Policies, QualityData, write_dataset
from components.transitions import FIELDS, Transitions
from registry import FocalppError, entries, get
from registry.gin_state import bindings, config_text

WORKERS_ENV = numerics.WORKERS_ENV


def blocks_of(builder: Any) -> int:
    """How many blocks a protocol builds in (1 where it trains no behaviour SAC)."""
    return int(getattr(getattr(builder, "behaviour", None), "blocks", 1))


def block_tasks(n_tasks: int, index: int, blocks: int) -> list[int]:
    """The task indices of block `index` of `blocks` (contiguous, sizes differ by at most 1)."""
    return np.array_split(np.arange(n_tasks), blocks)[index].tolist()


def block_seed(seed: int, index: int, blocks: int) -> int:
    """Block `index`'s seed; a build of one block is seeded by the dataset seed itself."""
    if blocks == 1:
        return seed
    return int(np.random.SeedSequence([seed, index, blocks]).generate_state(1)[0])


def blocks_dir(path: Path) -> Path:
    """Where the finished blocks of `path` wait to be joined."""
    return path.parent / f".{path.name}.blocks"


def block_dir(path: Path, index: int, blocks: int) -> Path:
    return blocks_dir(path) / f"{index}-of-{blocks}"


def partial_dir(path: Path) -> Path:
    """Where a build of `path` keeps its state between resume points (removed once built)."""
    return path.parent / f".{path.name}.partial"


def build_cores() -> int:
    """The cores a build may use: those this process may run on, capped by
    $FOCALPP_BUILD_WORKERS."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cap = os.environ.get(WORKERS_ENV)
    if cap is not None:
        try:
            cores = min(cores or 1, int(cap))
        except ValueError:
            raise DatasetError(f"${WORKERS_ENV} = {cap!r}: expected a whole number ≥ 1") from None
        if cores < 1:
            raise DatasetError(f"${WORKERS_ENV} = {cap!r}: expected a whole number ≥ 1")
    return max(1, cores or 1)


def default_workers(blocks: int) -> int:
    """Worker processes for `blocks`: one per core the build may use, at most one per block."""
    return min(blocks, build_cores())


@dataclass(frozen=True)
class Block:
    """One block of a build: all a worker needs to build it (picklable).

    `header`: the dataset's manifest entries (the block adds its own); `target`: where the
    block is written (the dataset itself for a build of one block); `config`: the gin bindings
    in force (a spawned worker parses them; `modules` registered what they name)."""

    family: str
    protocol: str
    seed: int
    index: int
    blocks: int
    tasks: list[int] | None
    target: Path
    header: dict[str, Any]
    config: str = ""
    modules: tuple[str, ...] = field(default=())
    numerics: str = numerics.PORTABLE


def build_block(block: Block, progress: Progress | None = None) -> None:
    """Build `block` and write it to `block.target` (unless it is there), with its numerics in
    force (portable ones are refused where they do not hold)."""
    if block.target.exists():
        return
    state = numerics.require(block.numerics)
    builder = get("dataset", block.protocol)()
    family = get("env", block.family)(seed=block.seed)
    collected = builder.build(
        family,
        seed=block_seed(block.seed, block.index, block.blocks),
        progress=progress,
        tasks=block.tasks,
        resume=partial_dir(block.target),
    )
    header = {**block.header, "numerics": state}
    if block.blocks > 1:
        header["block"] = {"index": block.index, "count": block.blocks, "tasks": block.tasks}
    write_collected(block.target, header, collected)
    shutil.rmtree(partial_dir(block.target), ignore_errors=True)


def write_collected(path: Path, header: dict, collected: Collected) -> Path:
    """Write what a protocol collected (qualities, provenance, policies) under `header`."""
    return write_dataset(
        path,
        header=header,
        qualities=collected.qualities,
        sources=collected.sources,
        policies=collected.policies,
    )


def build_in_blocks(
    path: Path,
    family_name: str,
    protocol: str,
    seed: int,
    n_tasks: int,
    header: dict[str, Any],
    blocks: int,
    *,
    progress: Progress | None = None,
    workers: int | None = None,
    load: Callable[[Path], Dataset],
    mode: str = numerics.PORTABLE,
) -> None:
    """Build the dataset at `path` in `blocks` blocks on `workers` processes (default: one
    per core), then join them into `path`; `load(dir)` reads and checks a finished block.
    `mode` 'free' builds here, one block after the other, with this process's own kernels and
    threads: data of this machine only (for timing the portable build against it)."""
    if blocks > n_tasks:
        raise DatasetError(
            f"behaviour_sac.blocks = {blocks}, but {family_name} has {n_tasks} tasks: expected "
            f"1 ≤ blocks ≤ {n_tasks}"
        )
    products.check_environment()
    workers = default_workers(blocks) if workers is None else workers
    if workers < 1:
        raise DatasetError(f"workers = {workers}: expected a whole number ≥ 1")
    jobs = [
        Block(
            family=family_name,
            protocol=protocol,
            seed=seed,
            index=i,
            blocks=blocks,
            tasks=block_tasks(n_tasks, i, blocks) if blocks > 1 else None,
            target=path if blocks == 1 else block_dir(path, i, blocks),
            header=header,
            numerics=mode,
        )
        for i in range(blocks)
    ]
    todo = [job for job in jobs if not job.target.exists()]
    try:
        if mode == numerics.FREE or (
            min(workers, len(todo)) <= 1 and numerics.mode() == numerics.PORTABLE
        ):
            # here, one after the other: nothing to start. A portable block's products may
            # use every core the build may (the same bits: components/products.py)
            lone = mode == numerics.PORTABLE and len(todo) == 1
            with _product_threads(_spare_threads() if lone else 1):
                for job in todo:
                    build_block(job, _offset(progress, jobs, job))
        elif todo:
            _in_workers(todo, min(workers, len(todo)), progress)
    finally:  # finished blocks (and resume points) are kept for the next try; nothing else
        folder = blocks_dir(path)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    if blocks > 1:
        join_blocks(path, header, [load(job.target) for job in jobs])
        shutil.rmtree(blocks_dir(path), ignore_errors=True)


def _offset(progress: Progress | None, jobs: list[Block], job: Block) -> Progress | None:
    """The build's progress while `job` runs alone: blocks before it count as done."""
    if progress is None:
        return None
    before = jobs.index(job)
    return lambda done, total: progress(before * total + done, len(jobs) * total)


def _in_workers(todo: list[Block], workers: int, progress: Progress | None) -> None:
    """Build `todo` in spawned processes of portable numerics, one per block, at most
    `workers` at a time. The first error raised in a worker is raised here; a worker that ends
    without one (killed, out of memory) ends the build with an error that says so, at once.
    Finished blocks are kept either way; the other workers are stopped."""
    config = config_text(dict(bindings()))
    modules = tuple(sorted({e.module for e in entries() if not e.module.startswith("components")}))
    waiting = [
        (slot, Block(**{**job.__dict__, "config": config, "modules": modules}))
        for slot, job in enumerate(todo)
    ]
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Array("q", 2 * len(todo), lock=False)  # per block: steps done, steps in all
    running: dict[int, tuple[Any, Any]] = {}  # sentinel -> (process, the end it reports on)
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                reader, writer = ctx.Pipe(duplex=False)
                env = numerics.child_env(numerics.PORTABLE)  # it inherits them
                env.setdefault(products.THREADS_ENV, str(max(1, build_cores() // workers)))
                with _environment(env):
                    process = ctx.Process(target=_worker, args=(done, *waiting.pop(0), writer))
                    process.start()
                writer.close()
                running[process.sentinel] = (process, reader)
            for sentinel in connection.wait(list(running), timeout=0.5):
                process, reader = running.pop(sentinel)
                try:  # it has ended: its report is in the pipe, or the pipe is closed empty
                    error = reader.recv()
                except EOFError:
                    error = _LOST
                except Exception as unreadable:  # pickled there, not to be rebuilt here
                    error = DatasetError(
                        f"a worker building a block failed with an error that cannot be read "
                        f"here ({unreadable!r}); its traceback is above"
                    )
                process.join()
                if error is _LOST:
                    raise DatasetError(
                        "a worker building the dataset's blocks ended without an error of its "
                        f"own ({_ending(process.exitcode)}: killed, or out of memory?). The "
                        "blocks already finished are kept: run the command again to build the rest"
                    )
                if error is not None:
                    raise error
            if progress is not None and all(done[1::2]):
                progress(sum(done[0::2]), sum(done[1::2]))
    finally:
        for process, _ in running.values():
            process.terminate()
            process.join()


_LOST = object()  # what a worker that ended without reporting reported


def _worker(done, slot: int, block: Block, report) -> None:
    """A worker process: build one block, then report None or the error that stopped it."""
    _worker_init(done)
    try:
        _worker_build(slot, block)
    except BaseException as error:  # every failure goes to the parent
        if not isinstance(error, FocalppError):
            traceback.print_exc()  # a bug: its traceback here, where it happened
        try:
            report.send(error)
        except Exception:  # an error that cannot be pickled: its words
            report.send(DatasetError(f"a worker building a block failed: {error!r}"))
    else:
        report.send(None)


def _ending(code: int) -> str:
    """A process's exit code in words: -9 -> 'signal SIGKILL'."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
        return f"signal {-code}"
    return f"exit status {code}"


def _spare_threads() -> int:
    """Product threads for a block built alone here: $FOCALPP_PRODUCT_THREADS where set, else
    every core the build may use."""
    if products.THREADS_ENV in os.environ:
        return products.threads_from_environment()
    return build_cores()


@contextmanager
def _product_threads(n: int):
    """This process's float32 products on `n` threads while the block builds here."""
    before = products.threads()
    products.use_threads(n)
    try:
        yield
    finally:
        products.use_threads(before)


@contextmanager
def _environment(env: dict[str, str]):
    """os.environ replaced by `env` while worker processes start (they inherit it)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


_DONE: Any = None


def _worker_init(done) -> None:
    global _DONE
    _DONE = done
    _die_with_parent()


def _die_with_parent() -> None:
    """Ask the kernel to end this worker when the build that started it ends, however it ends
    (a killed build must not leave its workers building on; Linux: PR_SET_PDEATHSIG). A
    finished block stays written; the rest is built again when the build is run again."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        ctypes.CDLL(name).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pool's own clean-up still applies
        return
    if os.getppid() == 1:  # the build ended before this worker got here
        os._exit(1)


# what a build's bindings can name: the protocols, the families, the behaviour learners
BUILD_PACKAGES = ("components.data", "components.envs", "components.rl")


def _worker_build(slot: int, block: Block) -> None:
    """In a spawned worker: register what a build uses, take the parent's gin bindings, build
    (bindings of parts a build never makes, an algorithm's, are skipped)."""
    import pkgutil

    import gin

    for package in BUILD_PACKAGES:
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            importlib.import_module(info.name)
    for module in block.modules:
        with contextlib.suppress(ImportError):  # a plugin loaded from a file: its bindings skip
            importlib.import_module(module)
    gin.clear_config()
    gin.parse_config(block.config, skip_unknown=True)

    def report(done: int, total: int) -> None:
        _DONE[2 * slot], _DONE[2 * slot + 1] = done, total

    build_block(block, report)


def one_numerics(parts: Sequence[Dataset]) -> bool:
    """Whether `parts` (blocks or shards of one dataset) were built with the same numerics and
    library versions (their manifests' `numerics`)."""
    return len({json_key(p.manifest.get("numerics")) for p in parts}) == 1


def join_blocks(path: Path, header: dict[str, Any], parts: Sequence[Dataset]) -> None:
    """Concatenate the blocks (each already validated) task by task into `path`."""
    covered = [t for p in parts for t in p.manifest["block"]["tasks"]]
    if covered != list(range(len(parts[0].tasks))):
        raise DatasetError(f"the blocks under {blocks_dir(path)} do not cover every task once")
    if not one_numerics(parts):
        raise DatasetError(
            f"the blocks under {blocks_dir(path)} were built with different numerics or "
            "library versions: delete that folder and build again"
        )
    qualities, sources = {}, {}
    for name in parts[0].qualities:
        qualities[name] = concatenate([p.quality(name) for p in parts])
        sources[name] = [src for p in parts for src in p.manifest["qualities"][name]["sources"]]
    policies = None
    if all(p.has_policies for p in parts):  # each block's tasks side by side
        kept = [p.policies() for p in parts]
        weights = {k: np.concatenate([p.weights[k] for p in kept], 1) for k in kept[0].weights}
        features = [p.task_features for p in kept]
        policies = Policies(
            kept[0].checkpoint_steps,
            kept[0].hidden,
            weights,
            task_features=None if features[0] is None else np.concatenate(features),
        )
    merged = Collected(qualities, sources, parts[0].manifest["settings"], policies)
    write_collected(path, {**header, "numerics": parts[0].manifest["numerics"]}, merged)


def json_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def concatenate(parts: list[QualityData]) -> QualityData:
    """Stack per-task data along the task axis, padding each part to the longest task."""
    n = max(p.transitions.obs.shape[1] for p in parts)

    def stack(name: str) -> np.ndarray:
        arrays = [getattr(p.transitions, name) for p in parts]
        return np.concatenate(
            [np.pad(a, [(0, 0), (0, n - a.shape[1])] + [(0, 0)] * (a.ndim - 2)) for a in arrays]
        )

    return QualityData(
        Transitions(**{f: stack(f) for f in FIELDS}),
        np.concatenate([p.length for p in parts]),
    )
