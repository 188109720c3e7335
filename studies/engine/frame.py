"""Pass probabilities of a method at one scenario and many cluster counts K, by simulation
on a *frame* or exactly.

Frame.  Experiments with ``K <= K_frame`` clusters are the prefixes ``tables[:, :K]`` of one
``K_frame``-cluster simulation (clusters are i.i.d., so a prefix has exactly the K-cluster
law): common random numbers across K give a power curve that is smooth in K, and one pass
over the frame's tables serves every K.  Counts are integers, so results do not depend on
the chunking.

Exact.  :func:`exact_pass_rate` runs the method's own kernel on every state of an exact
engine (``studies.exact.fixed``) when one applies and its state space is small enough to be
quicker than simulation; it returns None otherwise.
"""
from __future__ import annotations

import math

import numpy as np

from methods.protocol import PASS
from methods.qualification import cp_lower, cp_upper
from studies.engine.evaluate import Block, PassCounts, evaluate

_MAX_CELLS_PER_CHUNK = 1 << 22
EXACT_MAX_STATES = 400_000         # states of the exact law the kernel is run on
EXACT_MAX_CELLS = 120_000_000      # states x clusters (the representative tables' size)


def look_schedule(k: int, looks: int | None):
    """``looks`` equally spaced looks at cumulative cluster counts ``ceil(j K / looks)``
    (``methods.sequential.base.LookSchedule.equally_spaced``)."""
    from methods.sequential.base import LookSchedule
    return LookSchedule.equally_spaced(looks or 1, k)


def pass_count(method, tables: np.ndarray, margin: float, alpha: float, looks: int | None = None) -> int:
    """Replications in ``tables[R, K, 4]`` that pass (fixed) or promote (sequential)."""
    counts = PassCounts(1)
    evaluate(_Prefixes(tables, [tables.shape[1]]), 0, tables.shape[0], [method], (margin,), (alpha,), counts,
             schedule=(lambda k: look_schedule(k, looks)) if method.sequential else None)
    return counts.counts[0][0]


class _Prefixes:
    """Blocks of the prefixes ``tables[lo:, :k]`` of one frame of tables (``tag`` = k)."""

    def __init__(self, tables: np.ndarray, ks, lows=None):
        self.tables, self.ks = tables, list(ks)
        self.lows = lows or [0] * len(self.ks)

    def blocks(self, start, stop, methods):
        for k, lo in zip(self.ks, self.lows):
            if lo < self.tables.shape[0]:
                yield Block(k, tables=np.ascontiguousarray(self.tables[lo:, :k, :]), tag=k)


def ci(x: int, n: int, level: float) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval at ``level``."""
    c = 1.0 - (1.0 - level) / 2.0
    return cp_lower(x, n, c), cp_upper(x, n, c)


class PowerFrame:
    """Pass counts of a method on prefixes of one K_frame-cluster scenario."""

    def __init__(self, method, scenario, seed: int, margin: float, alpha: float, looks: int | None = None,
                 sampler: str = "auto"):
        from simlab.sampling import table_source

        self.method, self.scenario, self.seed = method, scenario, seed
        self.margin, self.alpha, self.looks = margin, alpha, looks
        self.source = table_source(scenario, seed, sampler)
        self.sampler = self.source.name
        self.k_frame = scenario.clusters
        self.counts: dict[int, list[int]] = {}  # K -> [n_reps, n_pass]
        self.replications_generated = 0

    def evaluate(self, ks, n_reps: int) -> None:
        """Bring every K in ``ks`` to ``n_reps`` replications (one pass over the frame)."""
        ks = sorted({int(k) for k in ks})
        for k in ks:
            if not 1 <= k <= self.k_frame:
                raise ValueError(f"K={k} outside the frame 1..{self.k_frame}")
            self.counts.setdefault(k, [0, 0])
        if not ks:
            return
        start = min(self.counts[k][0] for k in ks)
        if start >= n_reps:
            return
        chunk = max(1, _MAX_CELLS_PER_CHUNK // self.k_frame)
        buf = np.empty((min(chunk, n_reps - start), self.k_frame, 4), np.int32)
        schedule = (lambda k: look_schedule(k, self.looks)) if self.method.sequential else None
        for s in range(start, n_reps, chunk):
            e = min(s + chunk, n_reps)
            tables = self.source.fill(buf[:e - s], s)
            self.replications_generated += e - s
            todo = [k for k in ks if self.counts[k][0] < e]
            lows = [max(self.counts[k][0], s) - s for k in todo]
            passes = {}

            def tally(i, j, c, res, block):
                passes[block.tag] = int(np.count_nonzero(res.status == PASS))

            evaluate(_Prefixes(tables, todo, lows), 0, e - s, [self.method], (self.margin,), (self.alpha,), tally,
                     schedule=schedule)
            for k in todo:
                self.counts[k][1] += passes[k]
                self.counts[k][0] = e

    def power(self, k: int) -> float:
        n, x = self.counts[k]
        return x / n

    def lower(self, k: int, level: float) -> float:
        """Lower end of the two-sided ``level`` Clopper-Pearson interval of power at K."""
        n, x = self.counts[k]
        return ci(x, n, level)[0]

    def point(self, k: int, level: float) -> dict[str, float]:
        n, x = self.counts[k]
        p = x / n
        lo, hi = ci(x, n, level)
        return {"clusters": k, "power": p, "mcse": math.sqrt(p * (1 - p) / n), "n_reps": n, "n_pass": x,
                "ci_lower": lo, "ci_upper": hi, "exact": False}


def exact_pass_rate(method, scenario, margin: float, alpha: float) -> float | None:
    """P(pass) of a fixed method at ``scenario`` from an exact engine, or None when no engine
    applies or its state space would be slower than simulation (see the limits above)."""
    from simlab.exact import ExactUnsupported
    from studies.exact.fixed import exact_engine, exact_measures

    if method.sequential:
        return None
    engine, _ = exact_engine(scenario, method, alpha)
    if engine is None or _state_estimate(scenario, engine) > EXACT_MAX_STATES:
        return None
    if engine == "unit" and _state_estimate(scenario, engine) * scenario.clusters > EXACT_MAX_CELLS:
        return None
    try:
        return exact_measures(scenario, method, margin, alpha, engine, max_seconds=20.0).pass_rate
    except ExactUnsupported:
        return None


def _state_estimate(scenario, engine: str) -> float:
    """Upper estimate of the exact engine's state count (the DP is dense up to it)."""
    from simlab.exact.cluster_pmf import cluster_sizes

    sizes = cluster_sizes(scenario)
    n = float(sizes.sum())
    if engine in ("unit", "pooled"):
        return (n + 1) * (n + 2) * (n + 3) / 6.0
    lcm = math.lcm(*[int(s) for s in set(sizes.tolist()) if s > 0])
    k = float(np.count_nonzero(sizes))
    return (2 * k * lcm + 1) * (k * lcm * lcm + 1) / 4.0


__all__ = ["PowerFrame", "pass_count", "look_schedule", "ci", "exact_pass_rate"]
