"""Bounded single analyses: estimate a method's memory and time on given tables from its
algorithm, and refuse before running when either exceeds a limit.

Every fixed method is linear in the cells of ``tables[R, K, 4]`` except these, whose cost
grows with the *counts* or with a resampling option (constants measured on one core,
``NUMBA_NUM_THREADS=1``, peak RSS over a warm process; see ``tests/methods/test_limits.py``):

``exact_discordant``
    ``prepare`` builds Clopper-Pearson lookups indexed by every size ``0 .. n_max`` (the
    largest pooled trial count of a replication): int64 ``xmin``/``xmax``, float64 start
    offsets and a float64 header of three words per size.  Peak RSS over the resident set just
    before the call: 49 B per unit of ``n_max`` at ``n_max = 1e7, 2e7`` in a fresh process, 54 B
    inside a long test session; 0.1-0.3 us per unit (1e7: 1-3 s): model 60 B and 0.3 us per size.
``bayes_hierarchical``
    the posterior is a mixture over table counts ``(t10, t01, t11 + t00)``: with
    ``M_j = y_j - c_j`` (pooled count of cell ``j`` less the clusters where it is positive),
    version 3 stores it as ``(M10 + M01 + 1)`` groups (``t10 + t01``) by ``(M11 + M00 + 1)``
    values of ``t11 + t00`` (the *grid*: float64 log weights, the group polynomials and their
    logarithms) and ``(M10 + 1)(M01 + 1)`` pairs (a, b, weights, reciprocals).  Measured
    (CPU time, ``NUMBA_NUM_THREADS=1``) 0.3-3.7e-7 s and 15-16.5 bytes per grid cell from
    100 x 10 to one cluster of 40,000 trials: model 5e-7 s and 24 B per cell plus 100 B per
    pair.  The Stirling coefficients ``S_j`` cost 0.7-0.9 ns per squared pooled count
    (one cluster of 1e5 trials: 6.9 s): model 1e-9 s per ``y_j^2``.
``cluster_bootstrap``, ``cluster_bootstrap_bca``
    ``resamples`` draws of ``K`` clusters per replication: measured 17 ns per
    cluster-draw at K = 1e5, B = 999: model 20 ns.

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

EXACT_DISCORDANT_BYTES_PER_SIZE = 60.0
EXACT_DISCORDANT_SECONDS_PER_SIZE = 3e-7
BAYES_HIERARCHICAL_BYTES_PER_CELL = 24.0
BAYES_HIERARCHICAL_BYTES_PER_PAIR = 100.0
BAYES_HIERARCHICAL_SECONDS_PER_CELL = 5e-7
BAYES_HIERARCHICAL_SECONDS_PER_SQUARED_COUNT = 1e-9
BOOTSTRAP_SECONDS_PER_DRAW = 2e-8
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


def analysis_cost(method, tables) -> AnalysisCost:
    """Cost estimate of ``method`` on ``tables`` (``[K, 4]`` for one experiment or
    ``[R, K, 4]``), from the models in the module docstring."""
    t = np.asarray(tables, dtype=np.float64)  # float: counts near 2^63 must not overflow sums
    if t.ndim == 2:
        t = t[None]
    if t.ndim != 3 or t.shape[-1] != 4:
        raise ValueError(f"tables must have shape [K, 4] or [R, K, 4], got {t.shape}")
    R, K = t.shape[0], t.shape[1]
    cells = float(R * K * 4)
    base = AnalysisCost(method.name, LINEAR_BYTES_PER_CELL * cells, LINEAR_SECONDS_PER_CELL * cells,
                        "the number of clusters")
    if method.name == "exact_discordant":
        sizes = float(t.sum(axis=(1, 2)).max()) + 1.0 if R else 1.0
        return AnalysisCost(method.name, base.bytes + EXACT_DISCORDANT_BYTES_PER_SIZE * sizes,
                            base.seconds + EXACT_DISCORDANT_SECONDS_PER_SIZE * sizes,
                            f"the largest pooled trial count ({sizes - 1:.4g})")
    if method.name == "bayes_hierarchical":
        y = t.sum(axis=1)                       # [R, 4] pooled counts
        c = (t > 0).sum(axis=1)                 # [R, 4] clusters with a positive count
        m = np.maximum(y - c, 0.0)
        cells_ = (m[:, 1] + m[:, 2] + 1) * (m[:, 0] + m[:, 3] + 1)
        pairs = (m[:, 1] + 1) * (m[:, 2] + 1)
        memory = BAYES_HIERARCHICAL_BYTES_PER_CELL * cells_ + BAYES_HIERARCHICAL_BYTES_PER_PAIR * pairs
        seconds = (BAYES_HIERARCHICAL_SECONDS_PER_CELL * cells_
                   + BAYES_HIERARCHICAL_SECONDS_PER_SQUARED_COUNT * (y ** 2).sum(axis=1))
        worst = float(cells_.max()) if R else 0.0
        return AnalysisCost(method.name, base.bytes + (float(memory.max()) if R else 0.0),
                            base.seconds + float(seconds.sum()),
                            f"the posterior's grid ({worst:.3g} cells: the counts of n10 + n01 times those of "
                            "n11 + n00, above one per cluster)")
    if method.name in ("cluster_bootstrap", "cluster_bootstrap_bca"):
        draws = float(method.options.get("resamples", 999.0)) * K * R
        return AnalysisCost(method.name, base.bytes, base.seconds + BOOTSTRAP_SECONDS_PER_DRAW * draws,
                            f"resamples x clusters ({draws:.3g} cluster draws)")
    return base


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
