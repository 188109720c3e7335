"""Ed25519 signatures over canonical JSON, verified against an explicit trusted key set.

A signature binds the RFC 8785 canonical JSON of a payload (a qualification record, a
certificate, a receipt) to one key.  Keys are named by their *key id*: ``ed25519:`` plus the
first 16 hex digits of sha256 of the raw public key, so a trusted key set is a mapping
``key_id -> public key`` and a signature names which key it claims.  Verification never
trusts the key a signature carries: only keys in the caller's trusted set count.

Algorithm: RFC 8032 (Ed25519), through the ``cryptography`` package.
"""
from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any, Iterable, Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from simlab.hashing import canonical_bytes  # the bytes that are signed
from simlab.models import FrozenModel


class SignatureError(ValueError):
    """A signature is missing, malformed, from an untrusted key, or does not verify."""


class Signature(FrozenModel):
    """One detached signature: which key, and the base64 Ed25519 signature bytes."""
    key_id: str
    signature: str


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(key: Ed25519PublicKey | Ed25519PrivateKey) -> str:
    """``ed25519:<16 hex>`` naming a public key (a private key names its public half)."""
    pub = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return "ed25519:" + hashlib.sha256(_raw_public(pub)).hexdigest()[:16]


def generate_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def save_keypair(key: Ed25519PrivateKey, directory: str | Path, name: str = "simlab") -> tuple[Path, Path]:
    """Write ``<name>.key`` (PEM PKCS#8, mode 0600) and ``<name>.pub`` (PEM) into ``directory``;
    an existing key is never overwritten."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    private, public = d / f"{name}.key", d / f"{name}.pub"
    for p in (private, public):
        if p.exists():
            raise FileExistsError(f"{p} exists; refusing to overwrite a key")
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    with open(private, "xb") as f:
        f.write(pem)
    private.chmod(0o600)
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureError(f"{path}: not an Ed25519 private key")
    return key


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(Path(path).read_bytes())
    if not isinstance(key, Ed25519PublicKey):
        raise SignatureError(f"{path}: not an Ed25519 public key")
    return key


def trusted_keys(paths: Iterable[str | Path]) -> dict[str, Ed25519PublicKey]:
    """A trusted key set from public-key files, or directories of ``*.pub`` files."""
    keys: dict[str, Ed25519PublicKey] = {}
    for p in map(Path, paths):
        files = sorted(p.glob("*.pub")) if p.is_dir() else [p]
        for f in files:
            k = load_public_key(f)
            keys[key_id(k)] = k
    return keys


def sign(payload: Any, key: Ed25519PrivateKey) -> Signature:
    """Sign the canonical JSON of ``payload``."""
    raw = key.sign(canonical_bytes(payload))
    return Signature(key_id=key_id(key), signature=base64.b64encode(raw).decode("ascii"))


def verify(payload: Any, signature: Signature | Mapping[str, str] | None,
           trusted: Mapping[str, Ed25519PublicKey]) -> str:
    """Check ``signature`` over ``payload`` with a key from ``trusted``; return the key id.

    Raises :class:`SignatureError` naming the reason: unsigned, untrusted key, malformed
    or wrong signature."""
    if signature is None:
        raise SignatureError("unsigned: no signature to verify")
    if not isinstance(signature, (Signature, Mapping)):
        raise SignatureError(f"malformed signature: a JSON object is expected, got {type(signature).__name__}")
    sig = signature if isinstance(signature, Signature) else Signature.model_validate(dict(signature))
    key = trusted.get(sig.key_id)
    if key is None:
        raise SignatureError(f"signed by {sig.key_id}, which is not in the trusted key set")
    try:
        raw = base64.b64decode(sig.signature, validate=True)
        key.verify(raw, canonical_bytes(payload))
    except (InvalidSignature, ValueError) as exc:
        raise SignatureError(f"signature by {sig.key_id} does not verify: the payload or "
                             f"signature was altered") from exc
    return sig.key_id
