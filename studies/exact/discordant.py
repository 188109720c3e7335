"""Exact certification engine ``exact-discordant``: the method's own kernel on every state.

Applies when (a) the pairs are independent -- one trial per cluster (rho then has no
effect: a cluster's single pair has the same law at every rho), or rho_max = 0 -- with
perfect labels and no looks, and (b) the method's decision depends on the data only
through the pooled discordant counts ``(n10, n01)`` (checked on the kernel itself by
``discordant_probe``: permuting pairs across clusters and relabelling concordant pairs
n11 <-> n00 never changes a result).  Then, at the null boundary with discordance ``q``,
``(n10, n01)`` is trinomial over ``N = K M`` pairs with the null-boundary rates of the
method's estimand (``simlab.estimands.null_pair_rates``: ``p10 = (q + m)/2``, ``p01 = (q -
m)/2`` for a difference, ``p10 = m``, ``p01 = q - m`` for the loss rate) whatever the
baseline, and

    P(pass | q) = sum over states (a, b) with a + b <= N of pass(a, b) Trin(a, b; N, p10, p01).

The kernel runs once per state (its pass/fail does not depend on q); each q is then a
weighted sum.  The search over q is branch and bound on the proven interval bound of
``methods.qualification.certificate`` (Bhattacharyya angle): start from a grid uniform in
``sqrt(q - m)`` (dense where p01 is small and the law moves fastest), and bisect every
interval whose bound exceeds the threshold while both ends are below it, until every
interval is proven below the threshold, a node is above it (exceeds), or the node budget
is spent (undetermined).
"""
from __future__ import annotations

import numba as nb
import numpy as np

from methods.protocol import PASS
from methods.qualification.certificate import discordant_law, interval_bounds

from studies.exact.applicability import MAX_STATES

PROBE_SEED = 20261130
BLOCK_CELLS = 1 << 22        # K x states per kernel call


def _result(method, tables, margin: float, alpha: float):
    """A fixed method's (status, lower, upper) on ``tables`` at one-sided level ``alpha``."""
    r = method.batch(np.ascontiguousarray(tables, np.int32), margin, alpha)
    return r.status, r.lower, r.upper


def _decide(method, tables: np.ndarray, margin: float, alpha: float) -> np.ndarray:
    return _result(method, tables, margin, alpha)[0] == PASS


def arrange(n10: np.ndarray, n01: np.ndarray, clusters: int, trials: int, concordant: int = 0) -> np.ndarray:
    """Representative tables [R, K, 4]: the pooled pairs dealt into K clusters of M pairs,
    discordant ones first, the rest concordant of type ``concordant`` (0: n11, 3: n00).
    Cluster c holds positions [cM, (c+1)M) of the row ``1^n10 2^n01 c^rest``, so its counts
    are differences of clipped prefix lengths (no per-pair work)."""
    start = np.arange(clusters, dtype=np.int64)[None, :] * trials
    ones = np.clip(np.asarray(n10, np.int64)[:, None] - start, 0, trials)
    upto = np.clip((np.asarray(n10, np.int64) + np.asarray(n01, np.int64))[:, None] - start, 0, trials)
    out = np.zeros((ones.shape[0], clusters, 4), np.int32)
    out[:, :, 1] = ones
    out[:, :, 2] = upto - ones
    out[:, :, concordant] = trials - upto
    return out


def discordant_probe(method, clusters: int, trials: int, margin: float, alpha: float) -> bool:
    """Does the method see only the pooled discordant counts?  Random pair arrangements,
    cluster permutations and concordant relabellings must give identical results, on random
    pooled states and on states near the margin's decision."""
    rng = np.random.default_rng(PROBE_SEED)
    N = clusters * trials
    p = rng.dirichlet(np.ones(3), size=48)
    counts = np.array([rng.multinomial(N, pi) for pi in p])
    counts[0] = (0, 0, N)
    counts[1] = (N, 0, 0)
    counts[2] = (0, N, 0)
    # and states near a decision: discordance up to 4 margins, difference within [-2m, m] (the
    # random states above are mostly far from it at large N, where every dealing decides alike)
    near = np.random.default_rng(PROBE_SEED + 1)
    q = near.uniform(0.0, 4.0 * margin, 48)
    d = near.uniform(-2.0 * margin, margin, 48)
    n10 = np.clip(np.round(N * (q - d) / 2.0), 0, N).astype(np.int64)
    n01 = np.minimum(np.clip(np.round(N * (q + d) / 2.0), 0, N).astype(np.int64), N - n10)
    counts = np.concatenate([counts, np.stack([n10, n01, N - n10 - n01], axis=1)])
    R = len(counts)
    n10, n01 = counts[:, 0].astype(np.int64), counts[:, 1].astype(np.int64)
    base = arrange(n10, n01, clusters, trials)
    variants = [arrange(n10, n01, clusters, trials, concordant=3)]
    shuffled = base.copy()
    for r in range(R):   # deal the same pooled pairs differently
        kinds = rng.permutation(np.repeat(np.arange(4), [N - n10[r] - n01[r], n10[r], n01[r], 0]))
        kinds = np.where((kinds == 0) & (rng.random(N) < 0.5), 3, kinds).reshape(clusters, trials)
        shuffled[r] = np.stack([np.count_nonzero(kinds == j, axis=1) for j in range(4)], axis=1)
    variants.append(shuffled)
    ref = _result(method, base, margin, alpha)
    for v in variants:
        got = _result(method, v, margin, alpha)
        if not np.array_equal(ref[0], got[0]):
            return False
        for x, y in zip(ref[1:], got[1:]):
            if not np.allclose(x, y, rtol=1e-12, atol=1e-12, equal_nan=True):
                return False
    return True


