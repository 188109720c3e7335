"""Methods for judge-labelled outcomes: the fixed-sample protocol with one more input, the
judge's calibration counts.

When a model judge records each trial's pass, the tables hold judge labels, not the truth
(the evidence spine: "the interval measures variation in judge-labelled outcomes").  A
judge-corrected method is also given the judge's human-labelled calibration set(s):

``calibration[R, A, 4]`` (int), ``A = 2`` -- set 0 the baseline arm's, set 1 the
candidate arm's -- or ``A = 1``, one set shared by both arms; a set's counts are indexed
``2 * human_fail + judge_fail`` like a table's cells::

    (human pass & judge pass, human pass & judge fail, human fail & judge pass, human fail & judge fail)

A :class:`JudgeFixedMethod` declares ``inputs = ("tables", "judge_calibration")``
(``needs_calibration``), so ``methods.registry.names`` leaves it out of the loops that run
every method on tables alone, and the engine's one loop (``studies.engine.evaluate``)
hands it the calibration counts it draws beside the tables
(``simlab.sampling.calibration``).  Its kernel writes, besides the protocol's
``lower, upper, estimate, status`` (those of the *corrected* difference), the raw
judge-scale difference and interval and a reason code (:data:`REASONS`) for every
inconclusive replication: an unidentified correction is never a pass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from methods.protocol import (INCONCLUSIVE, STATUS_NAMES, BatchResult, FixedMethod, IntervalResult, as_tables,
                              check_margin, check_tables)

JUDGE_CALIBRATION = "judge_calibration"
ARMS = ("baseline", "candidate")

# reason codes of a judge-corrected kernel (int8): why a replication is inconclusive
OK, NO_TRIALS, FEW_CLUSTERS, SMALL_CALIBRATION, DEGENERATE_CALIBRATION, NOT_IDENTIFIED = range(6)
REASONS = {
    OK: "",
    NO_TRIALS: "no trials",
    FEW_CLUSTERS: "fewer non-empty clusters than the method needs",
    SMALL_CALIBRATION: "a calibration set is smaller than the registered minimum (min_calibration)",
    DEGENERATE_CALIBRATION: "a calibration set has no human-labelled pass or no human-labelled fail, so the "
                            "judge's sensitivity or specificity cannot be estimated",
    NOT_IDENTIFIED: "not identified: estimated sensitivity + specificity <= 1 for an arm's judge",
}
REASON_NAMES = {OK: "ok", NO_TRIALS: "no_trials", FEW_CLUSTERS: "few_clusters", SMALL_CALIBRATION: "small_calibration",
                DEGENERATE_CALIBRATION: "degenerate_calibration", NOT_IDENTIFIED: "not_identified"}


def needs_calibration(method: Any) -> bool:
    """Does ``method`` decide from judge calibration counts as well as tables?"""
    return JUDGE_CALIBRATION in getattr(method, "inputs", ("tables",))


def _set_name(a: int, arms: int) -> str:
    return "shared" if arms == 1 else ARMS[a]


def as_calibration(data: Any) -> np.ndarray:
    """Validate one experiment's calibration counts and return ``int32[1, A, 4]``.

    Accepts ``(4,)`` or ``(1, 4)`` (one set shared by both arms) or ``(2, 4)`` (baseline's
    set, candidate's set).  Negative or non-integer counts are errors naming the set."""
    arr = np.asarray(data)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 4 or arr.shape[0] not in (1, 2):
        raise ValueError("calibration counts must have shape (4,), (1, 4) (a shared set) or (2, 4) (baseline, "
                         "candidate) with columns human pass & judge pass, human pass & judge fail, human fail & "
                         f"judge pass, human fail & judge fail; got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
            raise ValueError(f"calibration counts must be numbers, got dtype {arr.dtype}")
        f = arr.astype(float)
        bad = ~np.isfinite(f).all(axis=1) | (f != np.round(f)).any(axis=1)
        if bad.any():
            a = int(np.argmax(bad))
            raise ValueError(f"calibration set {a} ({_set_name(a, arr.shape[0])}): counts must be whole numbers, "
                             f"got {arr[a].tolist()}")
    for a, row in enumerate(arr):
        if np.any(row < 0):
            raise ValueError(f"calibration set {a} ({_set_name(a, arr.shape[0])}): counts must be >= 0, "
                             f"got {row.tolist()}")
    if arr.max() > np.iinfo(np.int32).max:
        raise ValueError(f"calibration counts exceed {np.iinfo(np.int32).max} (int32)")
    return arr.astype(np.int32)[None, :, :]


def check_calibration(calibration: Any, replications: int) -> np.ndarray:
    """A batch's ``calibration[R, A, 4]`` as contiguous int32, one row per replication of the tables."""
    if calibration is None:
        raise ValueError("this judge-corrected method needs the judge's calibration counts (calibration=...): "
                         "a (2, 4) or (1, 4) array per experiment; a simulated scenario draws them when its "
                         "label_noise declares a calibration set")
    cal = np.asarray(calibration)
    if cal.ndim != 3 or cal.shape[2] != 4 or cal.shape[1] not in (1, 2):
        raise ValueError(f"calibration must have shape (R, A, 4) with A = 1 (shared) or 2 (per arm), got {cal.shape}")
    if cal.shape[0] != replications:
        raise ValueError(f"calibration has {cal.shape[0]} rows but the tables have {replications} replications")
    if not np.issubdtype(cal.dtype, np.integer):
        raise ValueError(f"calibration counts must be integers, got dtype {cal.dtype}")
    if cal.size and cal.min() < 0:
        r, a, _ = np.unravel_index(int(np.argmin(cal)), cal.shape)
        raise ValueError(f"calibration row {r}, set {a} ({_set_name(int(a), cal.shape[1])}): counts must be >= 0, "
                         f"got {cal[r, a].tolist()}")
    return np.ascontiguousarray(cal, dtype=np.int32)


def calibration_rates(calibration: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sensitivity, specificity, items)`` of each set of ``calibration[..., A, 4]`` (NaN
    where a set has no human-labelled pass, resp. fail): for reports, not decisions."""
    c = np.asarray(calibration, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        sens = c[..., 0] / (c[..., 0] + c[..., 1])
        spec = c[..., 3] / (c[..., 2] + c[..., 3])
    return sens, spec, c.sum(axis=-1).astype(np.int64)


@dataclass(frozen=True)
class JudgeBatchResult(BatchResult):
    """A judge-corrected batch: the protocol's fields are those of the corrected difference;
    ``raw_estimate``, ``raw_lower``, ``raw_upper`` the judge-scale difference and its interval
    (NaN where there are too few clusters); ``reason`` the int8 code (:data:`REASONS`) of
    each replication (``OK`` for a conclusive one)."""
    raw_estimate: np.ndarray
    raw_lower: np.ndarray
    raw_upper: np.ndarray
    reason: np.ndarray


@dataclass(frozen=True)
class JudgeIntervalResult(IntervalResult):
    """One experiment's judge-corrected comparison: the corrected difference (the protocol's
    fields), the raw judge-scale difference and interval, the judge's estimated sensitivity
    and specificity per calibration set (``baseline, candidate`` or ``shared``), the sets'
    sizes and, when inconclusive, why."""
    raw_estimate: float
    raw_lower: float
    raw_upper: float
    reason: str
    calibration_sets: tuple[str, ...]
    sensitivity: tuple[float, ...]
    specificity: tuple[float, ...]
    calibration_items: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        def fin(x):
            return None if (isinstance(x, float) and not math.isfinite(x)) else x
        return {**super().as_dict(), "raw_estimate": fin(self.raw_estimate), "raw_lower": fin(self.raw_lower),
                "raw_upper": fin(self.raw_upper), "reason": self.reason, "calibration_sets": list(self.calibration_sets),
                "sensitivity": [fin(x) for x in self.sensitivity], "specificity": [fin(x) for x in self.specificity],
                "calibration_items": list(self.calibration_items)}


@dataclass(frozen=True, kw_only=True)
class JudgeFixedMethod(FixedMethod):
    """A fixed-sample method that also reads the judge's calibration counts.

    ``kernel(tables, calibration, margin, consts, lower, upper, estimate, status,
    raw_estimate, raw_lower, raw_upper, reason)`` writes one row per replication;
    ``prepare`` as for every fixed method."""
    inputs = ("tables", JUDGE_CALIBRATION)
    DECISION_PATH = ("decide", "batch", "consts", "analyze")

    def batch(self, tables: np.ndarray, margin: float, alpha: float = 0.025, *,
              calibration: np.ndarray | None = None) -> JudgeBatchResult:
        """Decide every replication of ``tables[R, K, 4]`` with its ``calibration[R, A, 4]``."""
        check_margin(margin)
        tables = check_tables(tables)
        R = tables.shape[0]
        cal = check_calibration(calibration, R)
        consts = self.consts(alpha, margin, tables)
        out = [np.empty(R, np.float64) for _ in range(3)]
        status = np.empty(R, np.int8)
        raw = [np.empty(R, np.float64) for _ in range(3)]
        reason = np.empty(R, np.int8)
        self.kernel(tables, cal, float(margin), consts, out[0], out[1], out[2], status, raw[0], raw[1], raw[2],
                    reason)
        return JudgeBatchResult(self.name, out[0], out[1], out[2], status, raw[0], raw[1], raw[2], reason)

    def decide(self, tables: np.ndarray, margin: float, alpha: float, schedule: Any = None, *,
               calibration: np.ndarray | None = None) -> JudgeBatchResult:
        """The protocol's one entry for a batch (``calibration`` is required)."""
        if schedule is not None:
            raise ValueError(f"method {self.name!r} is fixed-sample: it takes no look schedule")
        return self.batch(tables, margin, alpha, calibration=calibration)

    def analyze(self, table: Any, margin: float, alpha: float = 0.025, *,
                calibration: Any = None) -> JudgeIntervalResult:
        """One experiment's ``(K, 4)`` judge-labelled tables and its ``(2, 4)`` or ``(1, 4)``
        calibration counts through the same kernel (R = 1)."""
        t = as_tables(table)
        if calibration is None:
            check_calibration(None, 1)
        cal = as_calibration(calibration)
        r = self.batch(t, margin, alpha, calibration=cal)
        n = t[0].astype(np.int64).sum(axis=1)
        sens, spec, items = calibration_rates(cal[0])
        code = int(r.reason[0])
        sets = ("shared",) if cal.shape[1] == 1 else ARMS
        return JudgeIntervalResult(self.name, self.estimand.value, float(r.estimate[0]), float(r.lower[0]),
                                   float(r.upper[0]), STATUS_NAMES[int(r.status[0])], float(alpha), float(margin),
                                   int(np.count_nonzero(n)), int(n.sum()), float(r.raw_estimate[0]),
                                   float(r.raw_lower[0]), float(r.raw_upper[0]),
                                   REASONS[code] if int(r.status[0]) == INCONCLUSIVE else "", sets,
                                   tuple(float(x) for x in sens), tuple(float(x) for x in spec),
                                   tuple(int(x) for x in items))


__all__ = ["ARMS", "DEGENERATE_CALIBRATION", "FEW_CLUSTERS", "JUDGE_CALIBRATION", "JudgeBatchResult",
           "JudgeFixedMethod", "JudgeIntervalResult", "NOT_IDENTIFIED", "NO_TRIALS", "OK", "REASONS", "REASON_NAMES",
           "SMALL_CALIBRATION", "as_calibration", "calibration_rates", "check_calibration", "needs_calibration"]
