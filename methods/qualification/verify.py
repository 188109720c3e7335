"""Loading and verifying records: a record is usable only when everything it states
follows from what it rests on.

``load_record`` checks, in order: the content hash and the policy hash on the JSON exactly
as stored (a record stays verifiable when later schema versions add fields); the schema;
``valid_until = created + policy.validity_days`` and ``created`` not in the future; that every
scenario's counts equal those in its dataset file (re-read from the netCDF, not only its
hash), and that every bound, scenario verdict and cell verdict follows from those counts; the
signature, when a trusted key set is given (then an unsigned record is refused); and that
the registered method still has the record's version and source hash (else *stale*).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from pathlib import Path
from typing import Mapping

from pydantic import ValidationError

from simlab.clock import format_time, parse_time, utcnow
from simlab.hashing import content_hash, file_hash, same_digest, short
from .build import cell_verdicts, check_scenarios
from .policy import validation_summary
from .record import RecordedMethod, QualificationRecord, body_of, signed_payload
from .verdicts import RecordError, StaleRecordError, TamperedRecordError

CLOCK_SKEW = _dt.timedelta(minutes=5)
_DATASET_COLUMNS = (("clusters", "clusters"), ("size", "size_index"), ("rho", "rho"), ("margin", "margin"),
                    ("noise", "noise_index"), ("baseline", "baseline"), ("discordance", "discordance"),
                    ("n_reps", "n_reps"), ("n_pass", "n_pass"), ("n_inconclusive", "n_inconclusive"))


class UntrustedRecordError(RecordError):
    """The record's signature is missing, from a key outside the trusted set, or invalid."""


# What this process has already checked, by the exact bytes checked (both checks are pure
# functions of those bytes): sha256 of a record file whose content and policy hashes hold,
# and (that, sha256 of its dataset file) pairs whose scenario columns match.  A process that
# verifies one record many times (the evidence path: run, replay, coverage) pays once.
_HASHES_HOLD: set[bytes] = set()
_DATASET_MATCHES: set[tuple[bytes, str]] = set()


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise RecordError(f"no {what} at {path}") from None


