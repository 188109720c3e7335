"""Qualification policy and qualification record: what a study proved about a method.

A *policy* fixes the question: nominal one-sided level ``alpha`` (the method runs at
confidence ``1 - 2 alpha``), an allowed excess (a scenario is acceptable when the
Clopper-Pearson upper bound of its false-pass rate is ``<= allowed_excess * alpha``), the
Monte Carlo confidence of that bound, the replication budget per scenario, the estimand
whose true value defines the null boundary, and the *domain*: clusters K, cluster-size
laws, intra-cluster correlation rho, margin, label noise (discrete axes, evaluated on
their grids) and the baseline pass rate and discordance (continuous nuisance, searched
for the worst case).  The null is composite, so every scenario sits on its boundary:
true difference = -margin.

A *record* is the qualifier's answer for one method under one policy: the method's
identity (name, version, source sha256), the policy and its hash, every evaluated
scenario with its counts, Clopper-Pearson bounds and verdict, one verdict per discrete
cell (worst over the nuisance), the worst case found, the qualified sub-domain, the
dataset file it came from (name + sha256), created / valid-until, and its own content
hash (RFC 8785 canonical JSON, sha256; DESIGN.md "Qualification record").

``load_record`` refuses a tampered record (content hash, policy hash, dataset hash, or
counts that do not reproduce the stated bounds and verdicts) and a stale one (the
registered method's version or source hash changed).  ``covers(record, design_point)`` is
what the evidence path asks: is this design point inside the qualified sub-domain?

Clopper-Pearson bounds: Clopper & Pearson (1934), Biometrika 26:404-413; one-sided
``upper = Beta^{-1}(c; x + 1, n - x)``, ``lower = Beta^{-1}(1 - c; x, n - x + 1)``
(Brown, Cai & DasGupta 2001, Stat Sci 16:101-133, eq. 5).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import rfc8785
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from scipy import stats

from simlab.scenario import ClusterSize, ExplicitSizes, FixedSize, LabelNoise

SCHEMA_VERSION = "1"
RESULTS_DIR = Path(__file__).resolve().parents[1] / "results" / "qualification"

QUALIFIED, EXCEEDS, UNDETERMINED = "qualified", "exceeds", "undetermined"
VERDICTS = (QUALIFIED, EXCEEDS, UNDETERMINED)
_REL_TOL = 1e-9


class RecordError(ValueError):
    """A qualification record cannot be used."""


class TamperedRecordError(RecordError):
    """The record, its policy or its dataset does not match its stated hashes or counts."""


class StaleRecordError(RecordError):
    """The method changed (version or source hash) since the record was made."""


def canonical_sha256(payload: Any) -> str:
    """sha256 of the RFC 8785 canonical JSON of ``payload``."""
    return hashlib.sha256(rfc8785.dumps(payload)).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------- Clopper-Pearson


def cp_upper(n_pass: int, n: int, confidence: float) -> float:
    """One-sided Clopper-Pearson upper bound at ``confidence``."""
    if n <= 0 or not 0 <= n_pass <= n:
        raise ValueError(f"need 0 <= n_pass <= n and n > 0, got n_pass={n_pass}, n={n}")
    if n_pass == n:
        return 1.0
    return float(stats.beta.ppf(confidence, n_pass + 1, n - n_pass))


def cp_lower(n_pass: int, n: int, confidence: float) -> float:
    """One-sided Clopper-Pearson lower bound at ``confidence``."""
    if n <= 0 or not 0 <= n_pass <= n:
        raise ValueError(f"need 0 <= n_pass <= n and n > 0, got n_pass={n_pass}, n={n}")
    if n_pass == 0:
        return 0.0
    return float(stats.beta.ppf(1.0 - confidence, n_pass, n - n_pass + 1))


def verdict_of(lower: float, upper: float, threshold: float) -> str:
    """``qualified`` when the upper bound is within the threshold, ``exceeds`` when even the
    lower bound is above it, else ``undetermined`` (more replications could decide)."""
    if upper <= threshold:
        return QUALIFIED
    if lower > threshold:
        return EXCEEDS
    return UNDETERMINED


def combine_verdicts(verdicts: list[str] | tuple[str, ...]) -> str:
    """A cell is qualified only if every scenario in it is; one exceedance rejects it."""
    if any(v == EXCEEDS for v in verdicts):
        return EXCEEDS
    if any(v == UNDETERMINED for v in verdicts):
        return UNDETERMINED
    return QUALIFIED


# ---------------------------------------------------------------- policy and domain


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Axis(_Frozen):
    """A closed range ``[lo, hi]`` and the grid evaluated in it (grid[0] = lo, grid[-1] = hi)."""
    lo: float
    hi: float
    grid: tuple[float, ...]

    @model_validator(mode="after")
    def _grid(self):
        g = self.grid
        if not g:
            raise ValueError("grid must list at least one value")
        if list(g) != sorted(set(g)):
            raise ValueError(f"grid must be strictly increasing, got {list(g)}")
        if g[0] != self.lo or g[-1] != self.hi:
            raise ValueError(f"grid must start at lo={self.lo} and end at hi={self.hi}, got {list(g)}")
        return self

    def contains(self, x: float) -> bool:
        return self.lo - 1e-12 <= x <= self.hi + 1e-12

    def bracket(self, x: float) -> tuple[float, ...]:
        """Grid values that enclose ``x``: itself when on the grid, else both neighbours."""
        for g in self.grid:
            if abs(g - x) <= 1e-12 * max(1.0, abs(x)):
                return (g,)
        below = max(g for g in self.grid if g < x)
        above = min(g for g in self.grid if g > x)
        return (below, above)


class IntAxis(Axis):
    lo: int
    hi: int
    grid: tuple[int, ...]


def _probability_axis(name: str, axis: Axis, lo: float = 0.0, hi: float = 1.0, open_hi: bool = False) -> Axis:
    if axis.lo < lo or axis.hi > hi or (open_hi and axis.hi >= hi):
        raise ValueError(f"{name} must lie in [{lo}, {hi}{')' if open_hi else ']'}, got [{axis.lo}, {axis.hi}]")
    return axis


class QualificationDomain(_Frozen):
    """The design and nuisance region a qualification must cover."""
    clusters: IntAxis
    cluster_sizes: tuple[ClusterSize, ...]
    rho: Axis
    margin: Axis
    baseline: Axis
    discordance: Axis
    label_noise: tuple[LabelNoise, ...] = (LabelNoise(),)
    looks: int | None = Field(default=None, ge=1, le=1000)

    @field_validator("clusters")
    @classmethod
    def _k(cls, v):
        if v.lo < 2:
            raise ValueError(f"clusters must be >= 2, got lo={v.lo}")
        return v

    @field_validator("cluster_sizes")
    @classmethod
    def _sizes(cls, v):
        if not v:
            raise ValueError("cluster_sizes must list at least one cluster-size law")
        for i, s in enumerate(v):
            if isinstance(s, ExplicitSizes):
                raise ValueError(f"cluster_sizes[{i}]: explicit size lists cannot span a grid of K; "
                                 "use fixed, poisson or geometric")
        if len(set(v)) != len(v):
            raise ValueError("cluster_sizes lists a law twice")
        return v

    @field_validator("rho")
    @classmethod
    def _rho(cls, v):
        return _probability_axis("rho", v, open_hi=True)

    @field_validator("margin")
    @classmethod
    def _margin(cls, v):
        if v.lo <= 0.0 or v.hi >= 1.0:
            raise ValueError(f"margin must lie in (0, 1), got [{v.lo}, {v.hi}]")
        return v

    @field_validator("baseline")
    @classmethod
    def _baseline(cls, v):
        return _probability_axis("baseline", v)

    @field_validator("discordance")
    @classmethod
    def _discordance(cls, v):
        return _probability_axis("discordance", v)

    @field_validator("label_noise")
    @classmethod
    def _noise(cls, v):
        if not v:
            raise ValueError("label_noise must list at least one measurement model (perfect labels: {})")
        if len(set(v)) != len(v):
            raise ValueError("label_noise lists a model twice")
        return v

    @model_validator(mode="after")
    def _feasible(self):
        if self.looks is not None and self.looks > self.clusters.lo:
            raise ValueError(f"looks ({self.looks}) cannot exceed the smallest K ({self.clusters.lo})")
        for m in self.margin.grid:
            if not nuisance_grid(self, m):
                raise ValueError(f"margin {m}: no (baseline, discordance) in the domain is compatible with a "
                                 f"true difference of -{m} (discordance must be >= margin)")
        return self

    # -- axes of discrete cells ---------------------------------------------------
    def look_schedule(self, clusters: int) -> tuple[int, ...]:
        """Sequential methods: ``looks`` equally spaced looks, cumulative clusters ceil(j K / L)."""
        if self.looks is None:
            raise ValueError("this domain declares no look schedule (looks)")
        return tuple(int(math.ceil(j * clusters / self.looks)) for j in range(1, self.looks + 1))

    def cells(self) -> list[tuple[int, int, float, float, int]]:
        """Discrete cells ``(clusters, size index, rho, margin, noise index)``."""
        return list(itertools.product(self.clusters.grid, range(len(self.cluster_sizes)), self.rho.grid,
                                      self.margin.grid, range(len(self.label_noise))))


def discordance_limits(baseline: float, margin: float, lo: float, hi: float) -> tuple[float, float] | None:
    """Feasible discordance at the null boundary (difference = -margin), within [lo, hi].

    With p10 = (q + m)/2, p01 = (q - m)/2: p01 >= 0 needs q >= m, p11 = b - p10 >= 0 needs
    q <= 2b - m, p00 = 1 - b - p01 >= 0 needs q <= 2(1 - b) + m."""
    q_lo = max(lo, margin)
    q_hi = min(hi, 2.0 * baseline - margin, 2.0 * (1.0 - baseline) + margin)
    if q_hi < q_lo - 1e-12:
        return None
    return q_lo, max(q_lo, q_hi)


def clip_discordance(q: float, baseline: float, margin: float, lo: float, hi: float) -> float | None:
    lim = discordance_limits(baseline, margin, lo, hi)
    if lim is None:
        return None
    return min(max(q, lim[0]), lim[1])


def nuisance_grid(domain: QualificationDomain, margin: float) -> list[tuple[float, float]]:
    """Grid of (baseline, discordance) at the null boundary for one margin: every grid
    discordance clipped into the feasible interval of each baseline (deduplicated)."""
    out: list[tuple[float, float]] = []
    d = domain.discordance
    for b in domain.baseline.grid:
        seen: set[float] = set()
        for q in d.grid:
            qc = clip_discordance(q, b, margin, d.lo, d.hi)
            if qc is None:
                continue
            qc = round(qc, 12)
            if qc not in seen:
                seen.add(qc)
                out.append((b, qc))
    return out


class QualificationPolicy(_Frozen):
    """How a method is qualified (content-hashed; the hash is in every record)."""
    alpha: float = Field(default=0.025, gt=0.0, lt=0.5)
    allowed_excess: float = Field(default=1.1, ge=1.0, le=10.0)
    mc_confidence: float = Field(default=0.95, ge=0.5, lt=1.0)
    min_replications: int = Field(default=2000, ge=10, le=10_000_000)
    max_replications: int = Field(default=128_000, ge=10, le=100_000_000)
    replication_growth: int = Field(default=4, ge=2, le=64)
    estimand: Literal["method", "trial_weighted", "cluster_weighted"] = "method"
    refine_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    refine_evaluations: int = Field(default=3, ge=0, le=50)
    validity_days: int = Field(default=365, ge=1, le=3650)
    seed: int = Field(default=20261129, ge=0)
    sampler: Literal["auto", "trial", "composition"] = "auto"
    domain: QualificationDomain

    @model_validator(mode="after")
    def _reps(self):
        if self.max_replications < self.min_replications:
            raise ValueError(f"max_replications ({self.max_replications}) must be >= "
                             f"min_replications ({self.min_replications})")
        return self

    @property
    def threshold(self) -> float:
        """Largest acceptable false-pass upper bound: allowed_excess * alpha."""
        return self.allowed_excess * self.alpha

    @property
    def confidence(self) -> float:
        """Two-sided confidence the method runs at: 1 - 2 alpha."""
        return 1.0 - 2.0 * self.alpha

    def replication_schedule(self) -> list[int]:
        """Cumulative replication counts tried for a scenario: min, min*g, ... up to max."""
        out = [self.min_replications]
        while out[-1] < self.max_replications:
            out.append(min(out[-1] * self.replication_growth, self.max_replications))
        return out

    def canonical(self) -> dict:
        return self.model_dump(mode="json")

    @property
    def sha256(self) -> str:
        return canonical_sha256(self.canonical())

    @classmethod
    def load(cls, path: str | Path) -> "QualificationPolicy":
        """Read a policy from JSON or TOML; errors name the offending field."""
        path = Path(path)
        text = path.read_text()
        try:
            if path.suffix.lower() == ".toml":
                import tomllib
                data = tomllib.loads(text)
            else:
                data = json.loads(text)
        except (ValueError, json.JSONDecodeError) as exc:
            raise ValueError(f"policy file {path}: cannot parse: {exc}") from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(f"policy file {path}: {exc}") from None


def standard_domain() -> QualificationDomain:
    """The standard domain records ship over (issue 6): K 10..500, trials per cluster
    1..10, baseline 0.5..1.0, rho 0..0.5, margin 0.01..0.10; discordance (not fixed by the
    issue) from the margin (the candidate never wins a discordant pair) up to 0.5."""
    return QualificationDomain(
        clusters=IntAxis(lo=10, hi=500, grid=(10, 20, 30, 50, 100, 200, 500)),
        cluster_sizes=(FixedSize(trials=1), FixedSize(trials=3), FixedSize(trials=10)),
        rho=Axis(lo=0.0, hi=0.5, grid=(0.0, 0.05, 0.1, 0.2, 0.5)),
        margin=Axis(lo=0.01, hi=0.10, grid=(0.01, 0.03, 0.05, 0.10)),
        baseline=Axis(lo=0.5, hi=1.0, grid=(0.5, 0.7, 0.9, 1.0)),
        discordance=Axis(lo=0.01, hi=0.5, grid=(0.01, 0.03, 0.1, 0.3, 0.5)),
    )


def standard_policy(**overrides: Any) -> QualificationPolicy:
    return QualificationPolicy(domain=standard_domain(), **overrides)


def reduced_domain(clusters: tuple[int, ...] = (10, 30, 100)) -> QualificationDomain:
    """A smaller declared domain for methods too slow for the standard one (resampling and
    Bayesian kernels): K in ``clusters``, 1 or 3 trials per cluster, rho 0 or 0.2, margin 0.03
    or 0.10, baseline 0.7..1.0, discordance from the margin to 0.3."""
    return QualificationDomain(
        clusters=IntAxis(lo=clusters[0], hi=clusters[-1], grid=clusters),
        cluster_sizes=(FixedSize(trials=1), FixedSize(trials=3)),
        rho=Axis(lo=0.0, hi=0.2, grid=(0.0, 0.2)),
        margin=Axis(lo=0.03, hi=0.10, grid=(0.03, 0.10)),
        baseline=Axis(lo=0.7, hi=1.0, grid=(0.7, 1.0)),
        discordance=Axis(lo=0.01, hi=0.3, grid=(0.01, 0.1, 0.3)),
    )


def named_policy(name: str) -> QualificationPolicy:
    """Built-in policies: ``standard`` (the shipped domain), ``reduced`` (slow methods:
    K 10..100, replications 2000..32000), ``reduced-small`` (the slowest: K 10..30,
    replications 1000..8000), ``sequential`` (sequential methods: 5 equally spaced looks,
    K 30..300 at the last look, replications 2000..32000), ``sequential-standard`` (the
    standard domain and policy with 5 equally spaced looks), ``standard-coarse`` (the
    standard ranges on a coarser grid -- K 10, 30, 100, 500; rho 0, 0.1, 0.5; margin 0.01,
    0.03, 0.10; baseline 0.5, 0.9, 1.0 -- replications 2000..8000, one refinement step: for
    the resampling and Bayesian kernels, 10^3-10^4 decisions/s), ``sequential-standard-lr``
    (``sequential-standard`` with margins 0.02..0.10: for ``likelihood_ratio``, whose
    default alternative loss rate 0.01 must lie below the margin)."""
    if name == "standard-coarse":
        dom = QualificationDomain(
            clusters=IntAxis(lo=10, hi=500, grid=(10, 30, 100, 500)),
            cluster_sizes=(FixedSize(trials=1), FixedSize(trials=3), FixedSize(trials=10)),
            rho=Axis(lo=0.0, hi=0.5, grid=(0.0, 0.1, 0.5)),
            margin=Axis(lo=0.01, hi=0.10, grid=(0.01, 0.03, 0.10)),
            baseline=Axis(lo=0.5, hi=1.0, grid=(0.5, 0.9, 1.0)),
            discordance=Axis(lo=0.01, hi=0.5, grid=(0.01, 0.03, 0.1, 0.5)))
        return QualificationPolicy(domain=dom, max_replications=8000, refine_evaluations=1)
    if name == "sequential-standard-lr":
        dom = standard_domain().model_copy(update={
            "looks": 5, "margin": Axis(lo=0.02, hi=0.10, grid=(0.02, 0.03, 0.05, 0.10))})
        return QualificationPolicy(domain=QualificationDomain.model_validate(dom.model_dump()))
    if name == "sequential":
        dom = reduced_domain((30, 100, 300)).model_copy(update={"looks": 5})
        return QualificationPolicy(domain=QualificationDomain.model_validate(dom.model_dump()),
                                   max_replications=32_000, refine_evaluations=2)
    if name == "sequential-standard":
        dom = standard_domain().model_copy(update={"looks": 5})
        return QualificationPolicy(domain=QualificationDomain.model_validate(dom.model_dump()))
    if name == "standard":
        return standard_policy()
    if name == "reduced":
        return QualificationPolicy(domain=reduced_domain(), max_replications=32_000, refine_evaluations=2)
    if name == "reduced-small":
        return QualificationPolicy(domain=reduced_domain((10, 30)), min_replications=1000, max_replications=8000,
                                   refine_evaluations=1)
    raise ValueError(f"unknown policy {name!r}: give a JSON/TOML file or one of standard, reduced, reduced-small, "
                     "sequential, sequential-standard, sequential-standard-lr, standard-coarse")


# ---------------------------------------------------------------- record schema


class MethodRef(_Frozen):
    """Method identity plus how to find it again: registry name, options, wrapped method."""
    name: str
    version: str
    source_sha256: str
    kind: str
    estimand: str
    registered_name: str
    options: dict[str, float] = {}
    inner: str | None = None

    def resolve(self):
        from methods import registry
        try:
            m = registry.get(self.registered_name)
        except KeyError as exc:
            raise StaleRecordError(f"record is for method {self.registered_name!r}, which is no longer "
                                   "registered") from exc
        if self.inner is not None:
            m = m.with_inner(self.inner)
        if self.options and dict(self.options) != dict(m.options):
            m = m.with_options(**self.options)
        return m


class ScenarioTable(_Frozen):
    """Every evaluated scenario, column-wise (index i is one scenario)."""
    clusters: tuple[int, ...]
    size: tuple[int, ...]          # index into policy.domain.cluster_sizes
    rho: tuple[float, ...]
    margin: tuple[float, ...]
    noise: tuple[int, ...]         # index into policy.domain.label_noise
    baseline: tuple[float, ...]
    discordance: tuple[float, ...]
    stage: tuple[Literal["grid", "refine"], ...]
    n_reps: tuple[int, ...]
    n_pass: tuple[int, ...]
    n_inconclusive: tuple[int, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    verdict: tuple[Literal["qualified", "exceeds", "undetermined"], ...]

    @model_validator(mode="after")
    def _lengths(self):
        n = len(self.clusters)
        for name in type(self).model_fields:
            if len(getattr(self, name)) != n:
                raise ValueError(f"scenarios.{name} has {len(getattr(self, name))} entries, expected {n}")
        return self

    def __len__(self) -> int:
        return len(self.clusters)

    def cell_of(self, i: int) -> tuple[int, int, float, float, int]:
        return (self.clusters[i], self.size[i], self.rho[i], self.margin[i], self.noise[i])


class CellVerdict(_Frozen):
    clusters: int
    size: int
    rho: float
    margin: float
    noise: int
    n_scenarios: int
    worst: int                     # scenario index with the highest upper bound in the cell
    upper: float
    verdict: Literal["qualified", "exceeds", "undetermined"]
    vacuous: bool                  # the method never passed, always inconclusive, in this cell

    @property
    def key(self) -> tuple[int, int, float, float, int]:
        return (self.clusters, self.size, self.rho, self.margin, self.noise)


class WorstCase(_Frozen):
    scenario: int
    clusters: int
    size: int
    rho: float
    margin: float
    noise: int
    baseline: float
    discordance: float
    n_reps: int
    n_pass: int
    rate: float
    upper: float
    verdict: str


class QualifiedRule(_Frozen):
    """Within one (cluster size, rho, margin, label noise): the qualified K grid values."""
    size: int
    rho: float
    margin: float
    noise: int
    clusters: tuple[int, ...]


class QualifiedSubdomain(_Frozen):
    cells_qualified: int
    cells_total: int
    rules: tuple[QualifiedRule, ...]
    summary: str
    coverage_rule: str


class DatasetRef(_Frozen):
    file: str
    sha256: str


class QualificationRecord(_Frozen):
    schema_version: Literal["1"] = SCHEMA_VERSION
    method: MethodRef
    policy: QualificationPolicy
    policy_sha256: str
    threshold: float
    confidence: float
    scenarios: ScenarioTable
    cells: tuple[CellVerdict, ...]
    worst_case: WorstCase
    qualified: QualifiedSubdomain
    dataset: DatasetRef
    created: str
    valid_until: str
    software: dict[str, str]
    record_sha256: str = ""

    def body(self) -> dict:
        d = self.model_dump(mode="json")
        d.pop("record_sha256")
        return d

    def content_sha256(self) -> str:
        return canonical_sha256(self.body())

    def sealed(self) -> "QualificationRecord":
        return self.model_copy(update={"record_sha256": self.content_sha256()})

    def cell_map(self) -> dict[tuple, CellVerdict]:
        return {c.key: c for c in self.cells}

    def is_expired(self, now: _dt.datetime | None = None) -> bool:
        return (now or utcnow()) > parse_time(self.valid_until)

    def to_json(self) -> str:
        """Compact JSON (the content hash is over RFC 8785 canonical form, not this text)."""
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":")) + "\n"


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def format_time(t: _dt.datetime) -> str:
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str) -> _dt.datetime:
    return _dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc)


# ---------------------------------------------------------------- building a record


def cell_verdicts(policy: QualificationPolicy, scen: ScenarioTable) -> tuple[CellVerdict, ...]:
    """One verdict per discrete cell of the domain, worst over that cell's scenarios."""
    by_cell: dict[tuple, list[int]] = {}
    for i in range(len(scen)):
        by_cell.setdefault(scen.cell_of(i), []).append(i)
    out = []
    for cell in policy.domain.cells():
        idx = by_cell.get(cell)
        if not idx:
            raise ValueError(f"cell {cell} of the domain has no evaluated scenario")
        worst = max(idx, key=lambda i: (scen.upper[i], scen.n_pass[i] / scen.n_reps[i], -i))
        out.append(CellVerdict(clusters=cell[0], size=cell[1], rho=cell[2], margin=cell[3], noise=cell[4],
                               n_scenarios=len(idx), worst=worst, upper=scen.upper[worst],
                               verdict=combine_verdicts([scen.verdict[i] for i in idx]),
                               vacuous=all(scen.n_inconclusive[i] == scen.n_reps[i] for i in idx)))
    return tuple(out)


