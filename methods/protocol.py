"""The one protocol every decision method keeps, fixed-sample or sequential.

A decision method answers the non-inferiority question: with margin ``m > 0``
and null ``H0: Delta <= -m``, it *passes* (promotes) when its lower confidence bound
``L >= -m`` (inclusive).  A fixed-sample method is the one-look case: it looks once, at
all the data.  Every method shares

* **one level convention**: ``alpha``, the one-sided level of the non-inferiority test
  (the false-pass rate the design targets).  A method that reports a two-sided interval
  reports the ``1 - 2 alpha`` interval, whose lower end is the level-``alpha`` bound;
* **one set of status codes** (:class:`Status`): ``FAIL`` (0; "no promotion" / "continue"
  at a sequential look), ``PASS`` (1; "promote"), ``INCONCLUSIVE`` (2: no interval could
  be formed), ``HARM`` (3: a sequential rule stopped for harm);
* **one identity and options implementation** (:class:`DecisionMethod`): name, version,
  the estimand it targets, a citation, options, and an implementation identity that
  hashes its version, options and source files (recorded in every dataset and
  qualification record).

Subclasses add the evaluation: :class:`FixedMethod` here (a batch kernel over
``tables[R, K, 4]``) and ``methods.sequential.base.SequentialMethod`` (per-look
evaluation plus the common stopping rule).  ``analyze`` runs the *same* kernel with
``R = 1``, so what a study qualified is exactly what the evidence path runs.

Writing your own method: see ``methods/adapters.py`` (a vectorised numpy function) and
``methods/fixed/paired_wald.py`` (a numba kernel); register it through the
``simlab.methods`` entry point or name it as ``package.module:ATTR``.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from enum import IntEnum
from typing import Any, Callable

import numpy as np

from simlab.estimands import Estimand, true_value
from simlab.hashing import PREFIX

from methods.conventions import CALIBRATED, OptionRange, check_alpha, check_margin, option_values


class Status(IntEnum):
    """Per-replication outcome codes shared by every kernel (int8 arrays)."""
    FAIL = 0
    PASS = 1
    INCONCLUSIVE = 2
    HARM = 3


FAIL, PASS, INCONCLUSIVE, HARM = (int(s) for s in Status)
STATUS_NAMES = {FAIL: "fail", PASS: "pass", INCONCLUSIVE: "inconclusive", HARM: "stop_for_harm"}


# ---------------------------------------------------------------- levels and inputs
def z_value(alpha: float) -> float:
    """Normal critical value ``z_{1 - alpha}`` of the one-sided level ``alpha``."""
    from scipy import special  # ndtri is norm.ppf's own kernel: the same bits, without scipy.stats' 0.6-1 s import

    check_alpha(alpha)
    return float(special.ndtri(1.0 - alpha))


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
        if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
            raise ValueError(f"counts must be numbers, got dtype {arr.dtype}")
        f = arr.astype(float)
        bad_rows = ~np.isfinite(f).all(axis=1) | (f != np.round(f)).any(axis=1)
        if bad_rows.any():
            bad = int(np.argmax(bad_rows))
            raise ValueError(f"cluster row {bad}: counts must be whole numbers, got {arr[bad].tolist()}")
    for i, row in enumerate(arr):
        if np.any(row < 0):
            raise ValueError(f"cluster row {i}: counts must be >= 0, got {row.tolist()}")
    if arr.max() > np.iinfo(np.int32).max:
        raise ValueError(f"counts exceed {np.iinfo(np.int32).max} (int32)")
    return arr.astype(np.int32)[None, :, :]


def check_tables(tables: np.ndarray) -> np.ndarray:
    """A batch ``tables[R, K, 4]`` as contiguous int32 (the kernels' input)."""
    if tables.ndim != 3 or tables.shape[2] != 4:
        raise ValueError(f"tables must have shape (R, K, 4), got {tables.shape}")
    return np.ascontiguousarray(tables, dtype=np.int32)


# ---------------------------------------------------------------- identity and results
@dataclass(frozen=True)
class MethodIdentity:
    """Implementation identity: recorded in every dataset and qualification record."""
    name: str
    version: str
    source_sha256: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "source_sha256": self.source_sha256}


def _finite_or_none(x: Any) -> Any:
    return None if (isinstance(x, float) and not math.isfinite(x)) else x


@dataclass(frozen=True)
class BatchResult:
    """Per-replication output of a fixed-sample batch kernel.

    Attributes
    ----------
    method : str
        The method's name.
    lower, upper, estimate : ndarray of float64, shape (R,)
        The ``1 - 2 alpha`` interval and the point estimate (NaN when inconclusive).
    status : ndarray of int8, shape (R,)
        :class:`Status` codes.
    """
    method: str
    lower: np.ndarray
    upper: np.ndarray
    estimate: np.ndarray
    status: np.ndarray

    def pass_count(self) -> int:
        return int(np.count_nonzero(self.status == PASS))


