"""Replay: recompute the receipt from the raw records and accept only an identical one.

Nothing stored in the packet is trusted: the manifest's hash is recomputed, every raw
artifact is re-hashed and re-read, the pairs, comparison, hard-failure count,
qualification check and receipt are rebuilt at the receipt's issue time, and every
difference is a named rejection (forged comparison, forged hard-failure count, forged raw
hashes, a manifest changed after execution, ...).  A rejected packet replays to ``block``;
an accepted one replays to exactly its recomputed action, never more."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from simlab.hashing import self_hash_ok
from .manifest import Manifest
from .packet import PACKET_KIND, PACKET_SCHEMA_VERSION, artifact_format, evaluate
from .receipt import PrerequisiteReceipt, TestReceipt, components_of

_FIELD_REASONS = {
    "comparison": "forged comparison: the stored comparison differs from the one recomputed from raw trials",
    "hard_failures": "forged hard-failure count: stored candidate failed-check count differs from the raw trials",
    "evidence": "forged evidence summary (clusters, pairs or provenance) differs from the raw trials",
    "qualification": "qualification check differs from the recomputed one",
    "measurement": "forged measurement record (log identities or times) differs from the raw logs",
    "population": "forged population check differs from the recomputed one",
}


def _blocked(reasons: list[str], recomputed: dict | None = None) -> dict:
    return {"ok": False, "state": "evidence_ready" if recomputed else "locked", "action": "block",
            "authority": "none", "reasons": reasons, "receipt": recomputed}


def _parse_components(packet: dict) -> tuple[Manifest, tuple, tuple]:
    manifest = Manifest.parse(packet["manifest"], source="packet manifest")
    tests = tuple(_receipt(TestReceipt, t, f"tests[{i}]") for i, t in enumerate(packet.get("tests", [])))
    pres = tuple(_receipt(PrerequisiteReceipt, p, f"prerequisites[{i}]")
                 for i, p in enumerate(packet.get("prerequisites", [])))
    return manifest, tests, pres


def _receipt(model, value: Any, where: str):
    """A component receipt, its errors one line naming ``where`` and the field (a pydantic dump
    with its class name and documentation links was the reason a replay gave)."""
    from pydantic import ValidationError

    try:
        return model.model_validate_json(_dumps(value))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in first.get("loc", ()))
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ValueError(f"{where}{'.' + field if field else ''}: {first.get('msg', 'invalid')}{more}") from None


ARTIFACT_KEYS = {"role", "format", "path", "sha256"}  # what run writes for each input
PACKET_KEYS = {"schema_version", "kind", "manifest", "artifacts", "adapter", "registered_after_measurement",
               "exploratory", "tests", "prerequisites", "receipt", "holdout_use"}


def _structure_reasons(packet: dict, artifacts: list[dict]) -> list[str]:
    """Fields a packet cannot have been written with: unknown keys, an artifact without its
    format or path, a role listed twice (each went unnoticed by a replay that passed)."""
    reasons = []
    extra = sorted(set(packet) - PACKET_KEYS)
    if extra:
        reasons.append(f"packet has fields simlab does not write: {', '.join(extra)}")
    roles = [a.get("role") for a in artifacts]
    for i, a in enumerate(artifacts):
        extra = sorted(set(a) - ARTIFACT_KEYS)
        if extra:
            reasons.append(f"artifacts[{i}] has fields simlab does not write: {', '.join(extra)}")
        for key in ("role", "format", "path", "sha256"):
            if not isinstance(a.get(key), str):
                reasons.append(f"artifacts[{i}].{key} must be a string, got {a.get(key)!r}")
        if roles.count(a.get("role")) > 1 and roles.index(a.get("role")) == i:
            reasons.append(f"artifact role {a.get('role')!r} is listed {roles.count(a.get('role'))} times")
    return reasons


def _dumps(value: Any) -> str:
    import json
    return json.dumps(value)


def _diff_reasons(stored: dict, fresh: dict) -> list[str]:
    reasons = []
    sc, fc = components_of(stored), fresh["components"]
    if sc.get("raw_artifacts") != fc["raw_artifacts"]:
        reasons.append(f"forged raw hashes: receipt binds {sc.get('raw_artifacts')}, the artifacts hash to "
                       f"{fc['raw_artifacts']}")
    for key in ("tests", "prerequisites", "method", "population", "inputs", "qualification", "judge", "holdout"):
        if sc.get(key) != fc.get(key):
            reasons.append(f"component {key} differs from the recomputed one")
    for key, why in _FIELD_REASONS.items():
        if stored.get(key) != fresh[key]:
            reasons.append(why)
    for key in ("state", "action", "authority", "authority_ceiling", "valid_until", "reasons"):
        if stored.get(key) != fresh[key]:
            reasons.append(f"stored {key} {stored.get(key)!r} differs from the recomputed {fresh[key]!r}")
    if not reasons and stored != fresh:   # a key only one side has is named too (an extra key of value null was not)
        extra = sorted(set(stored) - set(fresh))
        gone = sorted(set(fresh) - set(stored))
        changed = sorted(k for k in set(stored) & set(fresh) if stored[k] != fresh[k])
        reasons.append("receipt differs from the recomputed one: " + "; ".join(
            part for part in (f"keys it alone holds: {', '.join(extra)}" if extra else "",
                              f"keys it lacks: {', '.join(gone)}" if gone else "",
                              f"keys that differ: {', '.join(changed)}" if changed else "") if part))
    return reasons


def replay_packet(packet: dict, *, base: str | Path, qualification_dir: str | Path | None = None,
           trusted: dict | None = None, artifact_paths: dict[str, str] | None = None,
           anchor: str | None = None, ledger: str | Path | None = None) -> dict:
    """Recompute ``packet``'s receipt from its raw artifacts; accept only an identical receipt.

    A run against a sealed holdout is replayed with the use it took (the packet's
    ``holdout_use``); replay takes no new use.  With ``ledger``, that use must be in the
    ledger's chain as stated.

    ``artifact_paths`` (role -> path) lets the operator select the files instead of the
    packet's recorded paths.  ``anchor`` is the receipt hash the operator retained out of
    band (e.g. from the ledger): without it, a writer who consistently rewrites the raw
    files *and* the packet cannot be told from an honest one -- a hash proves equality to
    an anchor, not who produced it."""
    if not isinstance(packet, dict) or packet.get("kind") != PACKET_KIND:
        return _blocked(["not an evidence packet"])
    if packet.get("schema_version") != PACKET_SCHEMA_VERSION:
        return _blocked([f"packet schema_version {packet.get('schema_version')!r} is not one this simlab reads "
                         f"({PACKET_SCHEMA_VERSION!r})"])
    stored = packet.get("receipt")
    if not isinstance(stored, dict):
        return _blocked(["packet has no receipt"])
    reasons = []
    if anchor is not None and stored.get("receipt_sha256") != anchor:
        reasons.append(f"receipt {stored.get('receipt_sha256')} is not the anchored receipt {anchor}")
    if not self_hash_ok(stored, "receipt_sha256"):
        reasons.append("receipt content hash does not match its contents (edited after issue)")
    try:
        manifest, tests, pres = _parse_components(packet)
    except (ValueError, TypeError) as exc:
        return _blocked(reasons + [f"packet components invalid: {exc}"])
    stored_manifest = components_of(stored).get("manifest")
    if stored_manifest != manifest.sha256:
        reasons.append(f"manifest changed after execution: receipt binds {stored_manifest}, the packet's manifest "
                       f"hashes to {manifest.sha256}")
    listed = packet.get("artifacts", [])
    if not isinstance(listed, list) or not all(isinstance(a, dict) for a in listed):
        return _blocked(reasons + ["packet artifacts invalid: expected a list of objects (role, path, sha256)"])
    artifacts = [dict(a) for a in listed]
    malformed = _structure_reasons(packet, artifacts)
    if malformed:
        return _blocked(reasons + malformed)
    for a in artifacts:
        if artifact_paths and a.get("role") in artifact_paths:
            a["path"] = str(Path(artifact_paths[a["role"]]).resolve())
        try:
            reads_as = artifact_format(str(a.get("role")), str(a.get("path")))
        except ValueError:
            reads_as = None  # an unreadable suffix is named when the file is read
        if reads_as is not None and a["format"] != reads_as:
            reasons.append(f"artifact {a.get('role')} states format {a['format']!r}, but {a.get('path')} is read as "
                           f"{reads_as!r}")
    try:
        issued_at = dt.datetime.fromisoformat(str(stored.get("issued_at")).replace("Z", "+00:00"))
        if issued_at.tzinfo is None:
            raise ValueError("issued_at has no time zone")
        registered_after = packet.get("registered_after_measurement", False)
        exploratory = packet.get("exploratory", False)
        if not isinstance(registered_after, bool) or not isinstance(exploratory, bool):
            raise ValueError("registered_after_measurement and exploratory must be true or false")
        fresh = evaluate(manifest=manifest, artifacts=artifacts, adapter=packet.get("adapter"), base=Path(base),
                         tests=tests, prerequisites=pres, qualification_dir=qualification_dir, trusted=trusted,
                         issued_at=issued_at, registered_after=registered_after,
                         holdout_use=packet.get("holdout_use"), exploratory=exploratory)
    except (ValueError, KeyError, TypeError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        return _blocked(reasons + [f"raw evidence does not replay: {msg}"])
    if ledger is not None and manifest.holdout is not None:
        from .ledger import check_use
        why = check_use(ledger, packet.get("holdout_use") or {}, manifest.holdout.id)
        if why:
            reasons.append(f"holdout use not confirmed by the ledger: {why}")
    elif manifest.holdout is not None:  # the packet's own count of uses is a claim: it replayed as a canary pass
        reasons.append(f"holdout use not confirmed: the manifest registers sealed holdout {manifest.holdout.id!r}; "
                       "give the ledger its uses are recorded in (--ledger)")
    for a in artifacts:
        recorded = a.get("sha256")
        if recorded != fresh["components"]["raw_artifacts"].get(a.get("role")):
            reasons.append(f"changed artifact: {a.get('role')} hashes to "
                           f"{fresh['components']['raw_artifacts'].get(a.get('role'))}, the packet recorded {recorded}")
    reasons += _diff_reasons(stored, fresh)
    if reasons:
        return _blocked(reasons, fresh)
    return {"ok": True, "state": fresh["state"], "action": fresh["action"], "authority": fresh["authority"],
            "reasons": fresh["reasons"], "receipt": fresh}
