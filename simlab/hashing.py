"""Content addresses, in one form: ``sha256:<64 hex>``.

Values are hashed as the RFC 8785 canonical JSON of their JSON form (non-finite numbers are
refused: RFC 8785 has none, and a silently rounded NaN would make two different values equal);
files and bytes by their exact bytes.  Records, certificates, manifests, receipts, ledger
entries and signatures all use these functions, so a hash printed anywhere can be pasted
anywhere else.  A hash establishes equality to an anchor, not validity or authorship
(``simlab.signing`` adds who).  Old records stored bare hex digests: :func:`same_digest`
compares either form.
"""
from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Any

import rfc8785

PREFIX = "sha256:"
SHA256_PATTERN = r"^sha256:[0-9a-f]{64}$"
_FULL = re.compile(SHA256_PATTERN)
_BARE = re.compile(r"^[0-9a-f]{64}$")


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
    """RFC 8785 canonical JSON of a JSON-compatible value (NaN and infinities refused)."""
    try:
        return rfc8785.dumps(value)
    except rfc8785.FloatDomainError:
        # the serialiser refuses every non-finite number; the walk (costly on a record of
        # 10^5 values, so only on failure) says where it is
        _check_finite(value)
        raise


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return PREFIX + hashlib.sha256(canonical_bytes(value)).hexdigest()


def bytes_hash(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``."""
    return PREFIX + hashlib.sha256(data).hexdigest()


def file_hash(path: str | Path) -> str:
    """``sha256:<hex>`` of a file's exact bytes (streamed)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return PREFIX + h.hexdigest()


def is_hash(text: Any) -> bool:
    """Is ``text`` a ``sha256:<64 hex>`` content address?"""
    return isinstance(text, str) and bool(_FULL.match(text))


def hex_digest(text: str) -> str:
    """The 64 hex digits of a content address (either form); a ValueError otherwise."""
    if isinstance(text, str):
        if _FULL.match(text):
            return text[len(PREFIX):]
        if _BARE.match(text):
            return text
    raise ValueError(f"not a sha256 content address: {text!r}")


def address(text: str) -> str:
    """The ``sha256:<hex>`` form of a digest given in either form (old records: bare hex)."""
    return PREFIX + hex_digest(text)


def same_digest(a: Any, b: Any) -> bool:
    """Do ``a`` and ``b`` name the same digest (``sha256:<hex>`` or the bare hex of old records)?"""
    try:
        return hex_digest(a) == hex_digest(b)
    except ValueError:
        return False


def short(text: str, digits: int = 12) -> str:
    """The first ``digits`` hex digits of a content address (for file names and messages)."""
    return hex_digest(text)[:digits]


def with_self_hash(payload: dict, field: str) -> dict:
    """``payload`` plus ``field`` = content hash of ``payload`` without that field."""
    body = {k: v for k, v in payload.items() if k != field}
    return {**body, field: content_hash(body)}


def self_hash_ok(payload: dict, field: str) -> bool:
    """Does ``payload[field]`` equal the content hash of the rest of ``payload``?"""
    stated = payload.get(field)
    body = {k: v for k, v in payload.items() if k != field}
    try:
        return isinstance(stated, str) and stated == content_hash(body)
    except (ValueError, TypeError):
        return False


__all__ = ["PREFIX", "SHA256_PATTERN", "address", "bytes_hash", "canonical_bytes", "content_hash", "file_hash", "hex_digest",
           "is_hash", "same_digest", "self_hash_ok", "short", "with_self_hash"]
