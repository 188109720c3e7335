"""Certificates: a method evaluated at exactly one design, worst case over the nuisance.

A grid record is a map for screening; a decision at an off-grid design rests on a
certificate (README, "Choosing a method").  It names the method (identity, as in
records), the design (clusters K, trials per cluster M, margin, look schedule), the
nuisance domain searched (baseline and discordance ranges, rho up to ``rho_max``, the
label-noise models), every evaluated nuisance point with its false-pass rate (exact, or
Monte Carlo counts with the staged Clopper-Pearson bounds of ``verdicts``), the worst case,
the verdict, created / valid-until, a content hash and optionally an Ed25519 signature.
``studies.qualify.certify`` makes them; this module reads, verifies and consults them.

Proven supremum (exact engine, perfect labels).  When the method's decision depends on the
data only through the discordant counts ``(n10, n01)`` of ``N = K M`` independent pairs,
the data law at discordance ``q`` is trinomial, on the null boundary of the method's estimand
(a difference: ``p10 = (q + m)/2``, ``p01 = (q - m)/2``; the loss rate: ``p10 = m``,
``p01 = q - m``; ``simlab.estimands``), whatever the baseline, so the nuisance is
one-dimensional.  For any event ``A`` and laws ``P, Q``
``|asin sqrt P(A) - asin sqrt Q(A)| <= acos BC(P, Q)`` (BC the Bhattacharyya coefficient:
for two Bernoulli laws ``acos BC`` is exactly that angle, and BC only grows under the
map data -> 1_A, the data-processing inequality for Hellinger affinity; Tsybakov 2009,
*Introduction to Nonparametric Estimation*, sec. 2.4), and ``BC(P^N, Q^N) = BC(P, Q)^N``.
Along a segment ``[q0, q1]`` the per-pair laws move affinely, and ``BC(p(q0), p(q))`` is
concave in ``q`` (a sum of square roots of affine functions) with its maximum 1 at ``q0``,
hence non-increasing on the segment; so every ``q`` in it satisfies
``P_q(A) <= sin^2(asin sqrt P_q0(A) + acos BC(q0, q1)^N)``, and the same from ``q1``.  The
certificate's ``proven_upper`` is the largest of these interval bounds: an upper bound on
the false-pass rate over the whole continuous discordance range, not only at the nodes.

Exact grid (engine ``exact-convolution``, clusters of M > 1 correlated pairs): the rate is exact
at every node of a dense (discordance, rho) grid, but the Dirichlet-multinomial law is not
affine in (q, rho), so no bound between nodes is claimed: ``proven_upper`` is empty and the
verdict rests on the nodes, as the certificate's ``search`` says.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Iterable, Literal, Mapping

import numpy as np
from pydantic import Field, model_serializer, model_validator

from simlab.estimands import null_pair_rates
from simlab.models import FrozenModel
from simlab.scenario import FixedSize, LabelNoise
from simlab.signing import Signature

from simlab.clock import parse_time, utcnow
from simlab.hashing import content_hash, short
from .design import Coverage, DesignPoint
from .label_noise import LabelNoiseDomain, calibration_outside
from .points import NuisancePoint
from .record import RecordedMethod, body_of, signed_payload
from .records import json_files, safe_name
from .verdicts import (EXCEEDS, QUALIFIED, UNDETERMINED, MCRule, TamperedRecordError, combine_verdicts, cp_bounds,
                       stage_confidence, verdict_of)

CERT_SCHEMA_VERSION = "1"
CERT_SUFFIX = ".cert.json"
_REL_TOL = 1e-9


class CertifiedDesign(FrozenModel):
    """The design certified, and the nuisance domain the worst case is taken over."""
    clusters: int = Field(ge=2)
    trials: int = Field(ge=1)
    margin: float = Field(gt=0.0, lt=1.0)
    rho_max: float = Field(ge=0.0, lt=1.0)
    looks: int | None = Field(default=None, ge=1)
    label_noise: tuple[LabelNoise, ...] = (LabelNoise(),)
    baseline: tuple[float, float] = (0.5, 1.0)
    discordance: tuple[float, float] = (0.01, 0.5)
    label_noise_domain: LabelNoiseDomain | None = None   # judge-labelled outcomes (``label_noise``)

    @model_serializer(mode="wrap")
    def _drop_no_domain(self, handler):
        # without a label-noise domain the design serialises as before the field existed, so
        # the content hashes of the certificates that have none do not move
        data = handler(self)
        if self.label_noise_domain is None:
            data.pop("label_noise_domain", None)
        return data

    @model_validator(mode="after")
    def _ranges(self):
        for name in ("baseline", "discordance"):
            lo, hi = getattr(self, name)
            if not 0.0 <= lo <= hi <= 1.0:
                raise ValueError(f"{name} range must satisfy 0 <= lo <= hi <= 1, got ({lo}, {hi})")
        if self.looks is not None and self.looks > self.clusters:
            raise ValueError(f"looks ({self.looks}) cannot exceed clusters ({self.clusters})")
        if not self.label_noise:
            raise ValueError("label_noise must list at least one measurement model")
        if self.label_noise_domain is not None and self.label_noise_domain.node_set(self.label_noise) is None:
            raise ValueError("label_noise must be the nodes of label_noise_domain (its corners and centre, or its "
                             "corners, edge midpoints and centre): the certificate lists exactly what it searched")
        return self


class CertPoint(NuisancePoint):
    """One evaluated nuisance point.  Exact: ``n_reps = 0`` and lower = upper = rate."""
    rate: float
    n_reps: int = 0
    n_pass: int = 0
    lower: float
    upper: float
    verdict: Literal["qualified", "exceeds", "undetermined"]


class Certificate(FrozenModel):
    schema_version: Literal["1"] = CERT_SCHEMA_VERSION
    method: RecordedMethod
    design: CertifiedDesign
    alpha: float = Field(gt=0.0, lt=0.5)
    allowed_excess: float = Field(ge=1.0, le=10.0)
    threshold: float
    confidence: float
    engine: Literal["exact-discordant", "exact-convolution", "simulation"]
    search: str                        # how the nuisance was searched, and why that is enough
    mc_confidence: float = 0.95
    mc_rule: MCRule = "bonferroni-stages"
    replications: tuple[int, ...] = ()  # the staged schedule (simulation)
    points: tuple[CertPoint, ...]
    worst: int                         # index of the point with the largest upper bound
    proven_upper: float | None = None  # exact engine: bound over the continuous nuisance range
    verdict: Literal["qualified", "exceeds", "undetermined"]
    validity_days: int = Field(default=365, ge=1, le=3650)
    created: str
    valid_until: str
    software: dict[str, str]
    certificate_sha256: str = ""
    signature: Signature | None = None

    def body(self) -> dict:
        return body_of(self.model_dump(mode="json"))

    def content_sha256(self) -> str:
        return content_hash(self.body())

    def sealed(self) -> "Certificate":
        return self.model_copy(update={"certificate_sha256": self.content_sha256()})

    @property
    def guarantee(self) -> str:
        """The kind of statement (README, "Choosing a method": three kinds of guarantee): ``exact`` when the false-pass
        rate is computed without Monte Carlo error and bounded between the evaluated points
        (a proven supremum), else ``model-certified``."""
        return "exact" if self.engine.startswith("exact") and self.proven_upper is not None else "model-certified"

    @property
    def assumptions(self) -> str:
        """What the guarantee assumes, in words (shown in receipts and ``recommend``)."""
        d = self.design
        law = ("independent trial pairs" if d.trials == 1 or d.rho_max == 0 else
               f"exchangeable Dirichlet-multinomial clusters of {d.trials} trials with intra-cluster correlation "
               f"<= {d.rho_max:g}")
        noise = "perfect labels" if all(n == LabelNoise() for n in d.label_noise) else \
            f"{len(d.label_noise)} declared label-noise model(s)"
        if d.label_noise_domain is not None:
            r = 2 if d.label_noise_domain.calibration_shared else 4
            noise = (f"judge labels: {d.label_noise_domain.describe()}; "
                     f"{d.label_noise_domain.describe_nodes(d.label_noise)}; covered only where the registered "
                     f"calibration's Clopper-Pearson bounds (one-sided {1 - self.alpha / r:.6g} each, {r} rates) lie "
                     f"inside the box, which a judge whose true rates lie outside it passes with probability at most "
                     f"alpha/{r} = {self.alpha / r:.4g}; assuming the label-noise model (errors depend on the arm "
                     "only, a representative human-labelled calibration set independent of the trials)")
        return (f"{law}, {noise}, K = {d.clusters} independent clusters, baseline in [{d.baseline[0]:g}, "
                f"{d.baseline[1]:g}], discordance in [{d.discordance[0]:g}, {d.discordance[1]:g}], at the null "
                f"boundary of the {self.method.estimand} estimand"
                + ("" if self.guarantee == "exact" else "; a search over a grid of the nuisance, not a proof between "
                   "its points"))

    def signed(self, key) -> "Certificate":
        from simlab.signing import sign
        sealed = self if self.certificate_sha256 else self.sealed()
        return sealed.model_copy(update={"signature": sign(signed_payload(sealed.model_dump(mode="json")), key)})

    def is_expired(self, now: _dt.datetime | None = None) -> bool:
        return (now or utcnow()) > parse_time(self.valid_until)

    @property
    def worst_point(self) -> CertPoint:
        return self.points[self.worst]

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":")) + "\n"

    def file_name(self) -> str:
        d = self.design
        return (f"{safe_name(self.method.name)}.K{d.clusters}.M{d.trials}.m{d.margin:g}."
                f"{short(self.certificate_sha256, 10)}{CERT_SUFFIX}")


# ------------------------------------------------------------- the proven supremum


def discordant_law(q: np.ndarray, margin: float, estimand: str = "trial_weighted") -> np.ndarray:
    """Per-pair probabilities (p10, p01, p_concordant) on the null boundary of ``estimand``
    (``simlab.estimands.null_pair_rates``), perfect labels: affine in ``q``."""
    q = np.asarray(q, dtype=np.float64)
    p10, p01 = null_pair_rates(estimand, q, margin)
    p01 = np.maximum(p01, 0.0)
    return np.stack([p10, p01, np.maximum(1.0 - p10 - p01, 0.0)], axis=-1)


def interval_bounds(q: np.ndarray, rate: np.ndarray, margin: float, pairs: int,
                    estimand: str = "trial_weighted") -> np.ndarray:
    """Upper bound of the false-pass rate on each interval ``[q_i, q_{i+1}]`` of sorted nodes
    (see the module docstring): min over both ends of ``sin^2(asin sqrt P + acos BC^N)``."""
    law = discordant_law(q, margin, estimand)
    bc = np.sum(np.sqrt(law[:-1] * law[1:]), axis=1).clip(0.0, 1.0)
    angle = np.arccos(np.exp(pairs * np.log(np.maximum(bc, 1e-300))).clip(0.0, 1.0))
    a = np.arcsin(np.sqrt(np.clip(rate, 0.0, 1.0)))
    up = np.minimum(np.minimum(a[:-1], a[1:]) + angle, np.pi / 2)
    return np.sin(up) ** 2


def proven_upper(points: Iterable[CertPoint], design: CertifiedDesign, estimand: str = "trial_weighted") -> float:
    pts = sorted(points, key=lambda p: p.discordance)
    q = np.array([p.discordance for p in pts])
    r = np.array([p.rate for p in pts])
    if q.size == 1:
        return float(r[0])
    return float(max(interval_bounds(q, r, design.margin, design.clusters * design.trials, estimand).max(), r.max()))


# ------------------------------------------------------------- verification


def certificate_verdict(cert: Certificate) -> str:
    """The verdict that follows from the certificate's points (and proven bound)."""
    if cert.engine == "simulation":
        return combine_verdicts([p.verdict for p in cert.points])
    if max(p.rate for p in cert.points) > cert.threshold:
        return EXCEEDS
    if cert.proven_upper is None:   # exact-convolution, or noisy labels: a dense grid, no bound between nodes
        return QUALIFIED
    return QUALIFIED if cert.proven_upper <= cert.threshold else UNDETERMINED


