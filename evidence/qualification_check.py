"""Is the registered method qualified for this experiment's design?  (The one place the
evidence path talks to ``methods.qualification``: :func:`check_qualification`.)

The manifest pins the qualification record, certificate or theorem record the decision
relies on (``qualification_sha256`` = its content address, ``record_sha256`` /
``certificate_sha256`` / ``theorem_sha256``, which excludes its signature), so deleting or
replacing files after the run cannot change the decision.  The
pinned file must load and verify (content, policy and dataset hashes, counts reproduce its
verdicts, validity dates, the method's version and source equal the current code), be for
the registered method and cover the design: the observed number of independent clusters,
trials per cluster, margin, confidence, look schedule and intra-cluster correlation up to
the manifest's ``rho_max`` (a grid record covers grid points only -- for several trials per
cluster an unknown rho needs ``rho_max = 0`` or a certificate; ``methods.qualification``
decides).  Judge-labelled outcomes (the manifest's ``judge``) add the registered calibration
counts to the design: only a certificate whose label-noise domain holds them covers
(``methods.qualification.label_noise``).  A theorem record covers every design its theorem's assumptions hold for (any
K, cluster sizes and rho; perfect labels, no interim looks for a fixed-sample method:
``theorem_covers``).  Every other record or certificate of the method must agree
(``find_coverage``: sources cannot be shopped).  The design is that of the tables the method analyses (trial
pairs, or for the pass^k comparison cases per cluster); each protected slice's test is a
use of the method at its own design (the slice's clusters, and the level its multiplicity
rule gave it) and must be covered too.  Finally its embedded Ed25519 signature is checked
against the trusted key set: only a covered *and* trusted-signed qualification can lift a
receipt to ``canary_eligible``.  The check names the kind of guarantee the decision rests on
(README, "Choosing a method": theorem, exact or model-certified) and its assumptions."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

from simlab.hashing import address

from .experiment import PairedExperiment
from .manifest import Manifest

_HASH_FIELDS = ("record_sha256", "certificate_sha256", "theorem_sha256")


@dataclass(frozen=True)
class QualificationCheck:
    pinned: str
    record_file: str | None
    method: dict | None
    valid_until: str | None
    covered: bool
    reasons: tuple[str, ...] = field(default=())
    signature: dict = field(default_factory=lambda: {"signed_by": None, "reason": "not checked: not covered"})
    guarantee: str | None = None      # theorem / exact / model-certified (None: no usable source)
    assumptions: str | None = None

    @property
    def signed_by(self) -> str | None:
        """The trusted key that signed the covering record, if any."""
        return self.signature.get("signed_by")

    def as_dict(self) -> dict:
        return {"pinned": self.pinned, "record_file": self.record_file, "method": self.method,
                "valid_until": self.valid_until, "covered": self.covered, "reasons": list(self.reasons),
                "signature": self.signature, "guarantee": self.guarantee, "assumptions": self.assumptions}


def default_directory() -> Path:
    from methods.qualification import records_dir
    return records_dir()


_HEADS: dict[tuple, tuple[str | None, str | None]] = {}


def _address(stated: str) -> str | None:
    try:
        return address(stated)
    except ValueError:
        return None


def _head(path: Path) -> tuple[str | None, str | None]:
    """(method name, ``sha256:`` content hash) a record or certificate file states, cached on
    its stat: only a hint for finding files -- the file that is used is verified in full."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _HEADS:
        try:
            head = json.loads(path.read_text())
        except (OSError, ValueError):
            head = None
        stated = next((head[f] for f in _HASH_FIELDS if isinstance(head, dict) and isinstance(head.get(f), str)), None)
        _HEADS[key] = ((head.get("method") or {}).get("name"), _address(stated)) if stated else (None, None)
    return _HEADS[key]


def find_pinned(directory: Path, pinned: str) -> Path | None:
    """The record or certificate file in ``directory`` whose stated content hash is ``pinned``."""
    for path in sorted(Path(directory).glob("*.json")):
        if _head(path)[1] == pinned:
            return path
    return None


def _unreadable(directory: Path) -> list[str]:
    """The ``*.json`` files in ``directory`` that are not JSON (a truncated record is one): a
    pinned record that is not found may be among them."""
    out = []
    for path in sorted(Path(directory).glob("*.json")):
        try:
            json.loads(path.read_text())
        except (OSError, ValueError, RecursionError) as exc:
            out.append(f"{path.name} ({str(exc).splitlines()[0]})")
    return out


def _others(directory: Path, name: str, pinned_path: Path) -> bool:
    return any(_head(p)[0] == name for p in Path(directory).glob("*.json") if p != pinned_path)


