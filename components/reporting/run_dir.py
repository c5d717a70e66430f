"""A run directory: created once, never reused, written to atomically."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from registry import FocalppError


def default_run_dir(root: Path, recipe: str, env: str, seed: int) -> Path:
    """`<root>/<timestamp>-<recipe>-<env>-s<seed>`, suffixed `-2`, `-3`, ... if that exists."""
    stem = re.sub(r"[^\w.-]+", "_", f"{Path(recipe).stem}-{env}-s{seed}")
    base = root / f"{datetime.now():%Y%m%d-%H%M%S}-{stem}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def create_run_dir(path: Path) -> Path:
    """Create `path` (and its parents); refuse one that already exists or cannot be written."""
    if path.exists():
        raise FocalppError(
            f"output directory {path} already exists; choose another --out or remove it first"
        )
    try:
        path.mkdir(parents=True)
    except OSError as e:
        raise FocalppError(f"cannot create output directory {path}: {e.strerror}") from e
    return path


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one, never half."""
    atomic_write_bytes(path, text.encode("utf-8"))


@contextmanager
def atomic_file(path: Path, *, before_replace: Callable[[], None] | None = None):
    """A binary file that replaces `path` only once written whole and fsynced; on any error
    (or a kill before the rename) `path` keeps its old content. `before_replace` runs between
    the two (e.g. to keep the old file under another name)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """`atomic_write_text` for bytes (figures)."""
    with atomic_file(path) as f:
        f.write(data)