@dataclass(frozen=True)
class IntervalResult:
    """One experiment's fixed-sample comparison (in the manner of scipy.stats results).

    Attributes
    ----------
    method, estimand : str
        The method and the estimand its estimate targets.
    estimate, lower, upper : float
        Point estimate and the ``1 - 2 alpha`` interval (NaN when inconclusive).
    status : str
        ``pass``, ``fail`` or ``inconclusive``.
    alpha, margin : float
        The one-sided level and the non-inferiority margin used.
    clusters, trials : int
        Non-empty clusters and trial pairs analysed.
    """
    method: str
    estimand: str
    estimate: float
    lower: float
    upper: float
    status: str
    alpha: float
    margin: float
    clusters: int
    trials: int

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def confidence_interval(self) -> tuple[float, float]:
        """``(low, high)``: the ``1 - 2 alpha`` interval for the estimand."""
        return self.lower, self.upper

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "estimand": self.estimand, "estimate": _finite_or_none(self.estimate),
                "lower": _finite_or_none(self.lower), "upper": _finite_or_none(self.upper),
                "status": self.status, "passed": self.passed, "alpha": self.alpha, "margin": self.margin,
                "clusters": self.clusters, "trials": self.trials}


@dataclass(frozen=True)
class Theorem:
    """A finite-sample guarantee a method rests on: the statement, what it assumes, and where
    it is proved (``methods.qualification.theorem`` turns it into a record that covers every
    design its assumptions hold for)."""
    statement: str
    assumptions: tuple[str, ...]
    citation: str


# ---------------------------------------------------------------- the protocol
@dataclass(frozen=True, kw_only=True)
class DecisionMethod:
    """What every decision method is: name, version, estimand, citation, options, identity.

    ``options`` are the method's numeric settings (defaults); ``choices`` names values of an
    option (``spending="pocock"``); ``ranges`` bounds an option's values (``OptionRange``).
    ``inner`` is a wrapped fixed-sample method, if any: its identity is part of this method's
    identity.  The identity hashes the code the method's
    decisions run through (``methods.identity``): every callable field (kernels,
    ``prepare``...) and the protocol methods named in ``DECISION_PATH``, with all they reach."""
    name: str
    version: str
    estimand: Estimand
    citation: str
    summary: str
    options: dict[str, float] = field(default_factory=dict)
    choices: dict[str, dict[str, float]] = field(default_factory=dict)
    ranges: dict[str, OptionRange] = field(default_factory=dict)
    inner: Any = None
    origin: str | None = None  # "package.module:ATTR" when found by reference (not hashed)
    cost: Callable | None = None  # (method, tables, linear) -> AnalysisCost of one analysis (methods.analysis_cost)
    nominal_alpha: float | None = None  # a calibrated method's nominal level (``calibrated``)
    theorem: Theorem | None = None  # a finite-sample guarantee the method rests on, if any

    kind = "abstract"  # "fixed" or "sequential": where the mathematics differs
    inputs = ("tables",)  # the data a decision needs: tables, and "judge_calibration" (methods.judged)
    DECISION_PATH = ()  # protocol methods that run the kernels (hashed into the identity)

    def true_value(self, scenario) -> float:
        """True value in ``scenario`` of the estimand this method targets
        (``simlab.estimands.true_value``)."""
        try:
            return true_value(scenario, self.estimand)
        except ValueError as exc:
            raise ValueError(f"method {self.name!r}: {exc}") from None

    @property
    def sequential(self) -> bool:
        return self.kind == "sequential"

    @property
    def label(self) -> str:
        """Display name: ``repeated_fixed[binomial_loss]`` for wrappers, ``name@alpha=0.0204``
        for a calibrated method."""
        base = f"{self.name}[{self.inner.name}]" if self.inner is not None else self.name
        if self.nominal_alpha is None:
            return base
        short = f"{self.nominal_alpha:.6g}"    # in full where 6 digits would name another level
        return f"{base}{CALIBRATED}{short if float(short) == self.nominal_alpha else repr(self.nominal_alpha)}"

    def level(self, alpha: float) -> float:
        """The one-sided level the kernels run at: ``alpha``, or a calibrated method's nominal level."""
        return alpha if self.nominal_alpha is None else self.nominal_alpha

    def calibrated(self, nominal_alpha: float) -> "DecisionMethod":
        """The method run at nominal one-sided level ``nominal_alpha`` whatever level it is asked
        for: a *calibrated method* (``studies.qualify.calibrate`` chooses the level at a design
        so that the worst-case false-pass rate there is at most the target; its certificate
        says for which design that holds).  Its label and identity carry the level."""
        check_alpha(nominal_alpha)
        return replace(self, nominal_alpha=float(nominal_alpha))

    def with_options(self, **options: Any) -> "DecisionMethod":
        """A new method object with options changed; an option with named ``choices`` also
        accepts the name."""
        values = option_values(self.name, self.options, self.choices, options, self.ranges)
        return replace(self, options={**self.options, **values})

    def decision_roots(self) -> list[Any]:
        """What the identity hashes from: the callable fields and the ``DECISION_PATH`` methods."""
        roots = [getattr(self, f.name) for f in fields(self) if f.name not in ("inner", "origin", "cost")]
        roots = [r for r in roots if callable(r)]
        return roots + [getattr(type(self), name) for name in self.DECISION_PATH]

    @cached_property
    def identity(self) -> MethodIdentity:
        """Name, version and the sha256 of name, version, options, the decision code
        (``methods.identity.code_sha256``) and a wrapped method's identity."""
        from methods.identity import code_sha256

        h = hashlib.sha256()
        h.update(f"{self.name}|{self.version}|{self.kind}|{sorted(self.options.items())}|{self.nominal_alpha!r}".encode())
        h.update(code_sha256(self.decision_roots()).encode())
        if self.inner is not None:
            h.update(self.inner.identity.source_sha256.encode())
        return MethodIdentity(self.label, self.version, PREFIX + h.hexdigest())


