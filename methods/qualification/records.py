"""Where qualification records live.

Resolution order for the records directory (``records_dir``):

1. an explicit directory (``--records DIR`` on the commands that read records);
2. the ``SIMLAB_RECORDS`` environment variable;
3. the source checkout's ``results/qualification`` when simlab runs from a checkout;
4. the copy shipped inside the installed package (``methods/qualification/records``, the
   wheel's package data: ``[tool.hatch.build.targets.wheel.force-include]``).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from simlab.hashing import short

ENV_VAR = "SIMLAB_RECORDS"
_HERE = Path(__file__).resolve().parent
SOURCE_RECORDS = _HERE.parents[1] / "results" / "qualification"
INSTALLED_RECORDS = _HERE / "records"


def records_dir(directory: str | Path | None = None) -> Path:
    """The records directory to read (see the module docstring for the order)."""
    if directory is not None:
        return Path(directory)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    if SOURCE_RECORDS.is_dir() and (SOURCE_RECORDS.parents[1] / "pyproject.toml").is_file():
        return SOURCE_RECORDS
    return INSTALLED_RECORDS


def json_files(pattern: str, hash_field: str, name: str | None = None,
               directory: str | Path | None = None) -> list[Path]:
    """JSON files matching ``pattern`` in the records directory that carry ``hash_field``
    (optionally only those of method ``name``), sorted."""
    directory = records_dir(directory)
    if not directory.is_dir():
        return []
    out = []
    for p in sorted(directory.glob(pattern)):
        try:
            head = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(head, dict) and hash_field in head and (
                name is None or head.get("method", {}).get("name") == name):
            out.append(p)
    return out


def record_paths(name: str | None = None, directory: str | Path | None = None) -> list[Path]:
    """Record files in the records directory (optionally only those of one method), sorted."""
    return json_files("*.json", "record_sha256", name, directory)


def record_stem(method_name: str, policy) -> str:
    """File stem ``<method>.<policy hash prefix>``; a wrapper's ``outer[inner]`` becomes
    ``outer--inner`` (no shell glob characters in file names)."""
    return f"{safe_name(method_name)}.{short(policy.sha256, 10)}"


def safe_name(method_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", method_name.replace("[", "--").replace("]", "")).strip("-")