def worst_case(scen: ScenarioTable) -> WorstCase:
    i = max(range(len(scen)), key=lambda j: (scen.upper[j], scen.n_pass[j] / scen.n_reps[j], -j))
    return WorstCase(scenario=i, clusters=scen.clusters[i], size=scen.size[i], rho=scen.rho[i],
                     margin=scen.margin[i], noise=scen.noise[i], baseline=scen.baseline[i],
                     discordance=scen.discordance[i], n_reps=scen.n_reps[i], n_pass=scen.n_pass[i],
                     rate=scen.n_pass[i] / scen.n_reps[i], upper=scen.upper[i], verdict=scen.verdict[i])


def _size_label(size: Any) -> str:
    if isinstance(size, FixedSize):
        return f"M={size.trials}"
    return f"{size.kind}(mean {size.mean_trials:g}, min {size.minimum})"


def _k_ranges(ks: list[int], grid: tuple[int, ...]) -> str:
    """Compress qualified K grid values into runs of consecutive grid points."""
    if not ks:
        return "none"
    pos = [grid.index(k) for k in ks]
    runs, start = [], pos[0]
    for a, b in zip(pos, pos[1:] + [None]):
        if b is None or b != a + 1:
            lo, hi = grid[start], grid[a]
            runs.append(f"K={lo}" if lo == hi else (f"K>={lo}" if hi == grid[-1] else f"K {lo}..{hi}"))
            if b is not None:
                start = b
    return ", ".join(runs)


