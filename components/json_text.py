"""JSON text as the tools read it: a file a user may have edited or damaged.

`loads` fails in one way, `ValueError`, whatever is wrong with the text: not JSON, not text (bytes
that are not UTF-8), nested deeper than the parser recurses (json raises RecursionError there),
or an object giving a key twice (json keeps the last value and drops the others unseen). Each
reader then names the file and says what to do.
"""

from __future__ import annotations

import json
from typing import Any


def loads(text: str | bytes) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_once)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) != len(pairs):
        keys = [key for key, _ in pairs]
        raise ValueError(f"key {next(k for k in keys if keys.count(k) > 1)!r} given twice")
    return record
