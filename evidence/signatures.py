"""Detached Ed25519 signatures over evidence documents (receipts, qualification records).

A signature file ``<document>.sig`` holds one envelope: the content hash of the document
(RFC 8785 canonical JSON of the whole file) and ``simlab.signing``'s signature over the
attestation ``{"kind": "simlab.evidence.attestation", "subject_sha256": ...}``.  Only keys in
the caller's trusted set count; an unsigned or wrongly signed qualification can never
lift a receipt above ``lab_pass``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from simlab import signing

from simlab.hashing import content_hash
from .jsonfiles import read_json

ATTESTATION = "simlab.evidence.attestation"


def signature_path(path: str | Path) -> Path:
    return Path(f"{path}.sig")


def _attestation(document: Any) -> dict:
    return {"kind": ATTESTATION, "subject_sha256": content_hash(document)}


def sign_document(document: Any, key) -> dict:
    """Signature envelope for ``document`` with a private key."""
    att = _attestation(document)
    return {**att, "signature": signing.sign(att, key).model_dump()}


def verify_document(document: Any, envelope: Mapping | None, trusted: Mapping) -> str:
    """The trusted key id that signed ``document``; SignatureError naming why not."""
    if envelope is None:
        raise signing.SignatureError("unsigned: no signature file")
    _check_envelope(envelope)
    att = _attestation(document)
    if envelope["subject_sha256"] != att["subject_sha256"]:
        raise signing.SignatureError("the signature is for another document (subject hash differs)")
    return signing.verify(att, envelope["signature"], trusted)


def _check_envelope(envelope: Any) -> None:
    """ValueError naming the field when ``envelope`` is not a signature envelope at all (a
    malformed file is unreadable input, not a signature that failed to verify)."""
    if not isinstance(envelope, Mapping):
        raise ValueError(f"a signature envelope is a JSON object, got {type(envelope).__name__}")
    if envelope.get("kind") != ATTESTATION:
        raise ValueError(f"field 'kind' must be {ATTESTATION!r}, got {envelope.get('kind')!r}")
    if not isinstance(envelope.get("subject_sha256"), str):
        raise ValueError("field 'subject_sha256' must be a string (the signed document's content hash)")
    if not isinstance(envelope.get("signature"), Mapping):
        raise ValueError("field 'signature' must be a JSON object (key_id, algorithm, signature)")



def sign_file(path: str | Path, key, out: str | Path | None = None) -> Path:
    """Write ``<path>.sig`` (or ``out``) signing the JSON document at ``path`` with ``key``
    (a private key, or the path of one)."""
    if isinstance(key, (str, Path)):
        key = signing.load_private_key(key)
    envelope = sign_document(read_json(path), key)
    out = Path(out) if out else signature_path(path)
    out.write_text(json.dumps(envelope, indent=2) + "\n")
    return out


def is_signature_file(path: str | Path) -> bool:
    """Whether ``path`` holds a signature envelope of this module: re-signing may replace one,
    never a user's other file."""
    try:
        _check_envelope(read_json(path))
    except (OSError, ValueError):
        return False
    return True


def verify_file(path: str | Path, trusted: Mapping, signature: str | Path | None = None) -> str:
    sig = Path(signature) if signature else signature_path(path)
    envelope = read_json(sig) if sig.exists() else None
    return verify_document(read_json(path), envelope, trusted)


def file_signature(path: str | Path | None, trusted: Mapping | None) -> dict:
    """``{"signed_by": key id or None, "reason": ...}`` for a document file (never raises)."""
    if path is None:
        return {"signed_by": None, "reason": "no document"}
    if not trusted:
        return {"signed_by": None, "reason": "no trusted key set given: signatures cannot be verified"}
    try:
        return {"signed_by": verify_file(path, trusted), "reason": "signature verified with a trusted key"}
    except (signing.SignatureError, ValueError) as exc:
        return {"signed_by": None, "reason": str(exc)}
