"""Exact law of the cluster-mean moments ``(sum v_k, sum v_k^2)`` by dynamic programming.

Cluster ``k`` with ``m_k >= 1`` pairs has mean difference ``d_k / m_k`` with
``d_k = n01 - n10`` an integer in ``[-m_k, m_k]``.  With ``L = lcm(m_k)`` every mean is
``v_k / L`` for the integer ``v_k = d_k L / m_k`` in ``[-L, L]``, so the sample mean and
variance of the cluster means -- all that ``clustered_normal`` and ``cluster_t`` use
(Donner & Klar 2000, sec. 6.2) -- are functions of the integer statistics
``S1 = sum v_k`` and ``S2 = sum v_k^2`` (and the fixed number of non-empty clusters).

The DP adds one cluster at a time: ``P_k(S1 + v, S2 + v^2) += P_{k-1}(S1, S2) q_k(v)``,
on a dense array of ``(2 K L + 1) x (K L^2 + 1)`` states (numba), or -- when that would
not fit, e.g. for unequal sizes with a large ``L`` -- over the reachable states only
(sorted integer keys).  One back-pointer per state and step (the first ``v`` that
reached it) lets every final state be expanded into one representative vector
``(v_1, ..., v_K)`` with exactly that ``(S1, S2)``.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

from .cluster_pmf import ExactUnsupported, law_has_loss

DEFAULT_MAX_BYTES = 400_000_000  # the back-pointer array: (states per step) x (steps) x 1 or 2 bytes


@nb.njit(cache=True)
def _step(P, Q, bp, kstep, vals, probs, s1_lo, s1_hi, s2_hi, off, sentinel):
    """One cluster: Q <- P (*) q, recording back-pointers in bp[kstep]."""
    for s1 in range(s1_lo, s1_hi + 1):
        for s2 in range(0, s2_hi + 1):
            p = P[s1 + off, s2]
            if p == 0.0:
                continue
            for e in range(vals.shape[0]):
                v = vals[e]
                t1 = s1 + v + off
                t2 = s2 + v * v
                Q[t1, t2] += p * probs[e]
                if bp[kstep, t1, t2] == sentinel:
                    bp[kstep, t1, t2] = v


@nb.njit(cache=True)
def _expand(P, bp, off, n_steps, s1_max, s2_max):
    n = 0
    for s1 in range(-s1_max, s1_max + 1):
        for s2 in range(s2_max + 1):
            if P[s1 + off, s2] > 0.0:
                n += 1
    vecs = np.empty((n, n_steps), np.int64)
    probs = np.empty(n, np.float64)
    i = 0
    for s1 in range(-s1_max, s1_max + 1):
        for s2 in range(s2_max + 1):
            p = P[s1 + off, s2]
            if p > 0.0:
                probs[i] = p
                a = s1
                b = s2
                for k in range(n_steps - 1, -1, -1):
                    v = np.int64(bp[k, a + off, b])
                    vecs[i, k] = v
                    a -= v
                    b -= v * v
                i += 1
    return vecs, probs


def difference_law(law: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Law of ``d = n01 - n10`` of one cluster from its table law (values ascending)."""
    tables, probs = law
    d = tables[:, 2].astype(np.int64) - tables[:, 1]
    vals = np.unique(d)
    out = np.zeros(vals.size)
    np.add.at(out, np.searchsorted(vals, d), probs)
    return vals, out


