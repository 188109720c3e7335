"""Robustness of a model-certified claim: a method's false-pass rate at one design under laws
OUTSIDE the Dirichlet-multinomial (DM) model its certificate was computed under.

A certificate (or a calibrated method ``NAME@alpha=LEVEL``) bounds the false-pass rate over
the DM cluster model at the null boundary.  The evidence path checks the design and the
ICC against ``rho_max`` but cannot rule out other laws; this report measures the claim
under them (``simlab.sampling.robust``; the default grid is ``robust_grid``): for every law
and method, replications ``0 .. R - 1`` of the law's own stream (seed ``seed``) are decided
through the engine's one evaluation loop (``studies.engine.evaluate``: every method on the
same tables, integer pass counts), and the rate gets its Monte Carlo SE and one-sided
Clopper-Pearson bounds at ``mc_confidence`` (``methods.qualification.cp_upper`` /
``cp_lower``).  Verdict against ``threshold = allowed_excess x alpha`` (the policies' 1.1):

* ``holds`` -- the upper bound is at most the threshold;
* ``fails`` -- the lower bound exceeds it;
* ``undetermined`` -- neither (more replications could decide).

A row also says whether its upper bound is within ``alpha`` itself (``upper_within_alpha``):
the standard a calibrated method's certificate meets in the model (``allowed_excess = 1``).

Each row also states the law's implied ICC of ``D = n01 - n10``: a law with an ICC above
``rho_max`` is one the evidence path's ICC check *could* catch (it estimates that ICC from
the data, with its own error); one at or below it could not, so a claim that fails there
is a claim the evidence path cannot protect.  Each bound is a per-row statement (no
multiplicity adjustment across rows: the report screens laws, it certifies nothing).

Replication ``r`` of a law is a pure function of ``(seed, law, r)`` and counts are integers,
so the report is bitwise the same for any chunking, worker count or backend.  A DM law's
source is exactly ``simlab.sampling.table_source`` of its scenario, so its rows equal
``studies.engine.runner.evaluate_scenario``'s at the same seed.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from methods.qualification import QualificationPolicy, cp_lower, cp_upper
from simlab.estimands import is_difference
from simlab.sampling.robust import RobustLaw, parse_law

from studies.engine.spec import MethodRef, as_method_refs
from studies.qualify.robust_grid import FAMILIES, default_laws, law_family

DEFAULT_SEED = 20261207
DEFAULT_REPLICATIONS = 20_000
DEFAULT_CHUNK = 20_000
HOLDS, FAILS, UNDETERMINED = "holds", "fails", "undetermined"
VERDICT_FLAGS = (HOLDS, FAILS, UNDETERMINED)
ALLOWED_EXCESS = float(QualificationPolicy.model_fields["allowed_excess"].default)  # the policies' 1.1


def verdict(lower: float, upper: float, threshold: float) -> str:
    """``holds`` / ``fails`` / ``undetermined`` (module docstring)."""
    if upper <= threshold:
        return HOLDS
    if lower > threshold:
        return FAILS
    return UNDETERMINED


def law_counts(law_json: dict, refs: tuple[MethodRef, ...], margin: float, alpha: float, seed: int, start: int,
               stop: int) -> list[list[int]]:
    """``[passes, inconclusive]`` per method on replications ``start .. stop - 1`` of one law (a
    task: a pure function of its arguments)."""
    from studies.engine.evaluate import PassCounts, ScenarioRows, evaluate

    methods = [r.resolve("fixed") for r in refs]
    counts = PassCounts(len(methods))
    evaluate(ScenarioRows(parse_law(law_json).source(seed)), start, stop, methods, (margin,), (alpha,), counts)
    return counts.counts


@dataclass(frozen=True)
class RobustnessRow:
    """One law x one method."""
    law: RobustLaw
    method: str
    n_reps: int
    n_pass: int
    n_inconclusive: int
    mc_confidence: float
    threshold: float
    rho_max: float
    alpha: float          # ``upper_within_alpha``: the standard a calibrated method's certificate meets

    @property
    def rate(self) -> float:
        return self.n_pass / self.n_reps

    @property
    def mc_se(self) -> float:
        p = self.rate
        return math.sqrt(p * (1.0 - p) / self.n_reps)

    @property
    def bounds(self) -> tuple[float, float]:
        return (cp_lower(self.n_pass, self.n_reps, self.mc_confidence),
                cp_upper(self.n_pass, self.n_reps, self.mc_confidence))

    @property
    def verdict(self) -> str:
        return verdict(*self.bounds, self.threshold)

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.bounds
        icc = self.law.icc_d()
        return {"family": law_family(self.law), "law": self.law.kind, "label": self.law.label,
                "parameters": self.law.parameters(), "law_key": self.law.key, "icc_d": icc,
                "icc_above_rho_max": bool(icc > self.rho_max), "implied_difference": self.law.implied_difference(),
                "implied_discordance": self.law.implied_discordance(), "mean_trials": self.law.mean_trials(),
                "method": self.method, "n_reps": self.n_reps, "n_pass": self.n_pass,
                "n_inconclusive": self.n_inconclusive, "rate": self.rate, "mc_se": self.mc_se, "cp_lower": lo,
                "cp_upper": hi, "verdict": self.verdict, "upper_within_alpha": bool(hi <= self.alpha)}


@dataclass(frozen=True)
class RobustnessReport:
    """Every law x method of one design; ``as_dict`` (JSON) and ``dataset`` (xarray)."""
    design: dict[str, Any]
    methods: tuple[dict[str, Any], ...]
    laws: tuple[RobustLaw, ...]
    rows: tuple[RobustnessRow, ...]
    seed: int
    replications: int
    seconds: float
    inputs: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> list[dict[str, Any]]:
        """Per method and family: how many laws hold / fail / are undetermined, how many have an
        upper bound within alpha itself, the worst rate, and the failures a law with ICC at or
        below rho_max causes (ones no ICC check catches)."""
        out = []
        for m in self.methods:
            label = m["label"]
            for family in FAMILIES:
                rows = [r for r in self.rows if r.method == label and law_family(r.law) == family]
                if not rows:
                    continue
                worst = max(rows, key=lambda r: (r.bounds[1], r.rate))
                verdicts = [r.verdict for r in rows]
                out.append({"method": label, "family": family, "laws": len(rows),
                            "holds": verdicts.count(HOLDS), "fails": verdicts.count(FAILS),
                            "undetermined": verdicts.count(UNDETERMINED),
                            "upper_within_alpha": sum(r.bounds[1] <= r.alpha for r in rows),
                            "fails_below_rho_max": sum(r.verdict == FAILS and r.law.icc_d() <= r.rho_max
                                                       for r in rows),
                            "worst_rate": worst.rate, "worst_cp_upper": worst.bounds[1], "worst_label": worst.law.label})
        return out

    def as_dict(self) -> dict[str, Any]:
        from studies.datasets import code_revision

        return {"kind": "robustness", "code_revision": code_revision(), "design": self.design, "methods": list(self.methods), "seed": self.seed,
                "replications": self.replications, "seconds": self.seconds, "inputs": self.inputs,
                "verdict_rule": (f"holds: one-sided {self.design['mc_confidence']:g} Clopper-Pearson upper bound <= "
                                 f"threshold {self.design['threshold']:g}; fails: lower bound > threshold; "
                                 "else undetermined"),
                "rows": [r.as_dict() for r in self.rows], "summary": self.summary()}

    def dataset(self):
        """An xarray dataset of kind ``robustness`` (``studies/SCHEMA.md``)."""
        import numpy as np
        import xarray as xr

        from studies.datasets import describe, make_attrs

        labels = [m["label"] for m in self.methods]
        shape = (len(self.laws), len(labels))
        idx = {(r.law.key, r.method): r for r in self.rows}

        def grid(f, dtype=np.float64):
            a = np.empty(shape, dtype)
            for i, law in enumerate(self.laws):
                for j, lab in enumerate(labels):
                    a[i, j] = f(idx[(law.key, lab)])
            return a

        dims = ("law", "method")
        ds = xr.Dataset(
            {"n_reps": (dims, grid(lambda r: r.n_reps, np.int64)),
             "n_pass": (dims, grid(lambda r: r.n_pass, np.int64)),
             "n_inconclusive": (dims, grid(lambda r: r.n_inconclusive, np.int64)),
             "false_pass_rate": (dims, grid(lambda r: r.rate)),
             "false_pass_rate_mcse": (dims, grid(lambda r: r.mc_se)),
             "cp_lower": (dims, grid(lambda r: r.bounds[0])),
             "cp_upper": (dims, grid(lambda r: r.bounds[1])),
             "verdict": (dims, grid(lambda r: VERDICT_FLAGS.index(r.verdict), np.int8),
                         {"flag_values": [0, 1, 2], "flag_meanings": " ".join(VERDICT_FLAGS),
                          "long_name": "verdict against the threshold"}),
             "icc_d": ("law", np.array([law.icc_d() for law in self.laws]),
                       {"long_name": "intra-cluster correlation of D = n01 - n10 the law implies", "units": "1"}),
             "implied_difference": ("law", np.array([law.implied_difference() for law in self.laws]),
                                    {"long_name": "trial-weighted difference the law implies", "units": "1"}),
             "implied_discordance": ("law", np.array([law.implied_discordance() for law in self.laws]),
                                     {"long_name": "discordance the law implies", "units": "1"})},
            coords={"law": np.arange(len(self.laws)), "method": labels,
                    "law_family": ("law", [law_family(law) for law in self.laws]),
                    "law_kind": ("law", [law.kind for law in self.laws]),
                    "law_label": ("law", [law.label for law in self.laws]),
                    "law_key": ("law", [law.key for law in self.laws]),
                    "law_json": ("law", [json.dumps(law.model_dump(mode="json"), sort_keys=True)
                                         for law in self.laws])})
        ds.attrs = make_attrs("robustness", title=f"false-pass rates outside the Dirichlet-multinomial model at "
                                                  f"K={self.design['clusters']}, M={self.design['trials']}",
                              spec_json=json.dumps(self.inputs, sort_keys=True), methods=self.methods, seed=self.seed,
                              **{k: self.design[k] for k in ("clusters", "trials", "margin", "alpha", "rho_max",
                                                             "threshold", "mc_confidence")},
                              replications=self.replications, run_seconds=self.seconds)
        return describe(ds)


def _methods(methods) -> tuple[tuple[MethodRef, ...], list]:
    refs = as_method_refs([methods] if isinstance(methods, str) else list(methods))
    if not refs:
        raise ValueError("give at least one method")
    if len({r.key for r in refs}) != len(refs):
        raise ValueError(f"duplicate methods: {[r.key for r in refs]}")
    resolved = [r.resolve("fixed") for r in refs]
    for m in resolved:
        if not is_difference(m.estimand):
            raise ValueError(f"method {m.label!r} targets the {m.estimand.value} estimand; these laws sit on the "
                             "null boundary of the difference (trial- or cluster-weighted)")
    return refs, resolved


def _check_laws(laws: Sequence[RobustLaw], clusters: int, trials: int, margin: float) -> None:
    if not laws:
        raise ValueError("give at least one law")
    for i, law in enumerate(laws):
        if law.clusters != clusters or abs(law.mean_trials() - trials) > 1e-9 or law.margin != margin:
            raise ValueError(f"laws[{i}] ({law.label}) is not at the design K={clusters}, M={trials}, margin "
                             f"{margin:g} (it has K={law.clusters}, mean M={law.mean_trials():g}, margin {law.margin:g})")
    if len({law.key for law in laws}) != len(laws):
        raise ValueError("a law is listed twice")


def robustness(methods, clusters: int, trials: int, margin: float, *, alpha: float = 0.025, rho_max: float = 0.1,
               laws: Sequence[RobustLaw] | None = None, families: Sequence[str] = FAMILIES,
               baseline: float = 0.9, replications: int = DEFAULT_REPLICATIONS, seed: int = DEFAULT_SEED,
               mc_confidence: float = 0.95, allowed_excess: float = ALLOWED_EXCESS, chunk: int = DEFAULT_CHUNK,
               executor=None, progress: Callable[[str], None] | None = None) -> RobustnessReport:
    """The false-pass rate of ``methods`` (fixed-sample; names such as ``cluster_t`` or
    ``clustered_score@alpha=0.0200482``) at design ``(clusters, trials, margin, alpha)`` under
    ``laws`` (default: ``robust_grid.default_laws`` of ``families`` at ``rho_max`` and
    ``baseline``), ``replications`` per law.  ``executor``: ``studies.engine.executor``
    (serial by default; the same report on every backend)."""
    from studies.datasets import method_identity
    from studies.engine.executor import as_executor

    t0 = time.perf_counter()
    if replications < 1 or chunk < 1:
        raise ValueError(f"replications and chunk must be >= 1, got {replications}, {chunk}")
    if not 0.0 < alpha < 0.5 or not 0.5 <= mc_confidence < 1.0 or not 0.0 <= rho_max < 1.0:
        raise ValueError(f"need 0 < alpha < 0.5, 0.5 <= mc_confidence < 1 and 0 <= rho_max < 1, got alpha {alpha}, "
                         f"mc_confidence {mc_confidence}, rho_max {rho_max}")
    refs, resolved = _methods(methods)
    default = laws is None
    laws = list(default_laws(clusters, trials, margin, rho_max, tuple(families), baseline) if default else laws)
    _check_laws(laws, clusters, trials, margin)
    say = progress or (lambda _: None)
    tasks = [(i, s, min(s + chunk, replications)) for i in range(len(laws)) for s in range(0, replications, chunk)]
    payloads = [(laws[i].model_dump(mode="json"), refs, float(margin), float(alpha), int(seed), s, e)
                for i, s, e in tasks]
    counts = [[[0, 0] for _ in refs] for _ in laws]
    left = [sum(1 for t in tasks if t[0] == i) for i in range(len(laws))]
    ex, owned = as_executor(executor)
    try:
        for t, res in ex.imap(law_counts, payloads):
            i = tasks[t][0]
            for j, (p, inc) in enumerate(res):
                counts[i][j][0] += p
                counts[i][j][1] += inc
            left[i] -= 1
            if left[i] == 0:
                rates = ", ".join(f"{r.key} {c[0] / replications:.4f}" for r, c in zip(refs, counts[i]))
                say(f"law {sum(1 for x in left if x == 0)}/{len(laws)} ({laws[i].label}): {rates}")
    finally:
        if owned:
            ex.close()
    threshold = allowed_excess * alpha
    rows = tuple(RobustnessRow(law, r.key, replications, c[0], c[1], mc_confidence, threshold, rho_max, alpha)
                 for law, cs in zip(laws, counts) for r, c in zip(refs, cs))
    design = {"clusters": clusters, "trials": trials, "margin": margin, "alpha": alpha, "rho_max": rho_max,
              "baseline": baseline, "threshold": threshold, "allowed_excess": allowed_excess,
              "mc_confidence": mc_confidence}
    # the default grid is named, not listed (each row and the dataset's law_json carry the laws)
    grid = {"default_grid": list(families)} if default else [law.model_dump(mode="json") for law in laws]
    inputs = {"methods": [r.model_dump(mode="json") for r in refs], "design": design, "replications": replications,
              "seed": seed, "laws": grid}
    return RobustnessReport(design, tuple(method_identity(m, r.key) for m, r in zip(resolved, refs)), tuple(laws),
                            rows, int(seed), int(replications), time.perf_counter() - t0, inputs)


def robustness_estimate(methods, clusters: int, trials: int, margin: float, *, alpha: float = 0.025,
                        rho_max: float = 0.1, laws: Sequence[RobustLaw] | None = None,
                        families: Sequence[str] = FAMILIES, baseline: float = 0.9,
                        replications: int = DEFAULT_REPLICATIONS, seed: int = DEFAULT_SEED, workers: int = 1):
    """Wall seconds of :func:`robustness` (``studies.engine.cost``): a pilot of the real work
    on the first law of each kind (samplers differ in cost, the methods do not), ``t(R) = a +
    b R`` per kind, summed over the laws and divided by the workers.  A design of over
    ``PILOT_DIRECT_PAIRS`` pairs is piloted on copies of the law with fewer clusters
    (``studies.engine.cost.pilot_model``): at 10^6 x 100 a full-size pilot ran 32 s only to refuse."""
    from studies.engine.cost import TimeEstimate, cut_design, pilot_model

    refs, _ = _methods(methods)
    laws = list(default_laws(clusters, trials, margin, rho_max, tuple(families), baseline) if laws is None else laws)
    _check_laws(laws, clusters, trials, margin)
    models = {}
    total = 0.0
    pairs = clusters * trials
    for law in laws:
        kind = (law.kind, law_family(law))
        if kind not in models:
            def make(target, law=law):
                # fewer clusters only (trials are at most 10^4, so 2 clusters are within the
                # pilot's largest step); a law's cost grows with its clusters, linearly
                small = law.model_copy(update={"clusters": cut_design(clusters, trials, target)[0]})
                dumped = small.model_dump(mode="json")
                return (lambda r: law_counts(dumped, refs, margin, alpha, seed, 0, r)), small.clusters * trials

            models[kind] = pilot_model(make, pairs)
        total += models[kind].seconds(pairs, replications, math.ceil(replications / DEFAULT_CHUNK))
    return TimeEstimate(total / max(workers, 1), total / max(workers, 1), workers)


__all__ = ["ALLOWED_EXCESS", "DEFAULT_REPLICATIONS", "DEFAULT_SEED", "FAILS", "HOLDS", "RobustnessReport",
           "RobustnessRow", "UNDETERMINED", "law_counts", "robustness", "robustness_estimate", "verdict"]
