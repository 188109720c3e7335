"""Bounded single analyses: estimate a method's memory and time on given tables from its
algorithm, and refuse before running when either exceeds a limit.

Every method's cost is linear in the cells of ``tables[R, K, 4]`` (:func:`linear_cost`)
unless it declares its own model (``DecisionMethod.cost``: a function ``(method, tables,
linear) -> AnalysisCost`` beside the kernel it describes, with the measurements behind its
constants): ``exact_discordant`` (its Clopper-Pearson lookups grow with the largest pooled
count), ``bayes_hierarchical`` (its posterior's grid), the cluster bootstraps (resamples x
clusters).  Nothing here is keyed on a method's name.

The limits default to :data:`DEFAULT_MAX_BYTES` and :data:`DEFAULT_MAX_SECONDS`; override
them per call (``max_bytes``, ``max_seconds``) or by the environment variables
``SIMLAB_MAX_ANALYSIS_BYTES`` / ``SIMLAB_MAX_ANALYSIS_SECONDS``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

DEFAULT_MAX_BYTES = 4 << 30        # 4 GiB
DEFAULT_MAX_SECONDS = 120.0
BYTES_ENV = "SIMLAB_MAX_ANALYSIS_BYTES"
SECONDS_ENV = "SIMLAB_MAX_ANALYSIS_SECONDS"

LINEAR_BYTES_PER_CELL = 8.0         # any method: the int64 copy of the tables and per-cluster work
LINEAR_SECONDS_PER_CELL = 1e-8


@dataclass(frozen=True)
class AnalysisCost:
    """Estimated peak extra memory (bytes) and time (seconds) of one ``analyze``/``batch`` call."""
    method: str
    bytes: float
    seconds: float
    driver: str  # what the cost grows with, in words


class AnalysisTooCostly(ValueError):
    """Refusal: ``resource`` ('memory' or 'time') would exceed ``limit``."""

    def __init__(self, what: str, how: str, cost: AnalysisCost, resource: str, limit: float):
        super().__init__(f"{what}; {how}")
        self.what, self.cost, self.resource, self.limit = what, cost, resource, limit


def _limit(value: float | None, env: str, default: float) -> float:
    if value is not None:
        return float(value)
    text = os.environ.get(env)
    if text:
        try:
            v = float(text)
        except ValueError:
            raise ValueError(f"environment {env} must be a number, got {text!r}") from None
        if v > 0:
            return v
        raise ValueError(f"environment {env} must be > 0, got {text!r}")
    return default


def linear_cost(method, t: np.ndarray) -> AnalysisCost:
    """The cost of a method linear in the cells of float64 ``t[R, K, 4]``."""
    cells = float(t.shape[0] * t.shape[1] * 4)
    return AnalysisCost(method.name, LINEAR_BYTES_PER_CELL * cells, LINEAR_SECONDS_PER_CELL * cells,
                        "the number of clusters")


def analysis_cost(method, tables) -> AnalysisCost:
    """Cost estimate of ``method`` on ``tables`` (``[K, 4]`` for one experiment or
    ``[R, K, 4]``): its declared model (``method.cost``) or :func:`linear_cost`."""
    t = np.asarray(tables, dtype=np.float64)  # float: counts near 2^63 must not overflow sums
    if t.ndim == 2:
        t = t[None]
    if t.ndim != 3 or t.shape[-1] != 4:
        raise ValueError(f"tables must have shape [K, 4] or [R, K, 4], got {t.shape}")
    base = linear_cost(method, t)
    model = getattr(method, "cost", None)
    return base if model is None else model(method, t, base)


def fixed_and_per_table(method, tables) -> tuple[float, float]:
    """``(once, per_table)`` declared seconds of a batch of ``tables[R, K, 4]`` (R >= 2): what
    the first table costs with the batch's one-off work (a calibrated method's E+M table), and
    what each further table adds.  A batch of N such tables declares ``once + per_table (N - 1)``;
    dividing a batch's cost by its tables charged the one-off work to every table (``dm_score``
    at a calibrated level: 9e-4 s a table declared where 4e-6 s was taken)."""
    t = np.asarray(tables)
    once = analysis_cost(method, t[:1]).seconds
    return once, max(analysis_cost(method, t).seconds - once, 0.0) / max(t.shape[0] - 1, 1)


def _human_bytes(n: float) -> str:
    return f"{n / (1 << 30):.3g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.3g} MiB"


def check_analysis_cost(method, tables, *, max_bytes: float | None = None,
                        max_seconds: float | None = None) -> AnalysisCost:
    """Return the estimated cost, or raise :class:`AnalysisTooCostly` (a ``ValueError``)
    naming the method, the estimate, the limit and how to raise it."""
    cost = analysis_cost(method, tables)
    limit_b = _limit(max_bytes, BYTES_ENV, DEFAULT_MAX_BYTES)
    limit_s = _limit(max_seconds, SECONDS_ENV, DEFAULT_MAX_SECONDS)
    checks = (("memory", cost.bytes, limit_b, f"need an estimated {_human_bytes(cost.bytes)} of memory",
               _human_bytes(limit_b), "max_bytes", BYTES_ENV),
              ("time", cost.seconds, limit_s, f"take an estimated {cost.seconds:.3g} s", f"{limit_s:g} s",
               "max_seconds", SECONDS_ENV))
    for resource, need, limit, what, shown_limit, arg, env in checks:
        if need > limit:
            raise AnalysisTooCostly(
                f"{cost.method} would {what} on this table (driven by {cost.driver}), over the limit of {shown_limit}",
                f"raise {arg} (or ${env}) to run it anyway, or choose a method whose cost does not grow with the "
                "counts", cost, resource, limit)
    return cost


def first_use_compiles(method) -> list[str]:
    """Names of ``method``'s jitted kernels that compile before they first run here (no machine
    code in this process or in the on-disk cache of the current sources): seconds for most
    methods, minutes for the largest (``bayes_hierarchical``: 150 s on 2 busy cores).  Not part of
    :func:`analysis_cost` (the analysis itself); the commands announce it before it starts."""
    from simlab.numba_cache import is_compiled

    kernels = [getattr(method, "kernel", None)]
    return [f"{method.name}.{getattr(k, '__name__', 'kernel')}" for k in kernels
            if k is not None and not is_compiled(k)]
