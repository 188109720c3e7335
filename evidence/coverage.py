"""Is the registered method qualified for this experiment's design?  (The one place the
evidence path talks to ``methods.qualification``.)

The manifest pins the qualification record the decision relies on (``qualification_sha256``),
so deleting or replacing records after the run cannot change the decision.  The pinned
record must load and verify (content, policy and dataset hashes; counts reproduce its
verdicts; the method's version and source hash equal the current code), be for the
registered method, not be expired, and cover the design: the observed number of
independent clusters, trials per cluster, margin, confidence, look schedule and every
intra-cluster correlation up to the manifest's ``rho_max``.  Other records of the same
method must not disagree (``find_coverage``: records cannot be shopped)."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

from .experiment import PairedExperiment
from .manifest import Manifest
from .signatures import file_signature


@dataclass(frozen=True)
class QualificationCheck:
    pinned: str
    record_file: str | None
    method: dict | None
    valid_until: str | None
    covered: bool
    reasons: tuple[str, ...] = field(default=())
    signature: dict = field(default_factory=lambda: {"signed_by": None, "reason": "not checked: not covered"})

    @property
    def signed_by(self) -> str | None:
        """The trusted key that signed the covering record, if any."""
        return self.signature.get("signed_by")

    def as_dict(self) -> dict:
        return {"pinned": self.pinned, "record_file": self.record_file, "method": self.method,
                "valid_until": self.valid_until, "covered": self.covered, "reasons": list(self.reasons),
                "signature": self.signature}


def default_directory() -> Path:
    from methods.qualification import RESULTS_DIR
    return RESULTS_DIR


_HEADS: dict[tuple, tuple[str | None, str | None]] = {}


def _head(path: Path) -> tuple[str | None, str | None]:
    """(method name, ``sha256:`` content hash) a record file states, cached on its stat: only
    a hint for finding files -- the record that is used is loaded and verified in full."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _HEADS:
        try:
            head = json.loads(path.read_text())
        except (OSError, ValueError):
            head = None
        ok = isinstance(head, dict) and isinstance(head.get("record_sha256"), str)
        _HEADS[key] = ((head.get("method") or {}).get("name"), f"sha256:{head['record_sha256']}") if ok else (None, None)
    return _HEADS[key]


def find_pinned(directory: Path, pinned: str) -> Path | None:
    """The record file in ``directory`` whose stated content hash is ``pinned``."""
    for path in sorted(Path(directory).glob("*.json")):
        if _head(path)[1] == pinned:
            return path
    return None


def _other_records(directory: Path, name: str, pinned_path: Path) -> bool:
    return any(_head(p)[0] == name for p in Path(directory).glob("*.json") if p != pinned_path)


def design_points(manifest: Manifest, experiment: PairedExperiment, record) -> list[dict] | str:
    """Design points to check (one per qualified rho up to rho_max), or why there is none."""
    sizes = set(int(x) for x in experiment.trials_per_cluster())
    if len(sizes) != 1:
        return (f"clusters have unequal numbers of trial pairs ({min(sizes)}..{max(sizes)}); the qualification "
                "covers fixed cluster sizes only")
    looks = None
    if manifest.sequential_policy.kind == "group_sequential":
        looks = len(manifest.sequential_policy.looks)
        dom = record.policy.domain
        if dom.looks != looks or tuple(manifest.sequential_policy.looks) != dom.look_schedule(experiment.clusters):
            return (f"look schedule {list(manifest.sequential_policy.looks)} is not the qualified schedule "
                    f"({dom.looks or 'no'} equally spaced looks)")
    rho_axis = record.policy.domain.rho
    if manifest.rho_max > rho_axis.hi:
        return f"rho_max {manifest.rho_max:g} exceeds the qualified rho range [{rho_axis.lo:g}, {rho_axis.hi:g}]"
    rhos = sorted({g for g in rho_axis.grid if g <= manifest.rho_max} | {manifest.rho_max})
    base = {"clusters": experiment.clusters, "cluster_size": {"kind": "fixed", "trials": sizes.pop()},
            "margin": manifest.margin, "confidence": manifest.confidence, "looks": looks}
    return [{**base, "rho": r} for r in rhos]


def check_qualification(manifest: Manifest, experiment: PairedExperiment, *, directory: str | Path | None = None,
                        now: dt.datetime, trusted: dict | None = None) -> QualificationCheck:
    """Verify the pinned record, its coverage of this design and, when it covers, its
    signature against the ``trusted`` key set (never raises for a bad record)."""
    from methods import qualification as q

    directory = Path(directory) if directory is not None else default_directory()
    pinned = manifest.qualification_sha256
    path = find_pinned(directory, pinned)
    if path is None:
        return QualificationCheck(pinned, None, None, None, False,
                                  (f"pinned qualification record {pinned} not found in {directory}",))
    try:
        record = q.load_record(path)
    except (q.RecordError, ValueError) as exc:
        return QualificationCheck(pinned, path.name, None, None, False, (f"qualification record unusable: {exc}",))
    if f"sha256:{record.record_sha256}" != pinned:
        return QualificationCheck(pinned, path.name, None, None, False,
                                  (f"{path.name} no longer hashes to the pinned {pinned}",))
    method = record.method.model_dump(mode="json")
    out = dict(pinned=pinned, record_file=path.name, method=method, valid_until=record.valid_until)
    if record.method.name != manifest.statistical_method:
        return QualificationCheck(**out, covered=False, reasons=(
            f"qualification record is for method {record.method.name!r}, not the registered "
            f"{manifest.statistical_method!r}",))
    points = design_points(manifest, experiment, record)
    if isinstance(points, str):
        return QualificationCheck(**out, covered=False, reasons=(points,))
    others = _other_records(directory, record.method.name, path)
    for point in points:
        c = q.covers(record, point, now=now)
        if not c.covered:
            return QualificationCheck(**out, covered=False, reasons=(
                f"design not covered at rho={point['rho']:g}: {c.reason}",))
        if not others:  # find_coverage over a single record is covers() on it
            continue
        other = q.find_coverage(record.method.name, point, directory, now=now)
        if not other.covered:
            return QualificationCheck(**out, covered=False, reasons=(
                f"another record of {record.method.name} disagrees at rho={point['rho']:g}: {other.reason}",))
    return QualificationCheck(**out, covered=True, signature=file_signature(path, trusted), reasons=(
        f"{path.name} covers K={experiment.clusters}, {points[0]['cluster_size']['trials']} pair(s) per cluster, "
        f"margin {manifest.margin:g}, confidence {manifest.confidence:g}, rho <= {manifest.rho_max:g}",))