def moment_distribution(laws: list[tuple[np.ndarray, np.ndarray]], sizes: np.ndarray,
                        max_bytes: int = DEFAULT_MAX_BYTES, layout: str = "auto"
                        ) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact law of ``(S1, S2)`` for clusters with the given table laws and sizes.

    Returns ``(d_vectors int64[S, K], probs float64[S], L)``: one representative vector of
    per-cluster differences ``d_k`` (0 for empty clusters) per reachable ``(S1, S2)``.
    Requires every cluster law to have a fixed size (no pair loss).  ``layout``: 'dense'
    (numba over the full state rectangle), 'sparse' (reachable states only) or 'auto'
    (dense when it fits in ``max_bytes``).  Both give the same states and probabilities."""
    if layout not in ("auto", "dense", "sparse"):
        raise ValueError(f"layout must be 'auto', 'dense' or 'sparse', got {layout!r}")
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(laws) != sizes.size:
        raise ValueError(f"{len(laws)} cluster laws but {sizes.size} sizes")
    for k, law in enumerate(laws):
        if law_has_loss(law):
            raise ExactUnsupported("the cluster-moment engine needs fixed cluster sizes: "
                                   f"cluster {k} can lose pairs")
    active = np.flatnonzero(sizes > 0)
    if active.size == 0:
        raise ExactUnsupported("every cluster is empty")
    L = 1
    for m in np.unique(sizes[active]):
        L = L * int(m) // math.gcd(L, int(m))
    if L > 32767:
        raise ExactUnsupported(f"cluster sizes need a common denominator of {L} (> 32767)")
    n = active.size
    s1_max = n * L
    s2_max = n * L * L
    per_step = (2 * s1_max + 1) * (s2_max + 1)
    bp_type = np.int8 if L <= 127 else np.int16
    sentinel = int(np.iinfo(bp_type).min)
    need = per_step * n * np.dtype(bp_type).itemsize + 2 * per_step * 8
    value_laws = []
    for k in active:
        d_vals, d_probs = difference_law(laws[k])
        value_laws.append(((d_vals * (L // int(sizes[k]))).astype(np.int64), d_probs))
    if layout == "dense" and need > max_bytes:
        raise ExactUnsupported(f"dense cluster-moment DP needs {need / 1e6:,.0f} MB (limit {max_bytes / 1e6:,.0f} MB)")
    if layout == "sparse" or need > max_bytes:
        vecs, probs = _sparse(value_laws, s1_max, s2_max, max_bytes)
        d = np.zeros((probs.size, sizes.size), np.int64)
        d[:, active] = vecs // (L // sizes[active])[None, :]
        return d, probs, L
    off = s1_max
    P = np.zeros((2 * s1_max + 1, s2_max + 1))
    Q = np.zeros_like(P)
    bp = np.full((n, 2 * s1_max + 1, s2_max + 1), sentinel, bp_type)
    P[off, 0] = 1.0
    for step, (vals, qs) in enumerate(value_laws):
        Q[:] = 0.0
        _step(P, Q, bp, step, vals, qs, -step * L, step * L, step * L * L, off, sentinel)
        P, Q = Q, P
    vecs, probs = _expand(P, bp, off, n, s1_max, s2_max)
    d = np.zeros((probs.size, sizes.size), np.int64)
    d[:, active] = vecs // (L // sizes[active])[None, :]
    return d, probs, L


def _sparse(value_laws, s1_max: int, s2_max: int, max_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """The same DP over the reachable states only (sorted keys), for wide denominators
    where the dense array would not fit; one (parent, v) back-pointer per state and step."""
    width = s2_max + 1
    if (2 * s1_max + 1) * width >= 2 ** 62:
        raise ExactUnsupported("cluster-moment state keys would overflow int64")
    s1 = np.zeros(1, np.int64)
    s2 = np.zeros(1, np.int64)
    p = np.ones(1)
    trail = []
    used = 0
    n = len(value_laws)
    for step, (vals, qs) in enumerate(value_laws):
        c1 = (s1[:, None] + vals[None, :]).ravel()
        c2 = (s2[:, None] + (vals * vals)[None, :]).ravel()
        cp = (p[:, None] * qs[None, :]).ravel()
        key = (c1 + s1_max) * width + c2
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        p = np.bincount(inv.ravel(), weights=cp, minlength=uniq.size)
        keep = p > 0.0
        trail.append(((first // vals.size)[keep], vals[first % vals.size][keep]))
        kept = int(keep.sum())
        used += kept * 16
        # each later step keeps as many states or more (adding one value of the next cluster
        # maps the states one-to-one; only states whose probability underflows are dropped),
        # so refuse once that projection passes the limit: at 2000 clusters of 3 trials it
        # refuses at step ~170 instead of after 4.8 s of steps
        if used + kept * 16 * (n - 1 - step) > max_bytes:
            raise ExactUnsupported(f"cluster-moment DP needs more than {max_bytes / 1e6:,.0f} MB of states")
        uniq, p = uniq[keep], p[keep]
        s1, s2 = uniq // width - s1_max, uniq % width
    vecs = np.empty((p.size, n), np.int64)
    idx = np.arange(p.size)
    for step in range(n - 1, -1, -1):
        parent, v = trail[step]
        vecs[:, step] = v[idx]
        idx = parent[idx]
    return vecs, p


def moment_tables(d_vectors: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Representative cluster tables: cluster k holds ``(m_k - |d_k|, max(-d_k, 0),
    max(d_k, 0), 0)`` -- the same size and difference, hence the same mean."""
    d = np.asarray(d_vectors, dtype=np.int64)
    m = np.asarray(sizes, dtype=np.int64)[None, :]
    out = np.empty(d.shape + (4,), np.int32)
    out[..., 0] = m - np.abs(d)
    out[..., 1] = np.maximum(-d, 0)
    out[..., 2] = np.maximum(d, 0)
    out[..., 3] = 0
    return out