def check_points(cert: Certificate, label: str) -> None:
    pts = cert.points
    if not pts:
        raise TamperedRecordError(f"{label}: no evaluated points")
    for i, p in enumerate(pts):
        if not (0 <= p.noise < len(cert.design.label_noise) and 0.0 <= p.rho <= cert.design.rho_max + 1e-12):
            raise TamperedRecordError(f"{label}: point {i} lies outside the certified domain")
    if cert.engine == "simulation":
        n = np.array([p.n_reps for p in pts])
        x = np.array([p.n_pass for p in pts])
        if np.any((n < 1) | (x < 0) | (x > n)) or not cert.replications:
            raise TamperedRecordError(f"{label}: impossible simulation counts")
        c = stage_confidence(cert.mc_confidence, len(cert.replications), cert.mc_rule)
        lo, up = cp_bounds(x, n, c)
        for i, p in enumerate(pts):
            if not (math.isclose(lo[i], p.lower, rel_tol=_REL_TOL, abs_tol=1e-15)
                    and math.isclose(up[i], p.upper, rel_tol=_REL_TOL, abs_tol=1e-15)
                    and math.isclose(p.rate, x[i] / n[i], rel_tol=1e-12)
                    and verdict_of(p.lower, p.upper, cert.threshold) == p.verdict):
                raise TamperedRecordError(f"{label}: point {i}: bounds or verdict do not follow from {x[i]}/{n[i]}")
    else:
        for i, p in enumerate(pts):
            if p.n_reps or not (p.lower == p.rate == p.upper) or \
                    verdict_of(p.lower, p.upper, cert.threshold) != p.verdict:
                raise TamperedRecordError(f"{label}: exact point {i} is inconsistent")
        if cert.engine == "exact-convolution" and (cert.proven_upper is not None
                                                   or cert.design.label_noise != (LabelNoise(),)):
            raise TamperedRecordError(f"{label}: an exact-convolution certificate proves no bound between nodes "
                                      "and needs perfect labels")
        if cert.proven_upper is not None and not math.isclose(
                cert.proven_upper, proven_upper(pts, cert.design, cert.method.estimand), rel_tol=1e-9, abs_tol=1e-15):
            raise TamperedRecordError(f"{label}: proven_upper does not follow from its points")
    worst = max(range(len(pts)), key=lambda i: (pts[i].upper, pts[i].rate, -i))
    if worst != cert.worst:
        raise TamperedRecordError(f"{label}: worst point is {worst}, not {cert.worst}")
    if certificate_verdict(cert) != cert.verdict:
        raise TamperedRecordError(f"{label}: verdict {cert.verdict!r} does not follow from its points")