def _default_prepare(method: "FixedMethod", alpha: float, margin: float, tables: np.ndarray) -> np.ndarray:
    return np.array([z_value(alpha)], dtype=np.float64)


@dataclass(frozen=True, kw_only=True)
class FixedMethod(DecisionMethod):
    """A fixed-sample method: the one-look case of the protocol.

    ``kernel(tables, margin, consts, lower, upper, estimate, status)`` (numba-compiled, or
    any callable filling the arrays) writes one row per replication.  ``prepare(method,
    alpha, margin, tables)`` -- the order of a sequential method's ``prepare(method, alpha,
    margin, schedule)`` -- turns the level, the margin the batch is decided at and the options
    into the float64 ``consts`` the kernel reads (critical values, lookup tables); it runs once
    per batch, never per replication.  ``alpha`` is the level the kernel runs at
    (:meth:`DecisionMethod.level`: a calibrated method's nominal level); a ``prepare`` that
    reads ``tables`` must keep every row's result independent of the other rows (results may
    not depend on the chunking).

    ``calibration`` names how :func:`studies.qualify.calibrate.calibrate` chooses a calibrated
    method's nominal level at a design: None -- by searching the levels the method runs at;
    ``"exact-em"`` -- the method's nominal level is the E-step level of an exact E+M
    critical-value table for the design of the data (Lloyd 2008; ``dm_score``), chosen by
    ``studies.exact.convolution.calibrate_em``.
    """
    kernel: Callable
    prepare: Callable = _default_prepare
    calibration: str | None = None

    kind = "fixed"
    DECISION_PATH = ("decide", "batch", "consts", "analyze")

    def consts(self, alpha: float, margin: float, tables: np.ndarray) -> np.ndarray:
        """The kernel's ``consts`` for a batch of ``tables`` decided at ``margin`` and level ``alpha``."""
        check_alpha(alpha)
        return np.ascontiguousarray(self.prepare(self, self.level(alpha), float(margin), tables), dtype=np.float64)

    def batch(self, tables: np.ndarray, margin: float, alpha: float = 0.025) -> BatchResult:
        """Decide every replication of ``tables[R, K, 4]`` at one-sided level ``alpha``."""
        check_margin(margin)
        tables = check_tables(tables)
        consts = self.consts(alpha, margin, tables)
        R = tables.shape[0]
        lower = np.empty(R, np.float64)
        upper = np.empty(R, np.float64)
        estimate = np.empty(R, np.float64)
        status = np.empty(R, np.int8)
        self.kernel(tables, float(margin), consts, lower, upper, estimate, status)
        return BatchResult(self.name, lower, upper, estimate, status)

    def decide(self, tables: np.ndarray, margin: float, alpha: float, schedule: Any = None) -> BatchResult:
        """The protocol's one entry for a batch, fixed or sequential (``SequentialMethod.decide``
        takes the look schedule): per-replication ``status`` (and bounds, estimates)."""
        if schedule is not None:
            raise ValueError(f"method {self.name!r} is fixed-sample: it takes no look schedule")
        return self.batch(tables, margin, alpha)

    def analyze(self, table: Any, margin: float, alpha: float = 0.025) -> IntervalResult:
        """One experiment's ``(K, 4)`` per-cluster tables through the same kernel (R = 1)."""
        t = as_tables(table)
        r = self.batch(t, margin, alpha)
        n = t[0].astype(np.int64).sum(axis=1)
        return IntervalResult(self.name, self.estimand.value, float(r.estimate[0]), float(r.lower[0]),
                              float(r.upper[0]), STATUS_NAMES[int(r.status[0])], float(alpha),
                              float(margin), int(np.count_nonzero(n)), int(n.sum()))
