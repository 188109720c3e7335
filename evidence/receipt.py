"""The evidence receipt: what this experiment may authorise, by the seed's asymmetric rules.

The receipt never accepts a caller-supplied comparison, hard-failure count or raw hash:
``build_receipt`` receives the manifest, the paired experiment (from the raw trials), the
comparison recomputed from it, the qualification check and the test / prerequisite
receipts, and derives the decision.  Rules (evidence-spine chapter, "Evidence receipt and
authority ceiling"), the most restrictive wins:

- a missing or unsatisfied prerequisite, or a missing required test -> locked, block;
- a failed deterministic test, or one run at another code revision -> buildable, block;
- contradictory evidence (fabricated cost provenance), any candidate trial with a failed
  check, or a statistical fail -> evidence_ready, block;
- a protected slice whose test failed under the multiplicity rule -> evidence_ready, block;
- fewer independent clusters than registered, an inconclusive comparison (with its reason,
  e.g. a judge correction that is not identified, or a calibration set smaller than the
  registered ``min_calibration``), an ICC upper bound above ``rho_max``, a
  protected slice inconclusive / not tested / without trials, or a confirmatory run beyond
  its sealed holdout's maximum number of confirmatory accesses -> evidence_ready, hold;
- a pass without a covering, verified, trusted-signed qualification, with synthetic
  evidence or an unpinned revision, a plan registered after measurement, logs whose
  identities the manifest does not register, or a population membership that was not
  checked against the registered case list, an exploratory run, or judge-labelled outcomes
  under a manifest that registers no judge (taken as truth: ``evidence.labels``) ->
  evidence_ready, lab_pass (authority lab_only).  A judge-corrected comparison is covered
  only by a certificate whose label-noise domain holds the registered calibration
  (``evidence.qualification_check``);
- a pass with all of them -> qualified, canary_eligible (authority canary): the ceiling.

A candidate trial with a failed deterministic check blocks whatever its ``passed`` label
says -- a judge's pass does not override it (with a judge the tables also count it as a
fail: ``evidence.experiment``).

A receipt is bound to every component by hash and is valid from ``issued_at`` to the
earlier of the manifest's and the qualification record's expiry."""
from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import AwareDatetime, ConfigDict, Field

from simlab.models import FrozenModel

from .qualification_check import QualificationCheck
from .experiment import PairedExperiment
from simlab.hashing import content_hash, with_self_hash
from .manifest import Manifest, Name
from .labels import uncorrected_judge_finding
from .slices import slice_findings

ACTIONS = ("block", "hold", "lab_pass", "canary_eligible")  # weakest first
AUTHORITY = {"block": "none", "hold": "none", "lab_pass": "lab_only", "canary_eligible": "canary"}
AUTHORITY_CEILING = "canary"
_RANK = [("locked", "block"), ("buildable", "block"), ("expired", "block"), ("evidence_ready", "block"),
         ("evidence_ready", "hold"), ("evidence_ready", "lab_pass"), ("qualified", "canary_eligible")]


class TestReceipt(FrozenModel):
    """A deterministic test suite's outcome at one code revision."""
    __test__ = False  # not a pytest class
    model_config = ConfigDict(strict=True)
    kind: Literal["test"] = "test"
    name: Name
    code_revision: Name
    passed: bool
    ran_at: AwareDatetime

    @property
    def sha256(self) -> str:
        return content_hash(self.model_dump(mode="json"))


class PrerequisiteReceipt(FrozenModel):
    """A prerequisite contract or control (e.g. rollback plan, monitoring) and whether it holds."""
    model_config = ConfigDict(strict=True)
    kind: Literal["prerequisite"] = "prerequisite"
    name: Name
    satisfied: bool
    evidence: str = Field(default="", max_length=2000)

    @property
    def sha256(self) -> str:
        return content_hash(self.model_dump(mode="json"))


def as_object(value) -> dict:
    return value if isinstance(value, dict) else {}  # an edited receipt's list or string binds nothing


def components_of(receipt: dict) -> dict:
    """A stored receipt's ``components`` object (empty when an edit made it something else)."""
    return as_object(receipt.get("components"))


def action_strength(action: str) -> int:
    return ACTIONS.index(action)


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _fmt(x) -> str:
    return "none" if x is None else f"{x:.4g}"