def verify_certificate(cert: Certificate, *, check_current: bool = True,
                       now: _dt.datetime | None = None) -> Certificate:
    from .verify import check_method_current, check_validity

    label = f"certificate for {cert.method.name!r}"
    if not math.isclose(cert.threshold, cert.alpha * cert.allowed_excess):
        raise TamperedRecordError(f"{label}: threshold does not follow from alpha x allowed_excess")
    if not math.isclose(cert.confidence, 1.0 - 2.0 * cert.alpha):
        raise TamperedRecordError(f"{label}: confidence does not follow from alpha")
    check_validity(cert.created, cert.valid_until, cert.validity_days, label, now)
    check_points(cert, label)
    if check_current:
        check_method_current(cert.method, label)
    return cert


def load_certificate(path: str | Path, *, check_current: bool = True, trusted_keys: Mapping | None = None,
                     now: _dt.datetime | None = None) -> Certificate:
    """Read and verify a certificate (same checks as a record: hash, signature when a trusted
    key set is given, validity dates, verdicts from points, method identity)."""
    from .verify import read_verified

    path = Path(path)
    cert = read_verified(path, "certificate", "certificate_sha256", Certificate, trusted_keys)
    return verify_certificate(cert, check_current=check_current, now=now)


def certificate_paths(name: str | None = None, directory: str | Path | None = None) -> list[Path]:
    """Certificate files in the records directory (optionally only one method's), sorted."""
    return json_files(f"*{CERT_SUFFIX}", "certificate_sha256", name, directory)


