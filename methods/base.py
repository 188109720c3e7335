"""The protocol every decision method keeps, and the result objects it returns.

A fixed-sample method is a small module in ``methods/fixed/`` that defines ``METHOD``, a
:class:`FixedMethod`.  Its numba batch kernel maps ``tables[R, K, 4]`` (DESIGN.md order
``n11, n10, n01, n00``; a cluster with zero trials is missing) to per-replication
``lower, upper, estimate, status``.  ``analyze`` runs the *same* kernel with ``R = 1``, so
what a study qualified is exactly what the evidence path runs.

Decision rule (non-inferiority, DESIGN.md): ``pass`` iff ``lower >= -margin`` (inclusive);
``inconclusive`` when the method cannot form an interval (no trials, too few clusters);
a pass never carries a NaN bound.
"""
from __future__ import annotations

import hashlib
import inspect
import math
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy import stats

FAIL, PASS, INCONCLUSIVE = 0, 1, 2
STATUS_NAMES = {FAIL: "fail", PASS: "pass", INCONCLUSIVE: "inconclusive"}


class Estimand(str, Enum):
    """What a method's estimate targets (DESIGN.md "Data conventions")."""
    TRIAL = "trial_weighted"      # sum(n01 - n10) / sum(n)
    CLUSTER = "cluster_weighted"  # mean over clusters of (n01 - n10) / n


def one_sided_alpha(confidence: float) -> float:
    """Nominal one-sided level of a two-sided interval: (1 - confidence) / 2."""
    check_confidence(confidence)
    return (1.0 - confidence) / 2.0


def check_confidence(confidence: float) -> None:
    if not (isinstance(confidence, (float, int)) and 0.5 <= confidence < 1.0):
        raise ValueError(f"confidence must lie in [0.5, 1), got {confidence!r}")


def check_margin(margin: float) -> None:
    if not (isinstance(margin, (float, int)) and math.isfinite(margin) and 0.0 < margin < 1.0):
        raise ValueError(f"margin must lie in (0, 1), got {margin!r}")


def z_value(confidence: float) -> float:
    """Two-sided normal critical value z_{1 - alpha/2}."""
    return float(stats.norm.ppf(1.0 - one_sided_alpha(confidence)))


def as_tables(data: Any) -> np.ndarray:
    """Validate one experiment's per-cluster tables and return int32[1, K, 4].

    Accepts a ``(4,)`` table (one cluster) or a ``(K, 4)`` array.  Negative or
    non-integer counts are errors naming the row."""
    arr = np.asarray(data)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"a table must have shape (K, 4) with columns n11, n10, n01, n00; got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError("a table needs at least one cluster row")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr.astype(float))) or np.any(arr != np.round(arr)):
            bad = int(np.argmax(~np.isfinite(arr.astype(float)).all(axis=1) | (arr != np.round(arr)).any(axis=1)))
            raise ValueError(f"cluster row {bad}: counts must be whole numbers, got {arr[bad].tolist()}")
    for i, row in enumerate(arr):
        if np.any(row < 0):
            raise ValueError(f"cluster row {i}: counts must be >= 0, got {row.tolist()}")
    if arr.max() > np.iinfo(np.int32).max:
        raise ValueError("counts exceed int32")
    return arr.astype(np.int32)[None, :, :]


@dataclass(frozen=True)
class MethodIdentity:
    """Implementation identity: recorded in every dataset and qualification record."""
    name: str
    version: str
    source_sha256: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "source_sha256": self.source_sha256}


@dataclass(frozen=True)
class BatchResult:
    """Per-replication output of a batch kernel (arrays of length R)."""
    method: str
    lower: np.ndarray
    upper: np.ndarray
    estimate: np.ndarray
    status: np.ndarray

    def pass_count(self) -> int:
        return int(np.count_nonzero(self.status == PASS))