COVERAGE_RULE = ("A design point is covered when it lies inside the domain and every grid cell that "
                 "brackets it (on each of K, cluster size, rho and margin: the grid value itself, or both "
                 "neighbours when it falls between two) is qualified; each cell's verdict is the worst over "
                 "every evaluated baseline and discordance at the null boundary. Unknown rho: all rho grid "
                 "values must be qualified.")


def qualified_subdomain(policy: QualificationPolicy, cells: tuple[CellVerdict, ...]) -> QualifiedSubdomain:
    dom = policy.domain
    cmap = {c.key: c for c in cells}
    rules = []
    lines = []
    for s, m, n in itertools.product(range(len(dom.cluster_sizes)), dom.margin.grid, range(len(dom.label_noise))):
        per_rho = []
        for r in dom.rho.grid:
            ks = tuple(k for k in dom.clusters.grid if cmap[(k, s, r, m, n)].verdict == QUALIFIED)
            rules.append(QualifiedRule(size=s, rho=r, margin=m, noise=n, clusters=ks))
            per_rho.append((r, _k_ranges(list(ks), dom.clusters.grid)))
        # merge consecutive rho values with the same K description
        parts, i = [], 0
        while i < len(per_rho):
            j = i
            while j + 1 < len(per_rho) and per_rho[j + 1][1] == per_rho[i][1]:
                j += 1
            r_lo, r_hi = per_rho[i][0], per_rho[j][0]
            rho_txt = f"rho={r_lo:g}" if r_lo == r_hi else f"rho {r_lo:g}..{r_hi:g}"
            parts.append(f"{per_rho[i][1]} at {rho_txt}")
            i = j + 1
        noise_txt = "" if len(dom.label_noise) == 1 else f", noise #{n}"
        lines.append(f"{_size_label(dom.cluster_sizes[s])}, margin {m:g}{noise_txt}: " + "; ".join(parts))
    n_ok = sum(c.verdict == QUALIFIED for c in cells)
    n_vac = sum(c.verdict == QUALIFIED and c.vacuous for c in cells)
    head = f"qualified in {n_ok} of {len(cells)} cells (threshold {policy.threshold:.4g})"
    if n_vac:
        head += (f"; {n_vac} of them vacuously: the method was inconclusive in every replication there "
                 "(it never passes, so it cannot false-pass)")
    return QualifiedSubdomain(cells_qualified=n_ok, cells_total=len(cells), rules=tuple(rules),
                              summary="\n".join([head] + lines), coverage_rule=COVERAGE_RULE)