def _judge_outside(domain: LabelNoiseDomain | None, point: DesignPoint, alpha: float) -> str | None:
    """Judge-labelled outcomes: why the point's registered calibration is not inside the
    certificate's label-noise domain at the certificate's ``alpha``
    (``methods.qualification.label_noise``), or None."""
    if domain is None:
        return ("judge-labelled outcomes: the certificate declares no label-noise domain (sensitivity, specificity, "
                "calibration-set size) to cover the registered judge calibration")
    if point.calibration is None:
        return ("the certificate covers judge-labelled outcomes with a registered calibration set; the design has "
                "none")
    why = calibration_outside(domain, point.calibration, alpha)
    return f"registered judge calibration outside the certified label-noise domain: {why}" if why else None


def certificate_covers(cert: Certificate, point: DesignPoint | dict, *,
                       now: _dt.datetime | None = None) -> Coverage:
    """A verified certificate covers exactly its design: same K, fixed cluster size M, margin,
    look schedule and confidence; rho within its ``rho_max`` (an unknown rho needs the design's
    pre-registered ``rho_max`` within it, unless M = 1 where rho has no effect); a declared
    label-noise model -- or, for judge-labelled outcomes, the registered calibration inside its
    label-noise domain; baseline / discordance, when known, inside the searched ranges."""
    if isinstance(point, dict):
        point = DesignPoint.model_validate(point)
    d = cert.design
    if cert.is_expired(now):
        return Coverage(False, f"certificate expired at {cert.valid_until}")
    if point.clusters != d.clusters or point.cluster_size != FixedSize(trials=d.trials) or \
            not math.isclose(point.margin, d.margin, rel_tol=1e-12) or point.looks != d.looks:
        return Coverage(False, f"certificate is for K={d.clusters}, M={d.trials}, margin={d.margin:g}, "
                               f"looks={d.looks}; the design differs")
    if point.confidence is not None and not math.isclose(point.confidence, cert.confidence):
        return Coverage(False, f"confidence {point.confidence} differs from the certified {cert.confidence:g}")
    if not point.rho_irrelevant:
        rho = point.rho if point.rho is not None else point.rho_max
        if rho is None:
            return Coverage(False, "rho unknown and no rho_max pre-registered: the certificate cannot cover it")
        if rho > d.rho_max + 1e-12:
            return Coverage(False, f"rho {rho:g} exceeds the certified rho_max {d.rho_max:g}")
    if d.label_noise_domain is not None or point.calibration is not None:
        why = _judge_outside(d.label_noise_domain, point, cert.alpha)
        if why:
            return Coverage(False, why)
    elif point.label_noise not in d.label_noise:
        return Coverage(False, "label-noise model is not among the certified ones")
    for name, x, (lo, hi) in (("baseline", point.baseline, d.baseline),
                              ("discordance", point.discordance, d.discordance)):
        if x is not None and not lo - 1e-12 <= x <= hi + 1e-12:
            return Coverage(False, f"{name}={x:g} lies outside the certified range [{lo:g}, {hi:g}]")
    w = cert.worst_point
    cells = (("certificate", d.clusters, d.trials, d.margin),)
    if cert.verdict != QUALIFIED:
        return Coverage(False, f"certificate verdict {cert.verdict}: worst false-pass rate {w.rate:.4g} "
                               f"(upper {max(w.upper, cert.proven_upper or 0.0):.4g}) vs threshold "
                               f"{cert.threshold:.4g} at baseline {w.baseline:g}, discordance {w.discordance:g}, "
                               f"rho {w.rho:g}", cells)
    return Coverage(True, f"certified at this design (worst false-pass rate {w.rate:.4g}, bound "
                          f"{max(w.upper, cert.proven_upper or 0.0):.4g} <= {cert.threshold:.4g})", cells)
