"""Resolve a receipt's authority at a point in time against the current components.

A receipt binds its components by hash (manifest, raw artifacts, comparison, qualification
record, method source, population, inputs, tests, prerequisites) and a validity window.
``resolve`` returns the receipt's own action only while the window holds and every
current component the caller supplies -- and the registered method's current source --
hashes as bound; otherwise ``expired``, ``block``, authority ``none`` with the reasons.  It
is a pure function of its inputs: resolving again with the same inputs gives the same
answer (idempotent).

A receipt's content hash only shows it is self-consistent: anyone can edit a receipt and
re-seal it.  So a receipt that is neither signed by a trusted key (``signature``) nor
recomputed from its raw artifacts (``replayed``: :func:`resolve_packet` replays the packet
first) authorises ``lab_only`` at most, and the answer says why."""
from __future__ import annotations

import datetime as dt

from simlab.hashing import self_hash_ok
from .receipt import AUTHORITY, action_strength, as_object, components_of

UNAUTHENTICATED = ("receipt not authenticated: neither signed by a trusted key nor recomputed from its raw "
                   "artifacts (a re-sealed receipt is self-consistent too); authority capped at lab_only")


def bound_components(receipt: dict) -> dict[str, str]:
    """The receipt's components as a flat ``name -> sha256`` map (``inputs.dataset`` etc.)."""
    c = components_of(receipt)
    flat = {"manifest": c.get("manifest"), "population": c.get("population"), "comparison": c.get("comparison"),
            "qualification": c.get("qualification"), "method": as_object(c.get("method")).get("source_sha256")}
    for group in ("inputs", "raw_artifacts", "tests", "prerequisites", "judge", "holdout"):
        for name, h in as_object(c.get(group)).items():
            flat[f"{group}.{name}"] = h
    return {k: v for k, v in flat.items() if v is not None}


def current_method_source(receipt: dict) -> str | None:
    """The registered method's source hash now (None when it is no longer registered)."""
    from methods import registry

    name = ((receipt.get("components") or {}).get("method") or {}).get("name")
    judge = (receipt.get("comparison") or {}).get("judge") if isinstance(receipt.get("comparison"), dict) else None
    try:
        method = registry.get(name)
        if isinstance(judge, dict) and "min_calibration" in judge:  # the registered calibration minimum
            method = method.with_options(min_calibration=judge["min_calibration"])
        return method.identity.source_sha256
    except (KeyError, TypeError, ValueError):
        return None


def _parse_time(text: str) -> dt.datetime:
    t = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if t.tzinfo is None:
        raise ValueError(f"time {text!r} needs a time zone (e.g. 2026-12-01T12:00:00Z)")
    return t


def resolve_receipt(receipt: dict, as_of: dt.datetime, current: dict[str, str] | None = None,
            check_method: bool = True, signature: dict | None = None, replayed: bool = False) -> dict:
    """``{"state", "action", "authority", "reasons", ...}`` of ``receipt`` at ``as_of``.

    ``signature``: the outcome of checking the receipt's signature against a trusted key
    set (``evidence.signatures.file_signature``); when given, an unverified signature blocks.
    ``replayed``: the receipt was just recomputed from its raw artifacts.  With neither, the
    answer is capped at ``lab_pass`` (authority ``lab_only``)."""
    if as_of.tzinfo is None:
        raise ValueError("as_of needs a time zone")
    reasons = []
    if not self_hash_ok(receipt, "receipt_sha256"):
        reasons.append("receipt content hash does not match its contents (edited after issue)")
    try:
        issued, valid_until = _parse_time(receipt["issued_at"]), _parse_time(receipt["valid_until"])
    except (KeyError, ValueError) as exc:
        reasons.append(f"receipt validity window unreadable: {exc}")
        issued = valid_until = None
    if valid_until is not None and as_of > valid_until:
        reasons.append(f"expired: valid until {receipt['valid_until']}, resolved as of "
                       f"{as_of.astimezone(dt.timezone.utc).isoformat().replace('+00:00', 'Z')}")
    if issued is not None and as_of < issued:
        reasons.append(f"resolution time precedes the receipt's issue time {receipt['issued_at']}")
    if signature is not None and not signature.get("signed_by"):
        reasons.append(f"receipt signature not verified: {signature.get('reason')}")
    bound = bound_components(receipt)
    for name, h in sorted((current or {}).items()):
        if name not in bound:
            reasons.append(f"drift: current component {name!r} is not bound by the receipt")
        elif bound[name] != h:
            reasons.append(f"drift: {name} is now {h}, the receipt bound {bound[name]}")
    if check_method and "method" in bound:
        now_source = current_method_source(receipt)
        if now_source != bound["method"]:
            reasons.append(f"drift: method source is now {now_source}, the receipt bound {bound['method']}")
    out = {"experiment_id": receipt.get("experiment_id"), "receipt_sha256": receipt.get("receipt_sha256"),
           "as_of": as_of.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")}
    if reasons:
        return {**out, "state": "expired", "action": "block", "authority": "none", "reasons": reasons}
    action = receipt.get("action")
    authenticated = replayed or bool(signature and signature.get("signed_by"))
    if not authenticated and action in AUTHORITY and action_strength(action) > action_strength("lab_pass"):
        return {**out, "state": "evidence_ready", "action": "lab_pass", "authority": "lab_only",
                "reasons": [UNAUTHENTICATED] + list(receipt.get("reasons", []))}
    return {**out, "state": receipt.get("state"), "action": action,
            "authority": receipt.get("authority"), "reasons": list(receipt.get("reasons", []))}


def resolve_packet(packet: dict, as_of: dt.datetime, current: dict[str, str] | None = None, *, base,
                   qualification_dir=None, trusted: dict | None = None, anchor: str | None = None,
                   ledger=None) -> dict:
    """Replay ``packet`` (recompute its receipt from the raw artifacts; ``ledger``: where a sealed
    holdout's uses are recorded), then resolve the recomputed receipt; a packet that does not
    replay resolves to block with the reasons."""
    from .replay import replay_packet

    replayed = replay_packet(packet, base=base, qualification_dir=qualification_dir, trusted=trusted, anchor=anchor,
                             ledger=ledger)
    if not replayed["ok"]:
        stored = packet.get("receipt") if isinstance(packet, dict) else None
        return {"experiment_id": (stored or {}).get("experiment_id"),
                "receipt_sha256": (stored or {}).get("receipt_sha256"),
                "as_of": as_of.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z"),
                "state": replayed["state"], "action": "block", "authority": "none",
                "reasons": ["packet does not replay: " + r for r in replayed["reasons"]]}
    return resolve_receipt(replayed["receipt"], as_of, current, replayed=True)
