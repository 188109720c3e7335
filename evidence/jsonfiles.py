"""The evidence path's JSON files: read with an error naming the file, written never over an
existing one (evidence is never replaced)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json(path: str | Path) -> Any:
    """A JSON file; a missing or malformed file is a ValueError naming it."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"no file at {path}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None


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