def _parse_json(raw: bytes | str, path: Path, what: str) -> dict:
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TamperedRecordError(f"{what} {path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise TamperedRecordError(f"{what} {path}: not a record (JSON nested too deeply to read)") from None
    if not isinstance(data, dict):
        raise TamperedRecordError(f"{what} {path}: not a JSON object")
    return data


def read_json(path: Path, what: str) -> dict:
    return _parse_json(_read_bytes(path, what), path, what)


def check_content_hash(data: dict, field: str, label: str) -> None:
    stated = data.get(field)
    if not isinstance(stated, str):
        raise TamperedRecordError(f"{label}: no {field}")
    try:
        computed = content_hash(body_of(data))
    except ValueError as exc:  # a NaN, an infinity, an integer past 2**53: no file simlab wrote holds one
        raise TamperedRecordError(f"{label}: {exc}") from None
    if not same_digest(stated, computed):  # schema < 3 stored the bare hex digest
        raise TamperedRecordError(f"{label}: content hash mismatch (stated {stated[:19]}, computed {computed[:19]})")


def check_signature(data: dict, trusted_keys: Mapping | None, label: str) -> str | None:
    """Verify the stored signature against ``trusted_keys`` (None: not required); key id."""
    if trusted_keys is None:
        return None
    from simlab.signing import SignatureError, verify
    try:
        return verify(signed_payload(data), data.get("signature"), trusted_keys)
    except (SignatureError, ValidationError) as exc:
        raise UntrustedRecordError(f"{label}: {exc}") from None


def check_validity(created: str, valid_until: str, validity_days: int, label: str,
                   now: _dt.datetime | None = None) -> None:
    """``valid_until`` must be exactly ``created + validity_days``; ``created`` not in the future."""
    try:
        t0 = parse_time(created)
        parse_time(valid_until)
    except ValueError as exc:
        raise TamperedRecordError(f"{label}: bad timestamp ({exc})") from None
    expected = format_time(t0 + _dt.timedelta(days=validity_days))
    if valid_until != expected:
        raise TamperedRecordError(f"{label}: valid_until {valid_until} does not follow from created {created} + "
                                  f"{validity_days} days ({expected})")
    if t0 > (now or utcnow()) + CLOCK_SKEW:
        raise TamperedRecordError(f"{label}: created {created} lies in the future")


def check_method_current(ref: RecordedMethod, label: str) -> None:
    ident = ref.resolve().identity
    if ident.version != ref.version:
        raise StaleRecordError(f"{label} is stale: method version changed ({ref.version} -> {ident.version}); "
                               "re-run `simlab qualify` (or `simlab records regenerate`)")
    if not same_digest(ident.source_sha256, ref.source_sha256):
        raise StaleRecordError(f"{label} is stale: method source changed (sha256 {short(ref.source_sha256)} -> "
                               f"{short(ident.source_sha256)}); re-run `simlab qualify` (or `simlab records regenerate`)")


def dataset_scenarios(path: Path) -> dict[str, list]:
    """The scenario columns of a qualification dataset (netCDF), as the record names them.  Read
    with h5py: the stored values themselves (xarray decoded every variable of the file, 0.2-0.4 s
    a file, so a recommendation's look through 30 records spent seconds here)."""
    import h5py

    def text(attrs, key: str, default: str) -> str:
        v = attrs.get(key, default)
        return v.decode() if isinstance(v, bytes) else str(v)

    try:
        with h5py.File(path, "r") as f:
            out = {col: f[var][()].tolist() for col, var in _DATASET_COLUMNS}
            out["stage"] = ["grid" if s == 0 else "refine" for s in f["stage"][()].tolist()]
            out["policy_sha256"] = text(f.attrs, "policy_sha256", "")
            out["method_identity"] = json.loads(text(f.attrs, "method_identity", "{}"))
    except (OSError, KeyError, ValueError, TypeError) as exc:   # its sha256 matched: written damaged or by another tool
        raise TamperedRecordError(f"dataset {Path(path).name} is not a readable qualification dataset "
                                  f"({exc.__class__.__name__}: {exc})") from None
    return out


def check_dataset(record: QualificationRecord, directory: Path, label: str, record_digest: bytes | None = None) -> None:
    """The dataset file exists, has the stated sha256, belongs to this method and policy, and
    holds exactly the record's scenarios and counts (``record_digest``: sha256 of the record
    file's bytes; a pair of record and dataset bytes compared before is not re-read)."""
    name = record.dataset.file
    if Path(name).name != name or not name:
        raise TamperedRecordError(f"{label}: dataset file name {name!r} must be a bare file name")
    path = Path(directory) / name
    if not path.is_file():
        raise TamperedRecordError(f"{label}: dataset {path} is missing")
    actual = file_hash(path)
    if not same_digest(actual, record.dataset.sha256):
        raise TamperedRecordError(f"{label}: dataset {name} sha256 mismatch (record {short(record.dataset.sha256)}, "
                                  f"file {short(actual)})")
    if record_digest is not None and (record_digest, actual) in _DATASET_MATCHES:
        return
    _compare_dataset(record, dataset_scenarios(path), name, label)
    if record_digest is not None:
        _DATASET_MATCHES.add((record_digest, actual))


def _compare_dataset(record: QualificationRecord, data: dict, name: str, label: str) -> None:
    if not same_digest(data["policy_sha256"], record.policy_sha256):
        raise TamperedRecordError(f"{label}: dataset {name} was made under another policy")
    ident = data["method_identity"]
    if ident.get("name") != record.method.name or not same_digest(ident.get("source_sha256"), record.method.source_sha256):
        raise TamperedRecordError(f"{label}: dataset {name} was made for another method or method source")
    scen = record.scenarios
    if len(data["n_reps"]) != len(scen):
        raise TamperedRecordError(f"{label}: dataset {name} has {len(data['n_reps'])} scenarios, the record "
                                  f"{len(scen)}")
    for col in [c for c, _ in _DATASET_COLUMNS] + ["stage"]:
        mine, theirs = getattr(scen, col), data[col]
        for i, (a, b) in enumerate(zip(mine, theirs)):
            if a != b and not (isinstance(a, float) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)):
                raise TamperedRecordError(f"{label}: scenario {i}: the record says {col}={a}, its dataset {name} "
                                          f"says {b}")