@nb.njit(cache=True)
def _trinomial_sums(logcoef, a, b, c, law, out):
    """out[i] = sum_s exp(logcoef_s + a_s log p10 + b_s log p01 + c_s log pc) at law[i];
    a zero probability contributes only where its count is zero (0 log 0 = 0)."""
    for i in range(law.shape[0]):
        l10 = np.log(law[i, 0]) if law[i, 0] > 0.0 else -np.inf
        l01 = np.log(law[i, 1]) if law[i, 1] > 0.0 else -np.inf
        lc = np.log(law[i, 2]) if law[i, 2] > 0.0 else -np.inf
        acc = 0.0
        for s in range(logcoef.shape[0]):
            x = logcoef[s]
            if a[s] > 0:
                x += a[s] * l10
            if b[s] > 0:
                x += b[s] * l01
            if c[s] > 0:
                x += c[s] * lc
            acc += np.exp(x)
        out[i] = acc


class DiscordantStates:
    """Every state (n10, n01) of N pairs, the kernel's pass indicator, and the trinomial
    log-coefficients; ``rates(q)`` is the exact false-pass rate at each discordance."""

    def __init__(self, method, clusters: int, trials: int, margin: float, alpha: float):
        self.estimand = method.estimand.value
        N = clusters * trials
        n_states = (N + 1) * (N + 2) // 2
        if n_states > MAX_STATES:
            raise ValueError(f"{n_states:,} discordant states (N = {N} pairs) exceed the exact engine's "
                             f"{MAX_STATES:,}")
        a, b = np.triu_indices(N + 1)      # a <= b: reindex to a + b' <= N below
        a, b = a.astype(np.int64), (b - a).astype(np.int64)
        self.N, self.margin = N, margin
        # a method that is a function of the pooled table runs on one pooled cluster per state
        # (studies.exact.probes 'pooled'), else on K clusters of M pairs (``arrange``)
        from studies.exact.probes import probe
        pooled = probe("pooled", method, alpha, [trials] * clusters)
        k, m = (1, N) if pooled else (clusters, trials)
        self.representation = "one pooled cluster" if pooled else f"{clusters} clusters of {trials}"
        passed = np.zeros(a.size, bool)
        step = max(1, BLOCK_CELLS // (k * m))
        for s in range(0, a.size, step):
            passed[s:s + step] = _decide(method, arrange(a[s:s + step], b[s:s + step], k, m), margin, alpha)
        keep = passed
        self.a, self.b = a[keep], b[keep]
        self.c = N - self.a - self.b
        from scipy.special import gammaln   # here, not at import: a refused --engine exact needs only the probe

        self.logcoef = gammaln(N + 1) - gammaln(self.a + 1) - gammaln(self.b + 1) - gammaln(self.c + 1)
        self.states = int(a.size)

    def rates(self, q: np.ndarray) -> np.ndarray:
        law = np.ascontiguousarray(discordant_law(np.atleast_1d(q), self.margin, self.estimand))
        out = np.empty(law.shape[0])
        _trinomial_sums(self.logcoef, self.a, self.b, self.c, law, out)
        return np.minimum(out, 1.0)


def search(states: DiscordantStates, q_lo: float, q_hi: float, threshold: float, initial: int = 64,
           max_nodes: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Branch and bound over q in [q_lo, q_hi] (module docstring); sorted nodes and rates."""
    m = states.margin
    if q_hi <= q_lo:
        q = np.array([q_lo])
        return q, states.rates(q)
    u = np.linspace(np.sqrt(q_lo - m), np.sqrt(q_hi - m), initial)
    q = np.unique(np.clip(m + u * u, q_lo, q_hi))
    r = states.rates(q)
    while q.size < max_nodes:
        if r.max() > threshold:   # decided (exceeds): sharpen the worst node's neighbourhood
            i = int(np.argmax(r))
            new = [x for x in ((q[max(i - 1, 0)] + q[i]) / 2, (q[i] + q[min(i + 1, q.size - 1)]) / 2)
                   if not np.any(np.isclose(x, q, rtol=0, atol=1e-12))]
            if not new or q.size > initial + 64:
                break
        else:
            bound = interval_bounds(q, r, m, states.N, states.estimand)
            bad = np.flatnonzero(bound > threshold)
            if bad.size == 0:
                break
            new = list((q[bad] + q[bad + 1]) / 2)
            new = new[:max_nodes - q.size]
        new = np.array(new)
        q = np.concatenate([q, new])
        r = np.concatenate([r, states.rates(new)])
        order = np.argsort(q, kind="stable")
        q, r = q[order], r[order]
    return q, r
