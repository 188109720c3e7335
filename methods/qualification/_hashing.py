"""Content hashes and timestamps shared by records and certificates."""
from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path
from typing import Any

import rfc8785


def canonical_sha256(payload: Any) -> str:
    """sha256 of the RFC 8785 canonical JSON of ``payload``."""
    return hashlib.sha256(rfc8785.dumps(payload)).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def format_time(t: _dt.datetime) -> str:
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str) -> _dt.datetime:
    return _dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc)
