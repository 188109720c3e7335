"""``check_method``: the conformance check every decision method passes (in the manner of
scikit-learn's ``check_estimator``).

A team's plug-in runs it before it is measured or used by the evidence path::

    from methods import check_method
    report = check_method(METHOD)        # raises MethodCheckError naming the first failure
    report.passed                        # the checks that ran, by name

Checks (fixed-sample methods; sequential ones are run at a two-look schedule):

``protocol``      a ``DecisionMethod`` with a name, version, citation, summary and one of the
                  three estimands; ``kind`` fixed or sequential.
``status codes``  every status is pass / fail / inconclusive (and stop-for-harm for
                  sequential rules); an inconclusive replication has NaN bounds; otherwise
                  ``lower <= upper``; passes are exactly ``lower >= -margin``.
``edge cases``    all pass, all fail, no discordant pairs, one cluster, an empty cluster, a
                  table of only empty clusters: no exception and valid codes.
``analyze``       ``analyze`` of each replication equals row ``r`` of one ``batch`` call; and a
                  row's result does not depend on the other rows of the batch.
``decide``        the protocol's dispatch (``decide``) returns what ``batch`` returns.
``estimand``      the mean estimate over simulated experiments of a scenario whose three
                  estimands differ is within 5 MC SE plus 0.01 of the declared estimand's true
                  value (``simlab.estimands.true_value``) -- so at least 0.1 - tolerance away
                  from the other difference; skipped for methods without point estimates.

A judge-corrected method (``methods.judged``: it also reads calibration counts) is given
calibration sets with every table: for the edge cases a fixed pair of sets, for the
simulated checks those the simulator draws beside the tables of the same scenario with
judge label noise and a calibration set of ``CALIBRATION_ITEMS`` items per arm -- so its
estimand check also checks that the correction recovers the *true* difference.
``identity``      the identity is a ``sha256:`` digest, the same when computed again, and
                  changes with the method's version and options.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from methods.judged import needs_calibration
from methods.protocol import FAIL, HARM, INCONCLUSIVE, PASS, DecisionMethod, Estimand

SEED = 20261201
MARGIN = 0.1
ALPHA = 0.025
CALIBRATION_ITEMS = 1000
EDGE_CALIBRATION = ((90, 10, 15, 85), (88, 12, 10, 90))   # (human, judge) counts of the two arms' sets


class MethodCheckError(AssertionError):
    """A method failed a conformance check: ``check`` names which."""

    def __init__(self, check: str, message: str):
        super().__init__(f"{check}: {message}")
        self.check = check


@dataclass
class CheckReport:
    method: str
    passed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _fail(check: str, message: str):
    raise MethodCheckError(check, message)


def _edge_tables(K: int = 6) -> dict[str, np.ndarray]:
    m = 3
    out = {"all pass": np.tile([m, 0, 0, 0], (K, 1)), "all fail": np.tile([0, 0, 0, m], (K, 1)),
           "no discordant pairs": np.tile([2, 0, 0, 1], (K, 1)), "every pair a loss": np.tile([0, m, 0, 0], (K, 1)),
           "one cluster": np.array([[1, 1, 0, 1]])}
    empty = np.tile([2, 1, 0, 0], (K, 1))
    empty[2] = 0
    out["an empty cluster"] = empty
    out["only empty clusters"] = np.zeros((K, 4), np.int64)
    return {k: v.astype(np.int32)[None, :, :] for k, v in out.items()}


def _run(method, tables: np.ndarray, margin: float, calibration: np.ndarray | None = None):
    schedule = _schedule(method, tables.shape[1])
    tables = np.ascontiguousarray(tables, np.int32)
    if needs_calibration(method):
        if calibration is None:
            calibration = np.tile(np.asarray(EDGE_CALIBRATION, np.int32), (tables.shape[0], 1, 1))
        return method.decide(tables, margin, _alpha(method), schedule, calibration=calibration)
    return method.decide(tables, margin, _alpha(method), schedule)


def _alpha(method) -> float:
    return 0.05 if method.sequential else ALPHA


def _schedule(method, K: int):
    if not method.sequential:
        return None
    from methods.sequential.base import LookSchedule
    if "clusters" in method.units:
        return LookSchedule.equally_spaced(min(2, K), K)
    return LookSchedule(looks=(1,), unit="trials")


def _lower(res) -> np.ndarray:
    return res.bound if hasattr(res, "bound") else res.lower


def _check_codes(method, res, margin: float, where: str) -> None:
    allowed = {PASS, FAIL, INCONCLUSIVE} if not method.sequential else {PASS, FAIL, HARM}
    codes = set(np.unique(res.status).tolist())
    if not codes <= allowed:
        _fail("status codes", f"{where}: codes {sorted(codes - allowed)} outside {sorted(allowed)}")
    if method.sequential:
        return
    inc = res.status == INCONCLUSIVE
    if np.any(~np.isnan(res.lower[inc])):
        _fail("status codes", f"{where}: an inconclusive replication has a lower bound")
    ok = ~inc
    lo, up = res.lower[ok], res.upper[ok]
    if np.any(np.isnan(lo)) or np.any(lo > up):
        _fail("status codes", f"{where}: a conclusive replication has a NaN bound or lower > upper")
    if np.any((res.status[ok] == PASS) != (lo >= -margin)):
        _fail("status codes", f"{where}: pass is not exactly lower >= -margin")


def _scenario(K: int):
    """Clusters alternating 1 and 3 pairs whose differences have opposite signs: trial-weighted
    -0.1, cluster-weighted 0, loss rate 0.2 (as in tests/studies/test_estimands.py)."""
    from simlab.scenario import ExplicitSizes, PairedScenario
    small, large = (0.5, 0.05, 0.25, 0.2), (0.5, 0.25, 0.05, 0.2)
    return PairedScenario(cells=(0.5, 0.15, 0.15, 0.2), clusters=K, rho=0.2,
                          cluster_size=ExplicitSizes(sizes=(1, 3) * (K // 2)), cluster_cells=(small, large) * (K // 2))


def _judged(scenario):
    """``scenario`` with judge label noise (a lenient candidate judge) and calibration sets."""
    from simlab.scenario import JudgeCalibration, LabelNoise
    noise = LabelNoise(baseline_sensitivity=0.9, baseline_specificity=0.9, candidate_sensitivity=0.95,
                       candidate_specificity=0.8, calibration=JudgeCalibration(items=CALIBRATION_ITEMS))
    return type(scenario).model_validate({**dict(scenario), "label_noise": noise})  # a fresh content key


def _simulated(method, K: int, seed: int, replications: int):
    """``(scenario, tables, calibration or None)`` of the checks that simulate."""
    from simlab.sampling import scenario_calibration, scenario_tables
    sc = _scenario(K)
    if not needs_calibration(method):
        return sc, scenario_tables(sc, seed, 0, replications), None
    sc = _judged(sc)
    return sc, scenario_tables(sc, seed, 0, replications), scenario_calibration(sc, seed, 0, replications)


def check_method(method, *, replications: int = 400, clusters: int = 100, estimand: bool = True) -> CheckReport:
    """Run every check (module docstring) on ``method``; raise :class:`MethodCheckError` at the
    first failure, else return the report.  ``estimand=False`` skips the simulation check
    (for methods too slow to run ``replications`` experiments of ``clusters`` clusters)."""
    report = CheckReport(getattr(method, "name", repr(method)))
    # protocol
    if not isinstance(method, DecisionMethod):
        _fail("protocol", f"{method!r} is not a methods.protocol.DecisionMethod")
    for attr in ("name", "version", "citation", "summary"):
        if not isinstance(getattr(method, attr), str) or not getattr(method, attr):
            _fail("protocol", f"{attr} must be a non-empty string")
    if not isinstance(method.estimand, Estimand):
        _fail("protocol", f"estimand must be a methods.protocol.Estimand, got {method.estimand!r}")
    if method.kind not in ("fixed", "sequential"):
        _fail("protocol", f"kind must be fixed or sequential, got {method.kind!r}")
    report.passed.append("protocol")
    # edge cases
    for where, t in _edge_tables().items():
        try:
            res = _run(method, t, MARGIN)
        except Exception as exc:  # noqa: BLE001 - the check reports any exception by edge case
            _fail("edge cases", f"{where}: {type(exc).__name__}: {exc}")
        _check_codes(method, res, MARGIN, where)
    report.passed.append("edge cases")
    # status codes, analyze and row independence on simulated tables
    _, tables, cal = _simulated(method, 24, SEED, 64)
    res = _run(method, tables, MARGIN, cal)
    _check_codes(method, res, MARGIN, "simulated tables")
    report.passed.append("status codes")
    one_by_one = [_run(method, tables[r:r + 1], MARGIN, None if cal is None else cal[r:r + 1])
                  for r in range(tables.shape[0])]
    if not np.array_equal(np.array([o.status[0] for o in one_by_one]), res.status):
        _fail("analyze", "a row's status depends on the other rows of its batch")
    lows = np.array([_lower(o)[0] for o in one_by_one])
    if not np.array_equal(lows, _lower(res), equal_nan=True):
        _fail("analyze", "a row's bound depends on the other rows of its batch")
    schedule = _schedule(method, tables.shape[1])
    for r in range(0, tables.shape[0], 8):
        if method.sequential:
            a = method.analyze(tables[r], schedule, MARGIN, _alpha(method))
            if a.promoted != (res.status[r] == PASS):
                _fail("analyze", f"replication {r}: analyze says {a.decision}, batch {int(res.status[r])}")
        else:
            a = method.analyze(tables[r], MARGIN, _alpha(method), **({} if cal is None else {"calibration": cal[r]}))
            same = (a.passed == (res.status[r] == PASS)) and (
                (math.isnan(a.lower) and math.isnan(res.lower[r])) or a.lower == res.lower[r])
            if not same:
                _fail("analyze", f"replication {r}: analyze ({a.status}, {a.lower}) differs from batch "
                                 f"({int(res.status[r])}, {res.lower[r]})")
    report.passed.append("analyze")
    direct = method.batch(tables, schedule, MARGIN, _alpha(method)) if method.sequential else \
        method.batch(tables, MARGIN, _alpha(method), **({} if cal is None else {"calibration": cal}))
    if not np.array_equal(direct.status, res.status):
        _fail("decide", "decide() and batch() disagree")
    report.passed.append("decide")
    # estimand against its truth
    if estimand and not method.sequential:
        sc, big, big_cal = _simulated(method, clusters, SEED + 1, replications)
        est = method.batch(big, MARGIN, ALPHA, **({} if big_cal is None else {"calibration": big_cal})).estimate
        est = est[np.isfinite(est)]
        if est.size >= 0.9 * replications:
            truth = method.true_value(sc)
            se = est.std(ddof=1) / math.sqrt(est.size)
            if abs(est.mean() - truth) > 5 * se + 0.01:
                _fail("estimand", f"mean estimate {est.mean():.4f} is not the declared {method.estimand.value} "
                                  f"truth {truth:.4f} (MC SE {se:.4f})")
            report.passed.append("estimand")
        else:
            report.notes.append(f"estimand: only {est.size} of {replications} estimates are finite; not checked")
    # identity
    ident = method.identity
    if not (isinstance(ident.source_sha256, str) and ident.source_sha256.startswith("sha256:")):
        _fail("identity", f"identity digest {ident.source_sha256!r} is not sha256:<hex>")
    again = dataclasses.replace(method)
    if again.identity != ident:
        _fail("identity", "the identity differs when computed again")
    if dataclasses.replace(method, version=method.version + ".check").identity == ident:
        _fail("identity", "the identity does not change with the version")
    if method.options:
        k, v = next(iter(sorted(method.options.items())))
        if dataclasses.replace(method, options={**method.options, k: v + 1.0}).identity == ident:
            _fail("identity", f"the identity does not change with option {k}")
    report.passed.append("identity")
    return report


__all__ = ["CheckReport", "MethodCheckError", "check_method"]