def design_point(manifest: Manifest, tables, confidence: float | None = None, *,
                 sizes_free: bool = False, calibration=None) -> dict | str:
    """The design of the analysed ``tables`` (K, 4) as ``methods.qualification`` describes it
    (empty clusters are missing and do not count), or why there is none.  ``sizes_free``
    (a theorem record: cluster sizes are no assumption) describes unequal clusters by their
    sizes instead of refusing them.  ``calibration``: the registered judge calibration counts
    (judge-labelled outcomes), part of the design a certificate's label-noise domain covers."""
    sizes_all = [int(x) for x in tables.sum(axis=1) if x > 0]
    clusters = len(sizes_all)
    sizes = set(sizes_all)
    if not sizes:
        return "no cluster has an analysed unit"
    if len(sizes) == 1:
        cluster_size = {"kind": "fixed", "trials": next(iter(sizes))}
    elif sizes_free:
        cluster_size = {"kind": "explicit", "sizes": sizes_all}
    else:
        return (f"clusters have unequal numbers of analysed units ({min(sizes)}..{max(sizes)}); "
                "qualification covers fixed cluster sizes only (a theorem record covers any)")
    looks = None
    if manifest.sequential_policy.kind == "group_sequential":
        looks = len(manifest.sequential_policy.looks)
        equal = tuple(-(-j * clusters // looks) for j in range(1, looks + 1))
        if tuple(manifest.sequential_policy.looks) != equal:
            return (f"look schedule {list(manifest.sequential_policy.looks)} is not {looks} equally spaced looks "
                    f"{list(equal)} (the schedule qualification evaluates)")
    return {"clusters": clusters, "cluster_size": cluster_size,
            "margin": manifest.margin, "confidence": manifest.confidence if confidence is None else confidence,
            "looks": looks, "rho": 0.0 if manifest.rho_max == 0.0 else None, "rho_max": manifest.rho_max,
            **({"calibration": [[int(x) for x in row] for row in calibration]} if calibration is not None else {})}


def _is_theorem(q, path: Path) -> bool:
    return path.name.endswith(q.THEOREM_SUFFIX)


def _load(q, path: Path, now: dt.datetime, trusted: dict | None = None):
    """The verified source and its coverage rule ``covers(obj, point, now=...)``."""
    if _is_theorem(q, path):
        return (q.load_theorem_record(path, trusted_keys=trusted),
                lambda obj, point, now=None: q.theorem_covers(obj, point))
    if path.name.endswith(q.CERT_SUFFIX):
        return q.load_certificate(path, now=now, trusted_keys=trusted), q.certificate_covers
    return q.load_record(path, now=now, trusted_keys=trusted), q.covers


def _guarantee(q, path: Path, obj) -> tuple[str, str]:
    """(kind of guarantee, its assumptions in words) of a verified source."""
    if _is_theorem(q, path):
        return "theorem", f"{obj.statement} Assumptions: {'; '.join(obj.assumptions)} ({obj.citation})"
    if path.name.endswith(q.CERT_SUFFIX):
        return obj.guarantee, obj.assumptions
    return "model-certified", ("the worst Monte Carlo false-pass rate over the record's nuisance grid, bounded by "
                               "staged Clopper-Pearson limits, at the record's grid points only")


def _signature(q, path: Path, now: dt.datetime, trusted: dict | None) -> dict:
    if not trusted:
        return {"signed_by": None, "reason": "no trusted key set given: the signature cannot be verified"}
    try:
        obj, _ = _load(q, path, now, trusted)
    except q.UntrustedRecordError as exc:
        return {"signed_by": None, "reason": str(exc)}
    return {"signed_by": obj.signature.key_id, "reason": "signature verified with a trusted key"}


def _covered_everywhere(q, obj, covers, directory: Path, path: Path, point: dict, now) -> str | None:
    """Why ``point`` is not covered by the pinned record (or another record disagrees), or None."""
    c = covers(obj, point, now=now)
    if not c.covered:
        return f"design not covered: {c.reason}"
    if _others(directory, obj.method.name, path):  # find_coverage over one source is covers() on it
        try:
            other = q.find_coverage(obj.method.name, point, directory, now=now)
        except (q.RecordError, ValueError) as exc:
            other = q.Coverage(False, f"another record or certificate is unusable: {exc}")
        if not other.covered:
            return f"another record of {obj.method.name} disagrees: {other.reason}"
    return None


def _slice_gaps(q, obj, covers, directory, path, manifest, experiment, slices: dict, now) -> list[str]:
    """Each protected slice's test is a use of the method at the slice's design and level."""
    from .comparison import analysis_tables, registered_method

    method = registered_method(manifest)
    gaps = []
    for s in slices.get("slices", []):
        tables = analysis_tables(method, experiment, experiment.case_slice == s["value"])
        for t in s["tests"]:
            point = design_point(manifest, tables, confidence=1.0 - 2.0 * t["level"],
                                 sizes_free=_is_theorem(q, path))
            why = point if isinstance(point, str) else _covered_everywhere(q, obj, covers, directory, path, point, now)
            if why:
                gaps.append(f"protected slice {s['value']!r} tested at level {t['level']:.4g}: {why}")
    return gaps


def check_qualification(manifest: Manifest, experiment: PairedExperiment, *, directory: str | Path | None = None,
                        now: dt.datetime, trusted: dict | None = None, slices: dict | None = None,
                        calibration=None) -> QualificationCheck:
    """Verify the pinned record or certificate, its coverage of this design (and of each
    protected slice's test, ``slices`` from the comparison) and, when it covers, its
    signature against ``trusted`` (never raises for a bad file).  ``calibration``: the
    registered judge calibration counts when the outcomes are judge labels -- then only a
    certificate whose label-noise domain holds them covers."""
    from methods import qualification as q

    from .comparison import analysis_tables, registered_method, unit_of

    directory = Path(directory) if directory is not None else default_directory()
    pinned = manifest.qualification_sha256
    path = find_pinned(directory, pinned)
    if path is None:
        unreadable = _unreadable(directory)
        damaged = (f"; cannot read {', '.join(unreadable[:3])}{' ...' if len(unreadable) > 3 else ''} there: a "
                   "damaged file may be the pinned record" if unreadable else "")
        return QualificationCheck(pinned, None, None, None, False,
                                  (f"pinned qualification record {pinned} not found in {directory}{damaged}",))
    try:
        obj, covers = _load(q, path, now)
    except (q.RecordError, ValueError) as exc:
        return QualificationCheck(pinned, path.name, None, None, False, (f"qualification record unusable: {exc}",))
    stated = next((getattr(obj, f, None) for f in _HASH_FIELDS if getattr(obj, f, None)), None)
    if stated is None or _address(stated) != pinned:
        return QualificationCheck(pinned, path.name, None, None, False,
                                  (f"{path.name} no longer hashes to the pinned {pinned}",))
    guarantee, assumptions = _guarantee(q, path, obj)
    out = dict(pinned=pinned, record_file=path.name, method=obj.method.model_dump(mode="json"),
               valid_until=getattr(obj, "valid_until", None), guarantee=guarantee, assumptions=assumptions)
    if obj.method.name != manifest.statistical_method:
        return QualificationCheck(**out, covered=False, reasons=(
            f"qualification record is for method {obj.method.name!r}, not the registered "
            f"{manifest.statistical_method!r}",))
    method = registered_method(manifest)
    if obj.method.source_sha256 != method.identity.source_sha256:
        # a label carries no options: dm_score@alpha=L calibrated at another rho_max is labelled alike
        return QualificationCheck(**out, covered=False, reasons=(
            f"qualification record is for {obj.method.name!r} with options {dict(obj.method.options)}, another "
            f"method than the registered {manifest.statistical_method!r} the comparison runs (its options or code "
            "differ)",))
    tables = analysis_tables(method, experiment)
    point = design_point(manifest, tables, sizes_free=_is_theorem(q, path), calibration=calibration)
    if isinstance(point, str):
        return QualificationCheck(**out, covered=False, reasons=(point,))
    why = _covered_everywhere(q, obj, covers, directory, path, point, now)
    if why:
        return QualificationCheck(**out, covered=False, reasons=(why,))
    gaps = _slice_gaps(q, obj, covers, directory, path, manifest, experiment, slices, now) if slices else []
    if gaps:
        return QualificationCheck(**out, covered=False, reasons=tuple(gaps))
    unit = "case(s)" if unit_of(method) == "case_all_trials" else "trial pair(s)"
    judged = ", and the registered judge calibration (inside its label-noise domain)" if calibration is not None else ""
    size = point["cluster_size"]
    per_cluster = (f"{size['trials']} {unit} per cluster" if size["kind"] == "fixed" else
                   f"{min(size['sizes'])}..{max(size['sizes'])} {unit} per cluster")
    return QualificationCheck(**out, covered=True, signature=_signature(q, path, now, trusted), reasons=(
        f"{path.name} covers K={point['clusters']}, {per_cluster}, "
        f"margin {manifest.margin:g}, confidence {manifest.confidence:g}, "
        + ("any rho (valid by theorem)" if _is_theorem(q, path) else f"rho <= {manifest.rho_max:g}")
        + (f", and {sum(len(s['tests']) for s in slices['slices'])} protected-slice test(s)" if slices else "")
        + judged,))
