"""The evidence path's JSON files: read with an error naming the file, written never over an
existing one (evidence is never replaced).  An object that repeats a key is refused: Python's
``json`` would keep the last value silently, so ``{"passed": true, "passed": false}`` would read
as a failure to the program and as a pass to a person reading the line."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class RepeatedKey(ValueError):
    """A JSON object names one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    obj: dict = {}
    for key, value in pairs:
        if key in obj:
            raise RepeatedKey(f"key {key!r} appears twice in one object (which value counts would be a guess)")
        obj[key] = value
    return obj


def loads(text: str | bytes, **kwargs) -> Any:
    """``json.loads`` that refuses an object repeating a key (:class:`RepeatedKey`)."""
    return json.loads(text, object_pairs_hook=_unique_keys, **kwargs)


def read_json(path: str | Path) -> Any:
    """A JSON file; a missing or malformed file, or one repeating a key, is a ValueError naming it."""
    try:
        return loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"no file at {path}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    except RepeatedKey as exc:
        raise ValueError(f"{path}: {exc}") from None


def write_json(path: str | Path, payload: Any, overwrite: bool = False) -> None:
    """Write JSON (a missing folder is created); an existing file is refused unless ``overwrite``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=1, allow_nan=False) + "\n"
    try:
        with open(path, "w" if overwrite else "x") as f:
            f.write(text)
    except FileExistsError:
        raise ValueError(f"{path} exists; it is never overwritten (choose a new path)") from None
