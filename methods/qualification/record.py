"""The qualification record: what a study proved about a method under a policy.

The method's identity (name, version, source sha256), the policy and its hash, every
evaluated scenario with its counts, Clopper-Pearson bounds and verdict, one verdict per
discrete cell (worst over the nuisance), the worst case, the qualified sub-domain, the
dataset file it came from (name + sha256), created / valid-until, the Monte Carlo rule its
bounds follow (``verdicts``), its own content hash (RFC 8785 canonical JSON, sha256;
``simlab.hashing``) and optionally an Ed25519 signature (``simlab.signing``).
"""
from __future__ import annotations

import datetime as _dt
import json
from typing import Literal

from pydantic import model_validator

from methods.method_ref import MethodRef
from simlab.models import FrozenModel
from simlab.signing import Signature

from simlab.clock import parse_time, utcnow
from simlab.hashing import content_hash
from .points import ScenarioPoint
from .policy import QualificationPolicy
from .verdicts import MCRule, StaleRecordError, stage_confidence

SCHEMA_VERSION = "3"  # 3: every hash in the one form sha256:<hex> (simlab.hashing)


class RecordedMethod(FrozenModel):
    """The method block of a record or certificate: the implementation identity it was
    qualified with, plus how to find the method again -- a :class:`methods.method_ref.MethodRef`
    (the one method reference) built from ``registered_name``, ``options`` and ``inner``."""
    name: str
    version: str
    source_sha256: str
    kind: str
    estimand: str
    registered_name: str
    options: dict[str, float] = {}
    inner: str | None = None

    @property
    def ref(self) -> MethodRef:
        return MethodRef(name=self.registered_name, options=dict(self.options), inner=self.inner)

    def resolve(self):
        try:
            return self.ref.resolve()
        except KeyError as exc:
            raise StaleRecordError(f"record is for method {self.registered_name!r}, which is no longer "
                                   "registered") from exc


class ScenarioTable(FrozenModel):
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


class CellVerdict(FrozenModel):
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


class WorstCase(ScenarioPoint):
    """The scenario with the largest false-pass upper bound, and its counts."""
    scenario: int
    n_reps: int
    n_pass: int
    rate: float
    upper: float
    verdict: str


class QualifiedRule(FrozenModel):
    """Within one (cluster size, rho, margin, label noise): the qualified K grid values."""
    size: int
    rho: float
    margin: float
    noise: int
    clusters: tuple[int, ...]


class QualifiedSubdomain(FrozenModel):
    cells_qualified: int
    cells_total: int
    rules: tuple[QualifiedRule, ...]
    summary: str
    coverage_rule: str


class DatasetRef(FrozenModel):
    file: str
    sha256: str


class QualificationRecord(FrozenModel):
    schema_version: Literal["1", "2", "3"] = SCHEMA_VERSION
    mc_rule: MCRule = "unadjusted"   # schema 1 records carry no rule: their bounds were unadjusted
    method: RecordedMethod
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
    signature: Signature | None = None

    @property
    def bound_confidence(self) -> float:
        """Confidence of each stored scenario bound (``verdicts.stage_confidence``)."""
        return stage_confidence(self.policy.mc_confidence, len(self.policy.replication_schedule()), self.mc_rule)

    def body(self) -> dict:
        """What the content hash covers: everything but the hash and the signature."""
        return body_of(self.model_dump(mode="json"))

    def content_sha256(self) -> str:
        return content_hash(self.body())

    def sealed(self) -> "QualificationRecord":
        return self.model_copy(update={"record_sha256": self.content_sha256()})

    def signed(self, key) -> "QualificationRecord":
        """The sealed record with an Ed25519 signature (``simlab.signing``) over its body and hash."""
        from simlab.signing import sign
        sealed = self if self.record_sha256 else self.sealed()
        return sealed.model_copy(update={"signature": sign(signed_payload(sealed.model_dump(mode="json")), key)})

    def cell_map(self) -> dict[tuple, CellVerdict]:
        return {c.key: c for c in self.cells}

    def is_expired(self, now: _dt.datetime | None = None) -> bool:
        return (now or utcnow()) > parse_time(self.valid_until)

    def to_json(self) -> str:
        """Compact JSON (the content hash is over RFC 8785 canonical form, not this text)."""
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":")) + "\n"


def body_of(data: dict) -> dict:
    """A stored record's (or certificate's) hashed content: all but its hash and signature."""
    return {k: v for k, v in data.items() if k not in ("record_sha256", "certificate_sha256", "theorem_sha256", "signature")}


def signed_payload(data: dict) -> dict:
    """What a signature covers: all but the signature itself (so the hash is signed too)."""
    return {k: v for k, v in data.items() if k != "signature"}
