"""``simlab bench speedups``: the rewritten slow methods against their previous algorithm,
measured in the same run on the same tables, one thread.

* bootstraps -- the resampling step of ``cluster_bootstrap`` / ``cluster_bootstrap_bca``
  (B = 999 resamples, then their order): the histogram of integer resample sums
  (``sorted_bootstrap``) against generation plus sort (``sorted_bootstrap_by_sort``, the
  version 1 algorithm); the rest of both kernels is unchanged.  Also the whole methods'
  decisions per second.
"""
from __future__ import annotations

import time

import numba as nb
import numpy as np

from methods.fixed._resample import sorted_bootstrap, sorted_bootstrap_by_sort


@nb.njit(cache=True)
def _resampling_loop(tables, B, by_sort):
    K = tables.shape[1]
    d = np.empty(K, np.int64)
    n = np.empty(K, np.int64)
    out = np.empty(B, np.float64)
    check = 0.0
    for r in range(tables.shape[0]):
        if by_sort:
            m = sorted_bootstrap_by_sort(tables, r, d, n, out)
        else:
            m = sorted_bootstrap(tables, r, d, n, out)
        if m >= 2:
            check += out[B // 40] + out[B - 1 - B // 40]
    return check


def _best(fn, repeat):
    best, value = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def bench_bootstrap(designs=((30, 3), (100, 10)), reps: int = 2000, seed: int = 1, repeat: int = 3,
                    resamples: int = 999) -> list[dict]:
    """Rows per design ``(K, M)`` (rho 0.1, the standard cells)."""
    from methods import registry
    from simlab.benchmarks import STANDARD_CELLS
    from simlab.generate import simulate_tables
    from simlab.scenario import FixedSize, PairedScenario

    from .bench import _numba_threads

    before = _numba_threads(1)
    rows = []
    try:
        for K, M in designs:
            sc = PairedScenario(cells=STANDARD_CELLS, clusters=K, cluster_size=FixedSize(trials=M), rho=0.1)
            tables = simulate_tables(sc, seed, reps)
            _resampling_loop(tables[:2], resamples, True), _resampling_loop(tables[:2], resamples, False)
            t_old, v_old = _best(lambda: _resampling_loop(tables, resamples, True), repeat)
            t_new, v_new = _best(lambda: _resampling_loop(tables, resamples, False), repeat)
            row = {"workload": f"bootstrap resampling step, K={K} x M={M}, B={resamples}", "replications": reps,
                   "old_per_s": reps / t_old, "new_per_s": reps / t_new, "ratio": t_old / t_new,
                   "same_results": bool(v_old == v_new)}
            for name in ("cluster_bootstrap", "cluster_bootstrap_bca"):
                m = registry.get(name)
                m.batch(tables[:2], 0.03, 0.95)
                t, _ = _best(lambda: m.batch(tables, 0.03, 0.95), repeat)
                row[f"{name}_decisions_per_s"] = reps / t
            rows.append(row)
    finally:
        _numba_threads(before)
    return rows
