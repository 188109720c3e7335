"""bayes_hierarchical with many trials per cluster: the group polynomials of the S density
span far more than the float range (``_dirichlet_mixture._log_polys_many``).

Before the fix a plain Horner sum underflowed to a denormal at the quadrature's nodes far
from the bulk of S; its logarithm was wrong by hundreds, the S density overflowed, and the
tail probabilities summed to 2 (20 clusters x 200 trials) or the quadrature never met its
tolerance (one cluster of 4400 trials: minutes per interval, bounds meaningless).

* the evaluator against an exact log-sum-exp, on coefficients spanning e^-2000 .. 1 with
  leading zeros, at z from 0 to 1;
* both tails at 0 sum to one on the 20 x 200 design (version 3's path);
* the one-cluster table is among those checked against brute-force importance sampling
  of the model in ``tests/methods/test_methods_bayes.py``.
"""
import math

import numpy as np
import pytest
from scipy import special

from methods.fixed import _hier_quadrature as hq
from methods.fixed import _dirichlet_mixture as rs
from methods.fixed import bayes_hierarchical as bh
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize, PairedScenario


def _exact_log_polys(LG, zs):
    out = np.full((zs.size, LG.shape[1]), -math.inf)
    for k, z in enumerate(zs):
        for g in range(LG.shape[1]):
            q = np.flatnonzero(np.isfinite(LG[:, g]))
            if q.size == 0:
                continue
            if z == 0.0:
                out[k, g] = LG[0, g]
                continue
            out[k, g] = special.logsumexp(LG[q, g] + q * math.log(z))
    return out


def test_log_polys_match_log_sum_exp_across_the_float_range():
    rng = np.random.default_rng(5)
    width, ng = 900, 24
    LG = np.full((width, ng), -math.inf)
    for g in range(ng):
        lo = int(rng.integers(0, 700))                 # leading zeros: powers that underflow
        hi = int(rng.integers(lo + 1, width + 1))
        q = np.arange(lo, hi)
        # a concave log profile spanning up to e^-2000 (far below the float range) with top 0
        prof = -rng.uniform(0.0, 0.02) * (q - rng.uniform(lo, hi)) ** 2 - rng.uniform(0, 5) * (q - lo)
        LG[lo:hi, g] = prof - prof.max()
    LG[:, 3] = -math.inf                                # an empty group
    G = np.exp(LG)
    zs = np.array([0.0, 1e-300, 1e-9, 0.01, 0.2, 0.5, 0.77, 0.97, 0.999999, 1.0])
    got = rs._log_polys_many(G, LG, zs)
    want = _exact_log_polys(LG, zs)
    fin = np.isfinite(want)
    assert np.array_equal(fin, np.isfinite(got))
    assert np.all(np.abs(got[fin] - want[fin]) <= 1e-12 * np.maximum(1.0, np.abs(want[fin])))


def test_tails_at_zero_sum_to_one_with_many_trials_per_cluster():
    sc = PairedScenario(cells=(0.35, 0.15, 0.15, 0.35), clusters=20, cluster_size=FixedSize(trials=200), rho=0.05)
    t = simulate_tables(sc, 11, 1)
    meta = np.empty(4)
    mix, _ = bh.posterior(t, 0, meta)
    assert mix[3].size >= hq._X_MIN_PAIRS and mix[2].max() > 745   # version 3's path, beyond exp's range
    plan = hq.chain_plan(mix)
    below = hq.tail_probability(0.0, False, mix, meta, plan)[0]
    above = hq.tail_probability(0.0, True, mix, meta, plan)[0]
    assert below + above == pytest.approx(1.0, abs=1e-9)
