"""A run directory: created once, never reused, written to atomically."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path

from registry import FocalppError, WriteError

LOCK = ".lock"  # held by the one process that trains in a run directory
ANALYSIS = "analysis.json"  # each analysis's result under its name


def run_name(recipe: str, env: str, seed: int) -> str:
    """`<recipe>-<env>-s<seed>`, as a file name."""
    return re.sub(r"[^\w.-]+", "_", f"{Path(recipe).stem}-{env}-s{seed}")


def default_run_dir(root: Path, recipe: str, env: str, seed: int) -> Path:
    """`<root>/<timestamp>-<recipe>-<env>-s<seed>`, suffixed `-2`, `-3`, ... if that exists."""
    base = root / f"{datetime.now():%Y%m%d-%H%M%S}-{run_name(recipe, env, seed)}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def create_run_dir(path: Path) -> Path:
    """Create `path` (and its parents); refuse one that already exists or cannot be written."""
    if make_dirs(path, "output directory") is None:
        raise FocalppError(
            f"output directory {path} already exists; choose another --out or remove it first"
        )
    return path


def make_dirs(path: Path, what: str) -> Path | None:
    """Create directory `path` and its missing parents; return the outermost directory made,
    for a caller to remove if what it then writes fails, or None where `path` was there. A file
    in the way, too long a name or a place that cannot be written is refused, naming `what`
    (e.g. "output directory") and the path."""
    path = Path(path)
    check_name_lengths(path, what)
    try:
        if path.is_dir():
            return None
        if path.exists():
            raise FocalppError(f"{what} {path} is a file, not a directory; choose another path")
        top = path
        while top.parent != top and not top.parent.exists():
            top = top.parent
    except OSError as e:
        raise FocalppError(f"cannot create {what} {path}: {e.strerror}") from e
    try:
        path.mkdir(parents=True)
    except OSError as e:
        shutil.rmtree(top, ignore_errors=True)  # the parents this call made
        raise FocalppError(f"cannot create {what} {path}: {e.strerror}") from e
    return top


@contextmanager
def removed_on_failure(created: Path | None):
    """Remove `created` (what `make_dirs` made) if the block fails: no half-made output stays."""
    try:
        yield
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise


def check_name_lengths(path: Path, what: str) -> None:
    """Refuse a path with a name longer than the file system takes (ENAMETOOLONG), saying so,
    before anything is created on the way to it."""
    limit = _name_max(Path(path))
    for name in Path(path).parts:
        size = len(os.fsencode(name))
        if size > limit:
            raise FocalppError(
                f"{what} {path}: the name {name[:40]!r}… is {size} bytes, longer than the "
                f"{limit} bytes a file or directory name may have here; choose a shorter name"
            )


def _name_max(path: Path) -> int:
    """The longest file name the file system of `path`'s nearest existing ancestor takes."""
    here = path.absolute()
    while True:
        try:
            if here.exists():
                return os.pathconf(here, "PC_NAME_MAX")
        except OSError:
            pass  # this ancestor's own name is too long, or it cannot be read: look higher
        if here.parent == here:
            return 255
        here = here.parent


def missing_analyses(run_dir: Path, names: Sequence[str]) -> tuple[str, ...]:
    """The analyses of `names` that the run's analysis.json has no result of yet."""
    path = run_dir / ANALYSIS
    done = set(json.loads(path.read_text())) if path.is_file() else set()
    return tuple(n for n in names if n not in done)


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one, never half."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _staged(path: Path) -> tuple[int, str]:
    """A temporary file beside `path`, with the mode a file made by open() would get (mkstemp
    gives 0o600: a run's files would be unreadable to the group that shares them)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    except OSError:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, tmp


def _umask() -> int:
    """This process's umask, read without changing it where Linux shows it (no other thread
    can then create a file under a cleared mask); else set and restored at once."""
    with suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_file(path: Path, *, before_replace: Callable[[], None] | None = None):
    """A binary file that replaces `path` only once written whole and fsynced; on any error
    (or a kill before the rename) `path` keeps its old content. `before_replace` runs between
    the two (e.g. to keep the old file under another name)."""
    path = Path(path)
    kept = f"{path.name} holds what it held before, whole." if path.exists() else ""
    try:
        fd, tmp = _staged(path)
    except OSError as e:  # the folder is gone, is a file now, or cannot be written in
        raise WriteError(path, e, kept) from e
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException as e:
        with suppress(OSError):
            Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):  # a full disk, a file-size limit, a permission lost
            raise WriteError(path, e, kept) from e
        raise


def atomic_write_all(files: Mapping[Path, bytes]) -> None:
    """Write several files as one: each is written whole and fsynced beside its path first, and
    only once every one is written are they renamed into place (a rename needs no room), so a
    failed write leaves every file as it was, never some new and some old."""
    staged: list[tuple[str, Path]] = []
    path = None
    try:
        for path, data in files.items():
            fd, tmp = _staged(path)
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
    except BaseException as e:
        for tmp, _ in staged:
            with suppress(OSError):
                Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            names = ", ".join(p.name for p in files)
            kept = f"None of {names} was written; what was there before is intact."
            raise WriteError(path, e, kept) from e
        raise
    for tmp, path in staged:
        os.replace(tmp, path)


@contextmanager
def staged_folder(path: Path):
    """A folder whose files land in `path` together: written into a temporary folder beside
    it, then renamed in one by one once all are written (a rename needs no room). A write that
    fails replaces nothing in `path`, and its error names the file's place in `path`."""
    try:
        stage = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    except OSError as e:
        raise WriteError(path, e) from e
    try:
        try:
            yield stage
        except WriteError as e:
            where = Path(e.path)
            named = path / where.relative_to(stage) if where.is_relative_to(stage) else where
            raise WriteError(named, e.cause, f"Nothing in {path} was replaced.") from e.cause
        for written in sorted(stage.iterdir()):
            os.replace(written, path / written.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """`atomic_write_text` for bytes (figures)."""
    with atomic_file(path) as f:
        f.write(data)


@contextmanager
def run_lock(run_dir: Path, doing: str = "resume"):
    """Hold the run directory's lock while this process trains in it, so that a second
    `tools/run.py --resume` of the run is refused instead of both writing the same files. The
    kernel drops the lock when the process ends, however it ends (a kill -9 too); the lock file
    goes on release, and an empty one a killed process left behind is harmless."""
    fd = _lock(Path(run_dir), doing)
    try:
        yield
    finally:
        # while held: nobody holds this file; a folder moved away or replaced by a file
        # mid-run has no lock file here to remove (the error that ended the run names it)
        with suppress(OSError):
            (Path(run_dir) / LOCK).unlink(missing_ok=True)
        os.close(fd)


def _lock(run_dir: Path, doing: str) -> int:
    path = run_dir / LOCK
    if not os.access(run_dir, os.W_OK | os.X_OK):  # before the lock file is made in it
        raise _unwritable(run_dir, doing, os.strerror(errno.EACCES))
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise _unwritable(run_dir, doing, e.strerror) from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FocalppError(
                f"cannot {doing} {run_dir}: another process is training it (it holds {path}); "
                "wait for it to end (or stop it and resume it), then try again"
            ) from None
        if _same_file(fd, path):
            return fd
        os.close(fd)  # the holder removed the file as it let go: lock the one there now


def _unwritable(run_dir: Path, doing: str, reason: str) -> FocalppError:
    return FocalppError(
        f"cannot {doing} {run_dir}: cannot write in it ({reason}); a run writes its checkpoints "
        f"and metrics there: make it writable (chmod -R u+w {run_dir}) or resume a writable copy"
    )


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False