def verify_record(record: QualificationRecord, directory: Path | None, *, check_current: bool = True,
                  check_dataset_file: bool = True, now: _dt.datetime | None = None,
                  record_digest: bytes | None = None) -> QualificationRecord:
    """Raise unless ``record`` (already hash-checked) is consistent, backed by its dataset and
    current; see the module docstring.  ``record_digest``: sha256 of the bytes it was read
    from (see ``check_dataset``)."""
    label = f"record for {record.method.name!r}"
    if not same_digest(record.policy_sha256, record.policy.sha256):
        raise TamperedRecordError(f"{label}: policy hash mismatch")
    if not (math.isclose(record.threshold, record.policy.threshold)
            and math.isclose(record.confidence, record.policy.confidence)):
        raise TamperedRecordError(f"{label}: threshold/confidence differ from its policy")
    check_validity(record.created, record.valid_until, record.policy.validity_days, label, now)
    if check_dataset_file:
        if directory is None:
            raise ValueError("verify_record needs the record's directory to check its dataset")
        check_dataset(record, Path(directory), label, record_digest)
    check_scenarios(record.policy, record.scenarios, record.mc_rule)
    if cell_verdicts(record.policy, record.scenarios) != record.cells:
        raise TamperedRecordError(f"{label}: cell verdicts do not follow from its scenarios' counts")
    if check_current:
        check_method_current(record.method, label)
    return record


def load_record(path: str | Path, *, check_current: bool = True, check_dataset: bool = True,
                trusted_keys: Mapping | None = None, now: _dt.datetime | None = None) -> QualificationRecord:
    """Read and verify a record (JSON file): tampered, unsigned-but-required, untrusted or
    stale records raise (``TamperedRecordError``, ``UntrustedRecordError``, ``StaleRecordError``)."""
    path = Path(path)
    raw = _read_bytes(path, "qualification record")
    digest = hashlib.sha256(raw).digest()
    data = _parse_json(raw, path, "qualification record")
    if not isinstance(data.get("policy"), dict):
        raise TamperedRecordError(f"record {path}: does not match the record schema (no policy)")
    if digest not in _HASHES_HOLD:
        check_content_hash(data, "record_sha256", f"record {path.name}")
        if not same_digest(content_hash(data["policy"]), data.get("policy_sha256")):
            raise TamperedRecordError(f"record {path.name}: policy hash mismatch")
        _HASHES_HOLD.add(digest)
    check_signature(data, trusted_keys, f"record {path.name}")
    try:
        record = QualificationRecord.model_validate(data)
    except ValidationError as exc:
        raise TamperedRecordError(f"record {path}: does not match the record schema: "
                                  f"{validation_summary(exc)}") from None
    return verify_record(record, path.parent, check_current=check_current, check_dataset_file=check_dataset,
                         now=now, record_digest=digest)


def read_verified(path, kind: str, hash_field: str, model, trusted_keys=None):
    """Read a sealed JSON file of ``kind``: its content hash, its signature (when trusted keys
    are given) and its schema (``model``) checked, in that order."""
    path = Path(path)
    data = read_json(path, kind)
    check_content_hash(data, hash_field, f"{kind} {path.name}")
    check_signature(data, trusted_keys, f"{kind} {path.name}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise TamperedRecordError(f"{kind} {path}: does not match the schema: {validation_summary(exc)}") from None