def build_record(method_identity: dict, kind: str, estimand: str, policy: QualificationPolicy,
                 scenarios: ScenarioTable, dataset_file: str, dataset_sha256: str, software: dict[str, str],
                 created: _dt.datetime | None = None, method_key: tuple | None = None) -> QualificationRecord:
    """Assemble and seal a record from evaluated scenarios (verdicts recomputed here).
    ``method_key`` = (registry name, options items, wrapped method name or None)."""
    check_scenarios(policy, scenarios)
    cells = cell_verdicts(policy, scenarios)
    created = created or utcnow()
    reg_name, options, inner = method_key or (method_identity["name"], (), None)
    rec = QualificationRecord(
        method=MethodRef(kind=kind, estimand=estimand, registered_name=reg_name, options=dict(options), inner=inner,
                         **method_identity),
        policy=policy, policy_sha256=policy.sha256, threshold=policy.threshold, confidence=policy.confidence,
        scenarios=scenarios, cells=cells, worst_case=worst_case(scenarios),
        qualified=qualified_subdomain(policy, cells),
        dataset=DatasetRef(file=dataset_file, sha256=dataset_sha256),
        created=format_time(created), valid_until=format_time(created + _dt.timedelta(days=policy.validity_days)),
        software=dict(software))
    return rec.sealed()


