"""Exact law of the pooled table ``sum_k (n11, n10, n01, n00)_k`` by dynamic programming.

Clusters are independent, so the pooled law is the convolution of the cluster laws
(:mod:`simlab.exact.cluster_pmf`).  The state after ``k`` clusters is the pooled table
of those clusters; adding cluster ``k + 1`` moves probability ``P(s) * q(t)`` to ``s + t``
for every table ``t`` of its law.  Without pair loss every cluster contributes a fixed
number of pairs, so ``n00`` is implied and the state is ``(n11, n10, n01)``; with loss
the state carries all four counts.  The cost is (number of states) x (tables per
cluster) per cluster; ``max_states`` bounds the dense state array.

When every cluster has at most one pair the pooled counts are the numbers of clusters
of each kind, i.e. the multiset of cluster tables (see :func:`unit_cluster_tables`).
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .cluster_pmf import ExactUnsupported, law_has_loss

DEFAULT_MAX_STATES = 12_000_000


@nb.njit(cache=True)
def _convolve(P, Q, cur, ent, prob, four_d):
    """Q <- P * law (Q must be zero where written).  ``cur`` = pairs pooled so far."""
    for a in range(cur + 1):
        for b in range(cur + 1 - a):
            for c in range(cur + 1 - a - b):
                dmax = cur - a - b - c if four_d else 0
                for d in range(dmax + 1):
                    p = P[a, b, c, d]
                    if p == 0.0:
                        continue
                    for e in range(ent.shape[0]):
                        if four_d:
                            Q[a + ent[e, 0], b + ent[e, 1], c + ent[e, 2], d + ent[e, 3]] += p * prob[e]
                        else:
                            Q[a + ent[e, 0], b + ent[e, 1], c + ent[e, 2], 0] += p * prob[e]


@nb.njit(cache=True)
def _zero(Q, upto, four_d):
    for a in range(upto + 1):
        for b in range(upto + 1 - a):
            for c in range(upto + 1 - a - b):
                dmax = upto - a - b - c if four_d else 0
                for d in range(dmax + 1):
                    Q[a, b, c, d] = 0.0


@nb.njit(cache=True)
def _extract(P, total, four_d):
    n = 0
    for a in range(total + 1):
        for b in range(total + 1 - a):
            for c in range(total + 1 - a - b):
                dmax = total - a - b - c if four_d else 0
                for d in range(dmax + 1):
                    if P[a, b, c, d] > 0.0:
                        n += 1
    tables = np.empty((n, 4), np.int32)
    probs = np.empty(n, np.float64)
    i = 0
    for a in range(total + 1):
        for b in range(total + 1 - a):
            for c in range(total + 1 - a - b):
                dmax = total - a - b - c if four_d else 0
                for d in range(dmax + 1):
                    p = P[a, b, c, d]
                    if p > 0.0:
                        tables[i, 0] = a
                        tables[i, 1] = b
                        tables[i, 2] = c
                        tables[i, 3] = d if four_d else total - a - b - c
                        probs[i] = p
                        i += 1
    return tables, probs


def pooled_distribution(laws: list[tuple[np.ndarray, np.ndarray]],
                        max_states: int = DEFAULT_MAX_STATES) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the pooled table of independent clusters with the given laws.

    Returns ``(tables int32[S, 4], probs float64[S])`` over the pooled tables with positive
    probability (probabilities below the float64 range underflow to zero and are dropped)."""
    if not laws:
        raise ValueError("pooled_distribution needs at least one cluster law")
    four_d = any(law_has_loss(law) for law in laws)
    total = int(sum(int(law[0].sum(axis=1).max()) for law in laws))
    side = total + 1
    n_states = side ** 4 if four_d else side ** 3
    if n_states > max_states:
        raise ExactUnsupported(f"pooled table of {total} pairs{' with loss' if four_d else ''} needs "
                               f"{n_states:,} DP states (limit {max_states:,})")
    shape = (side, side, side, side if four_d else 1)
    P = np.zeros(shape)
    Q = np.zeros(shape)
    P[0, 0, 0, 0] = 1.0
    cur = 0
    for tables, probs in laws:
        m = int(tables.sum(axis=1).max())
        _zero(Q, cur + m, four_d)
        _convolve(P, Q, cur, np.ascontiguousarray(tables, np.int64), np.ascontiguousarray(probs), four_d)
        P, Q = Q, P
        cur += m
    return _extract(P, total, four_d)


def unit_cluster_tables(pooled: np.ndarray, clusters: int) -> np.ndarray:
    """Representative cluster tables for pooled counts of one-pair clusters.

    ``pooled`` int[S, 4] (counts of clusters whose single pair fell in each cell) ->
    int32[S, K, 4]: the first ``n11`` clusters hold (1,0,0,0), then ``n10`` clusters
    (0,1,0,0), ``n01`` clusters (0,0,1,0), ``n00`` clusters (0,0,0,1), and the remaining
    clusters are empty (their pair was lost, or they have no trial)."""
    pooled = np.asarray(pooled, dtype=np.int64)
    if np.any(pooled.sum(axis=1) > clusters):
        raise ValueError("pooled counts exceed the number of clusters")
    out = np.zeros((pooled.shape[0], clusters, 4), np.int32)
    idx = np.arange(clusters)[None, :]
    edges = np.cumsum(pooled, axis=1)
    starts = edges - pooled
    for j in range(4):
        out[:, :, j] = (idx >= starts[:, j:j + 1]) & (idx < edges[:, j:j + 1])
    return out
