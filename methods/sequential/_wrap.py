"""Sequential use of a fixed-sample method: run its batch kernel on the cumulative prefix
of clusters at each look (no Python per replication: one kernel call per look).

``per_look_alpha(alpha, L)`` and ``which_looks(L)`` define the wrapper:

* ``fixed_final``   -- one look, the last, at level alpha;
* ``repeated_fixed`` -- every look at the nominal level alpha (the seed's naive peeking);
* ``bonferroni``    -- every look at alpha / L (Bonferroni 1936; union bound over looks).

A look promotes when the fixed method passes (``lower >= -margin``); an inconclusive or
failing look continues.  The wrapped method runs at the per-look one-sided level ``a``
(the protocol's one level convention).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from methods.protocol import PASS
from methods.sequential.base import LOOK_CONTINUE, LOOK_PROMOTE


def _prefix(tables: np.ndarray, ends_j: np.ndarray) -> np.ndarray:
    """The look's data: a view when every replication has the same prefix length, else a
    copy with the clusters past each replication's end emptied (empty = missing)."""
    e0 = int(ends_j[0])
    if np.all(ends_j == e0):
        return tables[:, :e0, :]
    width = int(ends_j.max())
    sub = tables[:, :width, :].copy()
    mask = np.arange(width)[None, :] >= ends_j[:, None]
    sub[mask] = 0
    return sub


def make_evaluate(per_look_alpha: Callable[[float, int], float],
                  which_looks: Callable[[int], list[int]]) -> Callable:
    def evaluate(method, tables, ends, alpha, margin, schedule, only):
        inner = method.inner
        R, L = ends.shape
        status = np.full((R, L), LOOK_CONTINUE, np.int8)
        bound = np.full((R, L), np.nan)
        estimate = np.full((R, L), np.nan)
        level = per_look_alpha(alpha, L)
        for j in which_looks(L):
            if only is not None and j != only:
                continue
            res = inner.batch(_prefix(tables, ends[:, j]), margin, level)
            status[:, j] = np.where(res.status == PASS, LOOK_PROMOTE, LOOK_CONTINUE)
            bound[:, j] = res.lower
            estimate[:, j] = res.estimate
        return status, bound, estimate
    return evaluate