def _prerequisite_findings(manifest, tests, prerequisites) -> list[tuple[str, str, str]]:
    out = []
    by_pre = {p.name: p for p in prerequisites}
    by_test = {t.name: t for t in tests}
    for name in manifest.required_prerequisites:
        p = by_pre.get(name)
        if p is None:
            out.append(("locked", "block", f"prerequisite {name!r} is missing"))
        elif not p.satisfied:
            out.append(("locked", "block", f"prerequisite {name!r} is not satisfied"))
    for name in manifest.required_tests:
        t = by_test.get(name)
        if t is None:
            out.append(("locked", "block", f"test receipt {name!r} is missing"))
        elif t.code_revision != manifest.code_revision:
            out.append(("buildable", "block", f"test receipt {name!r} is from code revision {t.code_revision}, "
                                              f"not the manifest's {manifest.code_revision}"))
        elif not t.passed:
            out.append(("buildable", "block", f"deterministic test {name!r} failed"))
    return out


def _evidence_findings(manifest, experiment, comparison) -> list[tuple[str, str, str]]:
    out = []
    prov = experiment.provenance_counts
    if manifest.measurement_kind == "synthetic" and prov.get("measured"):
        out.append(("evidence_ready", "block", f"fabricated cost provenance: {prov['measured']} trial(s) claim "
                                               "measured cost in a synthetic experiment"))
    if manifest.measurement_kind == "measured" and prov.get("synthetic"):
        out.append(("evidence_ready", "block", f"fabricated cost provenance: {prov['synthetic']} trial(s) carry "
                                               "synthetic cost in an experiment declared measured"))
    if experiment.candidate_failed_trials:
        ex = experiment.failed_examples[0]
        out.append(("evidence_ready", "block", f"{experiment.candidate_failed_trials} candidate trial(s) with failed "
                                               f"checks (e.g. case {ex['case_id']!r} trial {ex['trial_index']}: "
                                               f"{', '.join(ex['failed_checks'])}); an average cannot hide them"))
    if comparison["status"] == "fail":
        out.append(("evidence_ready", "block", f"statistical fail: {comparison['method']['name']} does not establish "
                                               f"non-inferiority (lower bound {_fmt(comparison['lower'])}, margin "
                                               f"{manifest.margin:g})"))
    if experiment.clusters < manifest.minimum_independent_clusters:
        out.append(("evidence_ready", "hold", f"{experiment.clusters} independent clusters < the registered "
                                              f"minimum {manifest.minimum_independent_clusters} ({experiment.pairs} "
                                              "paired trials do not add independent units)"))
    if comparison["status"] == "inconclusive":
        why = (comparison.get("judge") or {}).get("reason")
        out.append(("evidence_ready", "hold", "statistical comparison inconclusive" + (f": {why}" if why else "")))
    icc = comparison["icc"]
    if icc["applicable"] and (icc["upper"] is None or icc["upper"] > manifest.rho_max):
        out.append(("evidence_ready", "hold", f"observed ICC upper bound {_fmt(icc['upper'])} exceeds the registered "
                                              f"rho_max {manifest.rho_max:g} ({icc['note']})"))
    return out + slice_findings(comparison.get("slices"))


def _authority_gaps(manifest, qualification: QualificationCheck, population: dict | None) -> list[str]:
    gaps = []
    if population is None or not population.get("checked"):
        gaps.append("population membership not checked: no registered case list was given (the manifest's "
                    "population_hash binds the cases and clusters that must be present)")
    if not qualification.covered:
        gaps.extend(f"unqualified: {r}" for r in qualification.reasons)
    elif not qualification.signed_by:
        gaps.append(f"qualification record not signed by a trusted key: {qualification.signature.get('reason')}")
    if manifest.measurement_kind != "measured":
        gaps.append("synthetic evidence authorises lab work only")
    if not manifest.pinned:
        gaps.append("code revision is not pinned")
    return gaps


def _run_findings(holdout: dict | None, exploratory: bool) -> list[tuple[str, str, str]]:
    """A confirmatory run beyond its sealed holdout's maximum holds; an exploratory run is lab
    work only."""
    out = []
    if holdout is not None and holdout["beyond_maximum"]:
        out.append(("evidence_ready", "hold", f"sealed holdout {holdout['id']!r}: this run is confirmatory access "
                                              f"{holdout['confirmatory_accesses']} of at most {holdout['max_uses']} "
                                              f"(counted in the ledger; {holdout['exploratory_accesses']} exploratory "
                                              "access(es) besides): beyond the registered maximum its outcomes have "
                                              "already been seen, so it no longer confirms anything -- register a "
                                              "fresh holdout"))
    if exploratory:
        out.append(("evidence_ready", "lab_pass", "exploratory run (declared so): it may suggest, not confirm; "
                                                  "authority capped at lab_only"))
    return out


