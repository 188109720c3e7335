"""Content addresses: ``sha256:<hex>`` of RFC 8785 canonical JSON (values) or of raw bytes (files).

A hash establishes equality to an anchor, not validity: non-finite numbers are refused
before hashing (RFC 8785 has no NaN/inf), so a coherently registered invalid value still fails."""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import rfc8785

SHA256_PATTERN = r"^sha256:[0-9a-f]{64}$"


def _check_finite(value: Any, where: str = "$") -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: non-finite number {value!r} cannot be content-addressed")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{where}[{i}]")


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical JSON of a JSON-compatible value (NaN/inf refused)."""
    _check_finite(value)
    return rfc8785.dumps(value)


def content_hash(value: Any) -> str:
    """``sha256:`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()


def bytes_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_hash(path: str | Path) -> str:
    """``sha256:`` of a file's exact bytes (streamed)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def with_self_hash(payload: dict, field: str) -> dict:
    """``payload`` plus ``field`` = content hash of ``payload`` without that field."""
    body = {k: v for k, v in payload.items() if k != field}
    return {**body, field: content_hash(body)}


def self_hash_ok(payload: dict, field: str) -> bool:
    stated = payload.get(field)
    body = {k: v for k, v in payload.items() if k != field}
    try:
        return isinstance(stated, str) and stated == content_hash(body)
    except (ValueError, TypeError):
        return False


def read_json(path: str | Path) -> Any:
    """A JSON file; a missing or malformed file is a ValueError naming it."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"no file at {path}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
