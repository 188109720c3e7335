"""The protocol every sequential decision method keeps: look schedules, per-look
evaluation, the stopping rule, and the result objects.

Data are the fixed-sample tables ``tables[R, K_max, 4]`` (cell order of ``simlab.scenario``: ``n11, n10,
n01, n00``) with clusters in arrival order, plus a :class:`LookSchedule` registered before
the data: strictly increasing cumulative counts of clusters (or of trials).  A look at
``n`` clusters sees the prefix ``tables[:, :n]``; a look at ``n`` trials sees the shortest
prefix of whole clusters holding at least ``n`` trials (clusters arrive whole), or all the
data when fewer trials exist.  Empty clusters (all pairs lost) arrive but contribute nothing.

A method evaluates every look on its prefix -- what it would conclude *if* it looked there
-- into ``status[R, L]`` (``LOOK_CONTINUE``, ``LOOK_PROMOTE``, ``LOOK_HARM``), the bound
``bound[R, L]`` (its lower confidence bound for the difference; the promotion rule is
``bound >= -margin``) and ``estimate[R, L]``.  The stopping rule is common to all methods and
compiled (:func:`combine`): stop at the first look whose status is promote or harm;
otherwise run to the last look and decide *no promotion*.  Per replication the batch
returns the decision (``PROMOTE``, ``NO_PROMOTION``, ``STOP_HARM``), the stopping look, the
non-empty clusters and trials used up to it, and the bound and estimate there.

``markov`` methods decide at a look from the cumulative counts alone (not their order);
only those can be enumerated exactly (studies.exact.sequential).

Levels: ``alpha`` is the one-sided overall type I error the design targets for the null
``Delta <= -margin`` (the seed's alpha = 0.05): the protocol's one level convention
(``methods.protocol``).  A wrapped fixed-sample method runs at its per-look level.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Literal

import numba as nb
import numpy as np
import rfc8785
from pydantic import BaseModel, ConfigDict, StrictInt, field_validator

from methods.protocol import FAIL, HARM, PASS, DecisionMethod, as_tables, check_alpha, check_margin

# the protocol's one set of codes, named for looks and decisions
LOOK_CONTINUE, LOOK_PROMOTE, LOOK_HARM = FAIL, PASS, HARM
NO_PROMOTION, PROMOTE, STOP_HARM = FAIL, PASS, HARM
DECISION_NAMES = {NO_PROMOTION: "no_promotion", PROMOTE: "promote", STOP_HARM: "stop_for_harm"}
LOOK_STATUS_NAMES = {LOOK_CONTINUE: "continue", LOOK_PROMOTE: "promote", LOOK_HARM: "stop_for_harm"}


# ---------------------------------------------------------------- look schedules
class LookSchedule(BaseModel):
    """Cumulative counts at which the data are inspected, registered before the data."""
    model_config = ConfigDict(frozen=True, extra="forbid")

    looks: tuple[StrictInt, ...]
    unit: Literal["clusters", "trials"] = "clusters"

    @field_validator("looks")
    @classmethod
    def _increasing(cls, v):
        if len(v) == 0:
            raise ValueError("looks must list at least one look")
        if len(v) > 10_000:
            raise ValueError(f"looks lists {len(v)} looks; at most 10000 are supported")
        for i, n in enumerate(v):
            if n < 1:
                raise ValueError(f"looks[{i}] = {n} must be >= 1 (a cumulative count)")
            if i > 0 and n <= v[i - 1]:
                raise ValueError(f"looks must be strictly increasing cumulative counts: "
                                 f"looks[{i}] = {n} does not exceed looks[{i - 1}] = {v[i - 1]}")
        return v

    @classmethod
    def every(cls, step: int, last: int, unit: str = "clusters") -> "LookSchedule":
        """Looks at step, 2 step, ..., last (last must be a multiple of step)."""
        if not isinstance(step, int) or step < 1:
            raise ValueError(f"step must be a positive integer, got {step!r}")
        if not isinstance(last, int) or last < step or last % step:
            raise ValueError(f"last ({last!r}) must be a positive multiple of step ({step})")
        return cls(looks=tuple(range(step, last + 1, step)), unit=unit)

    @classmethod
    def equally_spaced(cls, n_looks: int, last: int, unit: str = "clusters") -> "LookSchedule":
        """``n_looks`` looks at ``ceil(j last / n_looks)``, j = 1..n_looks (the one spacing rule of
        qualification domains, certificates and power frames)."""
        if not isinstance(n_looks, int) or n_looks < 1:
            raise ValueError(f"the number of looks must be a positive integer, got {n_looks!r}")
        if n_looks > last:
            raise ValueError(f"{n_looks} looks need at least {n_looks} {unit}, got {last}")
        return cls(looks=tuple(-(-j * last // n_looks) for j in range(1, n_looks + 1)), unit=unit)

    @classmethod
    def parse(cls, text: str, unit: str = "clusters") -> "LookSchedule":
        """``"50,100,150"`` or ``"50:500:50"`` (start:stop:step, stop inclusive)."""
        text = text.strip()
        try:
            if ":" in text:
                parts = [int(p) for p in text.split(":")]
                if len(parts) != 3:
                    raise ValueError
                start, stop, step = parts
                if step < 1:
                    raise ValueError
                looks = tuple(range(start, stop + 1, step))
            else:
                looks = tuple(int(p) for p in text.split(",") if p.strip())
        except ValueError:
            raise ValueError(f"looks must be comma-separated integers or start:stop:step, got {text!r}") from None
        return cls(looks=looks, unit=unit)

    @property
    def n_looks(self) -> int:
        return len(self.looks)

    @property
    def last(self) -> int:
        return self.looks[-1]

    def as_array(self) -> np.ndarray:
        return np.asarray(self.looks, dtype=np.int64)

    def information_fractions(self) -> np.ndarray:
        return self.as_array() / float(self.last)

    def canonical_json(self) -> bytes:
        return rfc8785.dumps(self.model_dump(mode="json"))

    @property
    def key(self) -> str:
        return hashlib.sha256(self.canonical_json()).hexdigest()

    def look_ends(self, tables: np.ndarray, allow_short: bool = False) -> np.ndarray:
        """int64[R, L]: the prefix length (clusters) each replication has at each look.

        Cluster schedules need ``K >= last look`` unless ``allow_short`` (then looks past the
        data are clipped to ``K``); trial schedules take looks past the data at ``K``."""
        R, K = tables.shape[0], tables.shape[1]
        looks = self.as_array()
        if self.unit == "clusters":
            if looks[-1] > K and not allow_short:
                raise ValueError(f"the look schedule's last look needs {looks[-1]} clusters but the "
                                 f"tables hold K = {K}")
            return np.broadcast_to(np.minimum(looks, K), (R, looks.size)).copy()
        out = np.empty((R, looks.size), np.int64)
        _trial_look_ends(tables, looks, out)
        return out

    def reached(self, tables: np.ndarray) -> np.ndarray:
        """bool[R, L]: whether the data reach each look (analysis of an experiment in progress)."""
        looks = self.as_array()
        if self.unit == "clusters":
            return np.broadcast_to(looks <= tables.shape[1], (tables.shape[0], looks.size)).copy()
        total = tables.astype(np.int64).sum(axis=(1, 2))
        return total[:, None] >= looks[None, :]


@nb.njit(cache=True)
def _trial_look_ends(tables, looks, out):
    R, K, _ = tables.shape
    L = looks.shape[0]
    for r in range(R):
        j = 0
        cum = 0
        for k in range(K):
            cum += tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            while j < L and cum >= looks[j]:
                out[r, j] = k + 1
                j += 1
            if j == L:
                break
        while j < L:
            out[r, j] = K
            j += 1


# ---------------------------------------------------------------- the stopping rule
@nb.njit(cache=True)
def combine(tables, ends, status, bound, estimate, decision, stop_look, clusters, trials,
            bound_out, estimate_out):
    """First crossing wins; no crossing -> no promotion at the last look."""
    R, L = status.shape
    for r in range(R):
        j_stop = L - 1
        dec = 0
        for j in range(L):
            s = status[r, j]
            if s == 1 or s == 3:
                j_stop = j
                dec = s
                break
        decision[r] = dec
        stop_look[r] = j_stop
        bound_out[r] = bound[r, j_stop]
        estimate_out[r] = estimate[r, j_stop]
        kk = 0
        nn = 0
        for k in range(ends[r, j_stop]):
            n = tables[r, k, 0] + tables[r, k, 1] + tables[r, k, 2] + tables[r, k, 3]
            if n > 0:
                kk += 1
                nn += n
        clusters[r] = kk
        trials[r] = nn


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class SequentialBatchResult:
    """Per-replication output of a sequential method.

    Attributes
    ----------
    method : str
        The method's label (``repeated_fixed[binomial_loss]`` for wrappers).
    schedule : LookSchedule
        The look schedule the data were analysed at.
    decision : ndarray of int8, shape (R,)
        Protocol status codes: promote (1), no promotion (0), stop for harm (3).
    stop_look : ndarray of int64, shape (R,)
        The look (0-based) where the analysis ended.
    clusters, trials : ndarray of int64, shape (R,)
        Non-empty clusters and trial pairs used up to the stopping look.
    bound, estimate : ndarray of float64, shape (R,)
        The lower confidence bound and the estimate at the stopping look.
    look_status : ndarray of int8, shape (R, L)
        What each look would have concluded (without stopping).
    """
    method: str
    schedule: LookSchedule
    decision: np.ndarray
    stop_look: np.ndarray
    clusters: np.ndarray
    trials: np.ndarray
    bound: np.ndarray
    estimate: np.ndarray
    look_status: np.ndarray

    @property
    def n_reps(self) -> int:
        return int(self.decision.shape[0])

    @property
    def status(self) -> np.ndarray:
        """The decisions as protocol status codes (the fixed-sample results' ``status``)."""
        return self.decision

    def promote_count(self) -> int:
        return int(np.count_nonzero(self.decision == PROMOTE))

    def harm_count(self) -> int:
        return int(np.count_nonzero(self.decision == STOP_HARM))

    def first_crossing_counts(self, decision: int = PROMOTE) -> np.ndarray:
        """int64[L]: replications that stopped with ``decision`` at each look."""
        sel = self.decision == decision
        return np.bincount(self.stop_look[sel], minlength=self.schedule.n_looks).astype(np.int64)

    def stop_counts(self) -> np.ndarray:
        """int64[L]: replications whose analysis ended at each look (stopped or the last)."""
        return np.bincount(self.stop_look, minlength=self.schedule.n_looks).astype(np.int64)


@dataclass(frozen=True)
class SequentialResult:
    """One experiment's sequential analysis (in the manner of scipy.stats results).

    Attributes
    ----------
    method, estimand : str
        The method's label and the estimand its estimate targets.
    decision : str
        ``promote``, ``no_promotion``, ``stop_for_harm``, or ``continue`` while the data
        have not reached the last look and no boundary was crossed.
    stop_look : int or None
        The look (0-based) the decision was taken at.
    looks, unit : tuple of int, str
        The registered schedule.
    looks_reached : int
        Looks the data reach.
    clusters, trials : int
        Non-empty clusters and trial pairs used.
    bound, estimate : float
        The level-``alpha`` lower confidence bound and the estimate at the analysed look.
    alpha, margin : float
        The one-sided overall level and the margin.
    look_status, look_bound : tuple
        Each analysed look's status and bound.
    """
    method: str
    estimand: str
    decision: str
    stop_look: int | None
    looks: tuple[int, ...]
    unit: str
    looks_reached: int
    clusters: int
    trials: int
    bound: float
    estimate: float
    alpha: float
    margin: float
    look_status: tuple[str, ...]
    look_bound: tuple[float, ...]

    @property
    def promoted(self) -> bool:
        return self.decision == "promote"

    def confidence_interval(self) -> tuple[float, float]:
        """``(low, high)``: the one-sided level-``alpha`` bound at the analysed look, and 1."""
        return self.bound, 1.0

    def as_dict(self) -> dict[str, Any]:
        def num(x):
            return None if (isinstance(x, float) and not math.isfinite(x)) else x
        return {"method": self.method, "estimand": self.estimand, "decision": self.decision,
                "promoted": self.promoted, "stop_look": self.stop_look,
                "stop_at": None if self.stop_look is None else self.looks[self.stop_look],
                "looks": list(self.looks), "unit": self.unit, "looks_reached": self.looks_reached,
                "clusters": self.clusters, "trials": self.trials, "bound": num(self.bound),
                "estimate": num(self.estimate), "alpha": self.alpha, "margin": self.margin,
                "look_status": list(self.look_status), "look_bound": [num(b) for b in self.look_bound]}


# ---------------------------------------------------------------- the method object
def default_prepare(method: "SequentialMethod", alpha: float, margin: float, schedule: LookSchedule) -> np.ndarray:
    return np.array([alpha], dtype=np.float64)


@dataclass(frozen=True, kw_only=True)
class SequentialMethod(DecisionMethod):
    """A sequential non-inferiority method (the many-look case of the protocol).

    Either a numba ``kernel(tables, ends, margin, consts, status, bound, estimate)`` that
    fills the per-look arrays in one pass (``consts`` from ``prepare(method, alpha, margin,
    schedule)``, computed once per batch), or an ``evaluate(method, tables, ends, alpha,
    margin, schedule, only)`` hook (the wrappers, which call a fixed-sample kernel per look;
    ``only`` asks for a single look, others may then stay ``continue``).  ``inner`` is the
    wrapped fixed-sample method, if any.
    """
    kernel: Callable | None = None
    prepare: Callable = default_prepare
    evaluate: Callable | None = None
    markov: bool = True
    stops_for_harm: bool = False
    units: tuple[str, ...] = ("clusters", "trials")

    kind = "sequential"
    DECISION_PATH = ("decide", "batch", "_check", "evaluate_looks", "_combine", "statuses_at", "analyze")

    def with_inner(self, inner: Any) -> "SequentialMethod":
        """Wrap another fixed-sample method (a FixedMethod or a registered name)."""
        if self.inner is None:
            raise ValueError(f"method {self.name!r} does not wrap a fixed-sample method")
        if isinstance(inner, str):
            from methods import registry
            inner = registry.get(inner)
        if getattr(inner, "kind", None) != "fixed":
            raise ValueError(f"{self.name!r} wraps fixed-sample methods; {getattr(inner, 'name', inner)!r} is not one")
        return replace(self, inner=inner, estimand=inner.estimand)

    # -- evaluation ----------------------------------------------------------
    def _check(self, tables: np.ndarray, schedule: LookSchedule, margin: float, alpha: float) -> np.ndarray:
        check_margin(margin)
        check_alpha(alpha)
        if not isinstance(schedule, LookSchedule):
            raise ValueError(f"schedule must be a LookSchedule, got {type(schedule).__name__}")
        if schedule.unit not in self.units:
            raise ValueError(f"method {self.name!r} needs a look schedule in {' or '.join(self.units)}, "
                             f"got unit {schedule.unit!r}")
        if tables.ndim != 3 or tables.shape[2] != 4:
            raise ValueError(f"tables must have shape (R, K, 4), got {tables.shape}")
        if tables.dtype != np.int32:
            tables = tables.astype(np.int32)
        return tables

    def evaluate_looks(self, tables: np.ndarray, ends: np.ndarray, schedule: LookSchedule, margin: float,
                       alpha: float, only: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-look ``(status[R, L], bound[R, L], estimate[R, L])`` without stopping."""
        alpha = self.level(alpha)  # a calibrated method runs at its nominal level
        if self.evaluate is not None:
            return self.evaluate(self, tables, ends, alpha, margin, schedule, only)
        R, L = ends.shape
        status = np.zeros((R, L), np.int8)
        bound = np.full((R, L), np.nan)
        estimate = np.full((R, L), np.nan)
        consts = np.ascontiguousarray(self.prepare(self, alpha, margin, schedule), dtype=np.float64)
        self.kernel(tables, np.ascontiguousarray(ends), float(margin), consts, status, bound, estimate)
        return status, bound, estimate

    def batch(self, tables: np.ndarray, schedule: LookSchedule, margin: float,
              alpha: float = 0.05) -> SequentialBatchResult:
        tables = self._check(tables, schedule, margin, alpha)
        ends = schedule.look_ends(tables)
        status, bound, estimate = self.evaluate_looks(tables, ends, schedule, margin, alpha)
        return self._combine(tables, ends, schedule, status, bound, estimate)

    def decide(self, tables: np.ndarray, margin: float, alpha: float, schedule: LookSchedule | None = None
               ) -> SequentialBatchResult:
        """The protocol's one entry for a batch (``FixedMethod.decide`` without a schedule):
        per-replication ``status`` = the decision (promote counts as a pass)."""
        if schedule is None:
            raise ValueError(f"method {self.label!r} is sequential: it needs a look schedule")
        return self.batch(tables, schedule, margin, alpha)

    def _combine(self, tables, ends, schedule, status, bound, estimate) -> SequentialBatchResult:
        R = tables.shape[0]
        decision = np.empty(R, np.int8)
        stop_look = np.empty(R, np.int64)
        clusters = np.empty(R, np.int64)
        trials = np.empty(R, np.int64)
        bound_out = np.empty(R, np.float64)
        estimate_out = np.empty(R, np.float64)
        combine(tables, ends, status, bound, estimate, decision, stop_look, clusters, trials, bound_out, estimate_out)
        return SequentialBatchResult(self.label, schedule, decision, stop_look, clusters, trials, bound_out,
                                     estimate_out, status)

    def statuses_at(self, tables: np.ndarray, schedule: LookSchedule, look: int, margin: float,
                    alpha: float) -> np.ndarray:
        """int8[R]: the status each table would get at look ``look`` (0-based) of ``schedule``,
        the tables holding exactly that look's prefix.  Used to enumerate decision regions."""
        tables = self._check(tables, schedule, margin, alpha)
        if not 0 <= look < schedule.n_looks:
            raise ValueError(f"look must lie in [0, {schedule.n_looks}), got {look}")
        ends = schedule.look_ends(tables, allow_short=True)
        status, _b, _e = self.evaluate_looks(tables, ends, schedule, margin, alpha, only=look)
        return status[:, look].copy()

    def analyze(self, table: Any, schedule: LookSchedule, margin: float, alpha: float = 0.05) -> SequentialResult:
        """One experiment (``(K, 4)`` per-cluster tables in arrival order) through the same
        per-look evaluation and stopping rule as :meth:`batch`.  Data may stop short of the
        last look: the analysis then covers the looks reached (``decision = continue`` when
        none crossed)."""
        t = as_tables(table)
        t = self._check(t, schedule, margin, alpha)
        ends = schedule.look_ends(t, allow_short=True)
        reached = schedule.reached(t)[0]
        n_reached = int(np.count_nonzero(reached))
        # methods that skip bounds past the stopping look for speed report them all here
        m = self.with_options(all_bounds=1.0) if "all_bounds" in self.options else self
        status, bound, estimate = m.evaluate_looks(t, ends, schedule, margin, alpha)
        res = self._combine(t, ends, schedule, status, bound, estimate)
        stop = int(res.stop_look[0])
        crossed = int(res.decision[0]) != NO_PROMOTION
        if n_reached == 0:
            decision, stop_look, upto = "continue", None, 0
        elif crossed and stop < n_reached:
            decision, stop_look, upto = DECISION_NAMES[int(res.decision[0])], stop, stop + 1
        elif n_reached == schedule.n_looks:
            decision, stop_look, upto = "no_promotion", schedule.n_looks - 1, schedule.n_looks
        else:
            decision, stop_look, upto = "continue", None, n_reached
        last = (upto - 1) if upto else None
        if last is None:
            k_used, n_used, b, e = 0, 0, math.nan, math.nan
        else:
            counts = t[0, :ends[0, last]].astype(np.int64).sum(axis=1)
            k_used, n_used = int(np.count_nonzero(counts)), int(counts.sum())
            b, e = float(bound[0, last]), float(estimate[0, last])
        return SequentialResult(
            method=self.label, estimand=self.estimand.value, decision=decision, stop_look=stop_look,
            looks=schedule.looks, unit=schedule.unit, looks_reached=n_reached, clusters=k_used, trials=n_used,
            bound=b, estimate=e, alpha=float(alpha), margin=float(margin),
            look_status=tuple(LOOK_STATUS_NAMES[int(s)] for s in status[0, :upto]),
            look_bound=tuple(float(x) for x in bound[0, :upto]))