def build_receipt(*, manifest: Manifest, experiment: PairedExperiment, comparison: dict,
                  qualification: QualificationCheck, tests: tuple[TestReceipt, ...] = (),
                  prerequisites: tuple[PrerequisiteReceipt, ...] = (), raw_artifacts: dict[str, str],
                  issued_at: dt.datetime, measurement: dict | None = None,
                  measurement_findings: list[tuple[str, str, str]] = (), population: dict | None = None,
                  holdout: dict | None = None, exploratory: bool = False) -> dict:
    """The receipt (JSON-ready, with its own ``receipt_sha256``).  ``measurement`` (log
    identities and times, from ``evidence.provenance``) and its findings, and ``population``
    (whether the cases were checked against the registered list) restrict it further.
    ``holdout``: the sealed holdout's access this run took, with the confirmatory and
    exploratory accesses so far (stated in the receipt);
    ``exploratory``: the run was declared exploratory (``purpose`` in the receipt)."""
    findings = _prerequisite_findings(manifest, tests, prerequisites) + list(measurement_findings)
    if issued_at > manifest.valid_until:
        findings.append(("expired", "block", f"manifest expired at {iso(manifest.valid_until)}"))
    if issued_at < manifest.created_at:
        findings.append(("expired", "block", "receipt would predate the manifest (chronology)"))
    findings += _evidence_findings(manifest, experiment, comparison) + _run_findings(holdout, exploratory)
    findings += uncorrected_judge_finding(manifest, experiment.judge_labels or {}, experiment.judge_label_example)
    gaps = _authority_gaps(manifest, qualification, population)
    if gaps:
        findings += [("evidence_ready", "lab_pass", g) for g in gaps]
    outcome = min((_RANK.index((s, a)) for s, a, _ in findings), default=len(_RANK) - 1)
    state, action = _RANK[outcome]
    reasons = [r for s, a, r in findings if _RANK.index((s, a)) == outcome] or [
        "pass under a verified, trusted-signed qualification covering this design, measured evidence, pinned "
        "revision, all prerequisites met"]
    valid_until = manifest.valid_until
    if qualification.valid_until:
        valid_until = min(valid_until, dt.datetime.fromisoformat(qualification.valid_until.replace("Z", "+00:00")))
    body = {
        "schema_version": "1", "kind": "simlab.evidence.receipt", "experiment_id": manifest.experiment_id,
        "state": state, "action": action, "authority": AUTHORITY[action], "authority_ceiling": AUTHORITY_CEILING,
        "reasons": reasons, "other_findings": [r for _, _, r in findings if r not in reasons],
        "issued_at": iso(issued_at), "valid_until": iso(valid_until),
        "code_revision": manifest.code_revision, "measurement_kind": manifest.measurement_kind,
        "purpose": "exploratory" if exploratory else "confirmatory",
        "components": {
            "manifest": manifest.sha256, "raw_artifacts": dict(sorted(raw_artifacts.items())),
            "comparison": content_hash(comparison), "qualification": manifest.qualification_sha256,
            "method": comparison["method"], "population": manifest.population_hash,
            "inputs": dict(sorted(manifest.input_hashes.items())),
            "tests": {t.name: t.sha256 for t in tests}, "prerequisites": {p.name: p.sha256 for p in prerequisites},
            **({"judge": manifest.judge.bound()} if manifest.judge else {}),
            **({"holdout": {manifest.holdout.id: manifest.holdout.sha256}} if manifest.holdout else {}),
        },
        "comparison": comparison,
        "hard_failures": {"candidate_trials_with_failed_checks": experiment.candidate_failed_trials,
                          **({"judge_passes_overridden": experiment.candidate_passes_overridden}
                             if manifest.judge else {}),
                          "examples": list(experiment.failed_examples)},
        "evidence": {"clusters": experiment.clusters, "pairs": experiment.pairs, "cases": experiment.cases,
                     "minimum_independent_clusters": manifest.minimum_independent_clusters,
                     "judge_labelled": experiment.judge_labels,
                     "cost_provenance": experiment.provenance_counts},
        "qualification": qualification.as_dict(),
        "measurement": measurement,
        "population": population,
        **({"holdout": holdout} if holdout is not None else {}),
    }
    return with_self_hash(body, "receipt_sha256")