@dataclass(frozen=True)
class IntervalResult:
    """One experiment's comparison (in the manner of scipy.stats result objects)."""
    method: str
    estimand: str
    estimate: float
    lower: float
    upper: float
    status: str
    confidence: float
    margin: float
    clusters: int
    trials: int

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def as_dict(self) -> dict[str, Any]:
        def num(x):
            return None if (isinstance(x, float) and not math.isfinite(x)) else x
        return {"method": self.method, "estimand": self.estimand, "estimate": num(self.estimate),
                "lower": num(self.lower), "upper": num(self.upper), "status": self.status,
                "passed": self.passed, "confidence": self.confidence, "margin": self.margin,
                "clusters": self.clusters, "trials": self.trials}


def _default_prepare(method: "FixedMethod", confidence: float, tables: np.ndarray) -> np.ndarray:
    return np.array([z_value(confidence)], dtype=np.float64)


@dataclass(frozen=True)
class FixedMethod:
    """A fixed-sample non-inferiority method.

    ``kernel(tables, margin, consts, lower, upper, estimate, status)`` is numba-compiled
    and writes one row per replication.  ``prepare(method, confidence, tables)`` turns the
    confidence level and method options into the float64 ``consts`` the kernel reads
    (critical values, lookup tables); it runs once per batch, never per replication.
    """
    name: str
    version: str
    estimand: Estimand
    citation: str
    summary: str
    kernel: Callable
    prepare: Callable = _default_prepare
    options: dict[str, float] = field(default_factory=dict)
    source_files: tuple[str, ...] = ()
    kind: str = "fixed"

    def with_options(self, **options: float) -> "FixedMethod":
        unknown = set(options) - set(self.options)
        if unknown:
            raise ValueError(f"method {self.name!r} has no option(s) {sorted(unknown)}; "
                             f"known: {sorted(self.options)}")
        return FixedMethod(**{**self.__dict__, "options": {**self.options, **options}})

    # -- identity ------------------------------------------------------------
    @property
    def identity(self) -> MethodIdentity:
        h = hashlib.sha256()
        h.update(f"{self.name}|{self.version}|{sorted(self.options.items())}".encode())
        for path in sorted(self.source_files):
            h.update(Path(path).read_bytes())
        return MethodIdentity(self.name, self.version, h.hexdigest())

    # -- evaluation ----------------------------------------------------------
    def batch(self, tables: np.ndarray, margin: float, confidence: float = 0.95) -> BatchResult:
        check_margin(margin)
        check_confidence(confidence)
        if tables.ndim != 3 or tables.shape[2] != 4:
            raise ValueError(f"tables must have shape (R, K, 4), got {tables.shape}")
        if tables.dtype != np.int32:
            tables = tables.astype(np.int32)
        R = tables.shape[0]
        lower = np.empty(R, np.float64)
        upper = np.empty(R, np.float64)
        estimate = np.empty(R, np.float64)
        status = np.empty(R, np.int8)
        consts = np.ascontiguousarray(self.prepare(self, confidence, tables), dtype=np.float64)
        self.kernel(tables, float(margin), consts, lower, upper, estimate, status)
        return BatchResult(self.name, lower, upper, estimate, status)

    def analyze(self, table: Any, margin: float, confidence: float = 0.95) -> IntervalResult:
        t = as_tables(table)
        r = self.batch(t, margin, confidence)
        n = t[0].sum(axis=1)
        return IntervalResult(self.name, self.estimand.value, float(r.estimate[0]), float(r.lower[0]),
                              float(r.upper[0]), STATUS_NAMES[int(r.status[0])], float(confidence),
                              float(margin), int(np.count_nonzero(n)), int(n.sum()))


def source_files_of(*objs: Any) -> tuple[str, ...]:
    """Source files that define a method (its module plus shared kernels it uses)."""
    return tuple(sorted({inspect.getsourcefile(getattr(o, "py_func", o)) for o in objs}))
