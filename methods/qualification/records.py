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


# what each JSON file says of itself, read once per process while its stat is unchanged: a
# recommendation looks through the directory three times per method (records, theorem records,
# certificates), and parsing every file each time cost seconds per method
_HEADS: dict[Path, tuple[tuple[int, ...], tuple[frozenset, object] | None]] = {}


def _head(p: Path) -> tuple[frozenset, object] | None:
    """``(hash fields present, method name)`` of a JSON file, or None when it is not a JSON object."""
    try:
        st = p.stat()
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        hit = _HEADS.get(p)
        if hit is not None and hit[0] == key:
            return hit[1]
        head = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):  # unreadable_files names them
        return None
    info = None
    if isinstance(head, dict):
        method = head.get("method")
        info = (frozenset(k for k in HASH_FIELDS if k in head), method.get("name") if isinstance(method, dict) else None)
    _HEADS[p] = (key, info)
    return info


def damaged_files_of(name: str, directory: str | Path | None = None) -> list[Path]:
    """JSON files named for method ``name`` (``<safe name>.*.json``: its records, theorem records
    and certificates) that are not readable as any of them: cut short, not JSON, no hash field.
    The listings skip such files, so a damaged record would read as no record at all."""
    directory = records_dir(directory)
    if not directory.is_dir():
        return []
    return [p for p in sorted(directory.glob(f"{glob_escape(safe_name(name))}.*.json"))
            if (info := _head(p)) is None or not info[0]]


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def json_files(pattern: str, hash_field: str, name: str | None = None,
               directory: str | Path | None = None) -> list[Path]:
    """JSON files matching ``pattern`` in the records directory that carry ``hash_field``
    (optionally only those of method ``name``), sorted."""
    directory = records_dir(directory)
    if not directory.is_dir():
        return []
    out = []
    for p in sorted(directory.glob(pattern)):
        info = _head(p)
        if info is not None and hash_field in info[0] and (name is None or info[1] == name):
            out.append(p)
    return out


HASH_FIELDS = ("record_sha256", "theorem_sha256", "certificate_sha256")


def unreadable_files(directory: str | Path | None = None) -> list[tuple[Path, str]]:
    """``(path, reason)`` for every ``*.json`` file in the records directory that is not a
    record, theorem record or certificate (damaged, cut short, not JSON ...): the listings above
    skip such files, so ``simlab records verify`` and ``list`` name them instead."""
    directory = records_dir(directory)
    if not directory.is_dir():
        return []
    out = []
    for p in sorted(directory.glob("*.json")):
        try:
            head = json.loads(p.read_text())
        except OSError as exc:
            out.append((p, f"cannot be read ({exc.strerror or exc.__class__.__name__})"))
            continue
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            out.append((p, f"not valid JSON ({exc}): damaged or cut short"))
            continue
        if not (isinstance(head, dict) and any(k in head for k in HASH_FIELDS)):
            out.append((p, f"not a record, theorem record or certificate (no {', '.join(HASH_FIELDS)})"))
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