def cp_bounds(n_pass, n, confidence: float):
    """Vectorised one-sided Clopper-Pearson (lower, upper) at ``confidence``."""
    import numpy as np

    x = np.asarray(n_pass, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        up = np.where(x < n, stats.beta.ppf(confidence, x + 1, np.maximum(n - x, 1)), 1.0)
        lo = np.where(x > 0, stats.beta.ppf(1.0 - confidence, np.maximum(x, 1), n - x + 1), 0.0)
    return lo, up


def check_scenarios(policy: QualificationPolicy, scen: ScenarioTable) -> None:
    """Every stated bound and verdict must follow from the counts (else: tampered)."""
    import numpy as np

    c, thr = policy.mc_confidence, policy.threshold
    dom = policy.domain
    n = np.asarray(scen.n_reps, dtype=np.int64)
    x = np.asarray(scen.n_pass, dtype=np.int64)
    inc = np.asarray(scen.n_inconclusive, dtype=np.int64)
    bad = np.flatnonzero((n < 1) | (x < 0) | (x > n) | (inc < 0) | (inc > n - x))
    if bad.size:
        i = int(bad[0])
        raise TamperedRecordError(f"scenario {i}: impossible counts n_reps={n[i]}, n_pass={x[i]}, "
                                  f"n_inconclusive={inc[i]}")
    lo, up = cp_bounds(x, n, c)
    ok = np.isclose(lo, scen.lower, rtol=_REL_TOL, atol=1e-15) & np.isclose(up, scen.upper, rtol=_REL_TOL, atol=1e-15)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise TamperedRecordError(f"scenario {i}: bounds ({scen.lower[i]}, {scen.upper[i]}) do not follow "
                                  f"from {x[i]}/{n[i]} passes (expected ({lo[i]}, {up[i]}))")
    for i in range(len(scen)):
        if verdict_of(scen.lower[i], scen.upper[i], thr) != scen.verdict[i]:
            raise TamperedRecordError(f"scenario {i}: verdict {scen.verdict[i]!r} does not follow from its bounds")
        if not (0 <= scen.size[i] < len(dom.cluster_sizes) and 0 <= scen.noise[i] < len(dom.label_noise)):
            raise TamperedRecordError(f"scenario {i}: size/noise index outside the policy's domain")


# ---------------------------------------------------------------- loading and verification


def verify_record(record: QualificationRecord, directory: Path | None, *, check_current: bool = True,
                  check_dataset: bool = True, hashes_checked: bool = False) -> QualificationRecord:
    """Raise TamperedRecordError / StaleRecordError unless ``record`` is intact and current.
    (``hashes_checked``: the caller verified the hashes on the stored JSON.)"""
    if not hashes_checked:
        if record.record_sha256 != record.content_sha256():
            raise TamperedRecordError(f"record for {record.method.name!r}: content hash mismatch (stated "
                                      f"{record.record_sha256[:12]}, computed {record.content_sha256()[:12]})")
        if record.policy_sha256 != record.policy.sha256:
            raise TamperedRecordError(f"record for {record.method.name!r}: policy hash mismatch")
    if not (math.isclose(record.threshold, record.policy.threshold)
            and math.isclose(record.confidence, record.policy.confidence)):
        raise TamperedRecordError(f"record for {record.method.name!r}: threshold/confidence differ from its policy")
    check_scenarios(record.policy, record.scenarios)
    if cell_verdicts(record.policy, record.scenarios) != record.cells:
        raise TamperedRecordError(f"record for {record.method.name!r}: cell verdicts do not follow from scenarios")
    if check_dataset:
        if directory is None:
            raise ValueError("verify_record needs the record's directory to check its dataset")
        path = Path(directory) / record.dataset.file
        if Path(record.dataset.file).name != record.dataset.file:
            raise TamperedRecordError(f"dataset file name {record.dataset.file!r} must be a bare file name")
        if not path.is_file():
            raise TamperedRecordError(f"record for {record.method.name!r}: dataset {path} is missing")
        actual = file_sha256(path)
        if actual != record.dataset.sha256:
            raise TamperedRecordError(f"record for {record.method.name!r}: dataset {path.name} sha256 mismatch "
                                      f"(record {record.dataset.sha256[:12]}, file {actual[:12]})")
    if check_current:
        ident = record.method.resolve().identity
        if ident.version != record.method.version:
            raise StaleRecordError(f"record for {record.method.name!r} is stale: method version changed "
                                   f"({record.method.version} -> {ident.version}); re-run `simlab qualify`")
        if ident.source_sha256 != record.method.source_sha256:
            raise StaleRecordError(f"record for {record.method.name!r} is stale: method source changed "
                                   f"(sha256 {record.method.source_sha256[:12]} -> {ident.source_sha256[:12]}); "
                                   "re-run `simlab qualify`")
    return record


def load_record(path: str | Path, *, check_current: bool = True, check_dataset: bool = True) -> QualificationRecord:
    """Read and verify a record (JSON file): tampered or stale records raise.

    The content and policy hashes are checked on the JSON exactly as stored (so a record
    stays verifiable when later versions of the schema add fields with defaults), then the
    parsed record is checked for internal consistency, its dataset and its method."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise RecordError(f"no qualification record at {path}") from None
    except json.JSONDecodeError as exc:
        raise TamperedRecordError(f"record {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("record_sha256"), str) \
            or not isinstance(data.get("policy"), dict):
        raise TamperedRecordError(f"record {path}: does not match the record schema (no record_sha256 / policy)")
    stated = data["record_sha256"]
    computed = canonical_sha256({k: v for k, v in data.items() if k != "record_sha256"})
    if stated != computed:
        raise TamperedRecordError(f"record {path.name}: content hash mismatch (stated {stated[:12]}, "
                                  f"computed {computed[:12]})")
    if canonical_sha256(data["policy"]) != data.get("policy_sha256"):
        raise TamperedRecordError(f"record {path.name}: policy hash mismatch")
    try:
        record = QualificationRecord.model_validate(data)
    except ValidationError as exc:
        raise TamperedRecordError(f"record {path}: does not match the record schema: {exc}") from None
    return verify_record(record, path.parent, check_current=check_current, check_dataset=check_dataset,
                         hashes_checked=True)


def record_paths(name: str | None = None, directory: str | Path = RESULTS_DIR) -> list[Path]:
    """Record files in ``directory`` (optionally only those of one method), sorted."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    out = []
    for p in sorted(directory.glob("*.json")):
        try:
            head = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(head, dict) and "record_sha256" in head and (
                name is None or head.get("method", {}).get("name") == name):
            out.append(p)
    return out


def record_stem(method_name: str, policy: QualificationPolicy) -> str:
    """File stem ``<method>.<policy hash prefix>``; a wrapper's ``outer[inner]`` becomes
    ``outer--inner`` (no shell glob characters in file names)."""
    import re

    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", method_name.replace("[", "--").replace("]", "")).strip("-")
    return f"{safe}.{policy.sha256[:10]}"


# ---------------------------------------------------------------- coverage


class DesignPoint(_Frozen):
    """What the evidence path knows about an experiment's design."""
    clusters: int = Field(ge=1)
    cluster_size: ClusterSize = FixedSize(trials=1)
    margin: float = Field(gt=0.0, lt=1.0)
    rho: float | None = Field(default=None, ge=0.0, lt=1.0)
    label_noise: LabelNoise = LabelNoise()
    baseline: float | None = Field(default=None, ge=0.0, le=1.0)
    discordance: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence: float | None = None
    looks: int | None = Field(default=None, ge=1)


@dataclass(frozen=True)
class Coverage:
    """Answer of :func:`covers`: ``covered`` plus why, and the cells consulted."""
    covered: bool
    reason: str
    cells: tuple[tuple, ...] = ()
    record: str = ""               # record file, when found by :func:`find_coverage`

    def __bool__(self) -> bool:
        return self.covered


def _size_bracket(domain: QualificationDomain, size: Any) -> tuple[int, ...] | str:
    same = [(i, s) for i, s in enumerate(domain.cluster_sizes)
            if s.kind == size.kind and getattr(s, "minimum", None) == getattr(size, "minimum", None)]
    if not same:
        return f"cluster size law {size.kind!r} is not in the domain"
    means = sorted((s.mean(), i) for i, s in same)
    x = size.mean()
    for m, i in means:
        if abs(m - x) <= 1e-12:
            return (i,)
    below = [(m, i) for m, i in means if m < x]
    above = [(m, i) for m, i in means if m > x]
    if not below or not above:
        return f"cluster size (mean {x:g}) lies outside the domain's {size.kind} sizes " \
               f"({means[0][0]:g}..{means[-1][0]:g})"
    return (below[-1][1], above[0][1])


def covers(record: QualificationRecord, point: DesignPoint | dict, *, now: _dt.datetime | None = None) -> Coverage:
    """Does ``record`` qualify its method at ``point``?  (See ``COVERAGE_RULE``.)

    The record must already be verified (``load_record``); an expired record covers nothing."""
    if isinstance(point, dict):
        point = DesignPoint.model_validate(point)
    if record.is_expired(now):
        return Coverage(False, f"record expired at {record.valid_until}")
    pol, dom = record.policy, record.policy.domain
    if point.confidence is not None and not math.isclose(point.confidence, pol.confidence):
        return Coverage(False, f"confidence {point.confidence} differs from the qualified {pol.confidence:g}")
    if point.looks != dom.looks:
        return Coverage(False, f"look schedule differs: design has {point.looks or 'no'} interim looks, the record "
                               f"qualified {dom.looks or 'none (fixed sample)'}")
    checks = [("clusters", dom.clusters, point.clusters), ("margin", dom.margin, point.margin)]
    if point.rho is not None:
        checks.append(("rho", dom.rho, point.rho))
    for name, axis, x in checks:
        if not axis.contains(x):
            return Coverage(False, f"{name}={x:g} lies outside the qualified domain [{axis.lo:g}, {axis.hi:g}]")
    for name, axis, x in (("baseline", dom.baseline, point.baseline), ("discordance", dom.discordance,
                                                                        point.discordance)):
        if x is not None and not axis.contains(x):
            return Coverage(False, f"{name}={x:g} lies outside the qualified domain [{axis.lo:g}, {axis.hi:g}]")
    if point.label_noise not in dom.label_noise:
        return Coverage(False, "label-noise model is not in the qualified domain")
    noise = dom.label_noise.index(point.label_noise)
    sizes = _size_bracket(dom, point.cluster_size)
    if isinstance(sizes, str):
        return Coverage(False, sizes)
    ks = dom.clusters.bracket(point.clusters)
    rhos = dom.rho.grid if point.rho is None else dom.rho.bracket(point.rho)
    margins = dom.margin.bracket(point.margin)
    cmap = record.cell_map()
    needed = list(itertools.product(ks, sizes, rhos, margins, (noise,)))
    bad = [c for c in needed if cmap[c].verdict != QUALIFIED]
    if bad:
        c = cmap[bad[0]]
        return Coverage(False, f"{len(bad)} of {len(needed)} bracketing cells not qualified, e.g. K={c.clusters}, "
                               f"{_size_label(dom.cluster_sizes[c.size])}, rho={c.rho:g}, margin={c.margin:g}: "
                               f"{c.verdict} (false-pass upper bound {c.upper:.4g} vs {pol.threshold:.4g})",
                        tuple(needed))
    return Coverage(True, f"all {len(needed)} bracketing cells qualified", tuple(needed))


def find_coverage(name: str, point: DesignPoint | dict, directory: str | Path = RESULTS_DIR,
                  now: _dt.datetime | None = None) -> Coverage:
    """Look through every record of method ``name`` (its identity name, e.g.
    ``repeated_fixed[binomial_loss]`` for wrappers) in ``directory``.  Covered when one
    record covers ``point`` and no other record whose domain holds ``point`` finds a
    bracketing cell unqualified: records that disagree (overlapping domains, Monte Carlo
    noise near the threshold) give the conservative answer, so a decision can never pick
    the favourable record.  A tampered or stale record is an error (``load_record``),
    never silently skipped."""
    paths = record_paths(name, directory)
    if not paths:
        return Coverage(False, f"no qualification record for {name!r} in {directory}")
    answers = [(p, covers(load_record(p), point, now=now)) for p in paths]
    hits = [(p, c) for p, c in answers if c.covered]
    against = [(p, c) for p, c in answers if not c.covered and c.cells]  # point inside, cells not qualified
    if hits and not against:
        p, c = hits[0]
        return Coverage(True, c.reason, c.cells, str(p))
    if hits:
        p, c = against[0]
        return Coverage(False, f"records disagree: {hits[0][0].name} qualifies this design but {p.name} does not "
                               f"({c.reason}); the conservative answer is not covered", c.cells, str(p))
    return Coverage(False, "; ".join(f"{p.name}: {c.reason}" for p, c in answers))
