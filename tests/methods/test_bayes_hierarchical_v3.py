"""bayes_hierarchical version 3 (``methods.fixed._hier_quadrature``; the posterior's
convolution and alpha integrals windowed): every piece against an independent or a
previous computation, on mixtures large enough to take the new path.

* pair sums per group against scipy's incomplete beta (both tails);
* the tail probability with and without the interpolant in x, and against version 2's
  quadrature (``_dirichlet_mixture``) on the same mixture;
* whole intervals against version 1 (``methods.reference.hierarchical_v1``) on a design
  with more than ``_X_MIN_PAIRS`` pairs;
* the concave-window convolution and the windowed alpha integrals against brute force
  (and a non-concave input takes the full sum).
"""
import numba as nb
import numpy as np
import pytest
from scipy import special, stats

from methods import registry
from methods.fixed import _concentration
from methods.fixed import _hier_quadrature as hq
from methods.fixed import _dirichlet_mixture as rs
from methods.fixed import bayes_hierarchical as bh
from methods.reference.hierarchical_v1 import intervals_v1, log_alpha_integrals_v1
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize, PairedScenario

# 13,000 pairs (K = 100 x 10, discordance 0.5, difference -0.1) and 3,500 (K = 60 x 6)
LARGE = PairedScenario(cells=(0.25, 0.3, 0.2, 0.25), clusters=100, cluster_size=FixedSize(trials=10), rho=0.1)
MEDIUM = PairedScenario(cells=(0.25, 0.3, 0.25, 0.2), clusters=60, cluster_size=FixedSize(trials=6), rho=0.2)


@nb.njit
def _posterior(t, r):
    meta = np.empty(4)
    mix, _ = bh.posterior(t, r, meta)
    return mix, meta


@pytest.fixture(scope="module")
def large():
    t = simulate_tables(LARGE, 11, 2)
    mix, meta = _posterior(t, 0)
    assert mix[3].size >= hq._X_MIN_PAIRS          # the new path is the one under test
    return mix, meta, hq.chain_plan(mix)


@pytest.mark.parametrize("upper", [False, True])
def test_group_sums_match_scipy(large, upper):
    mix, _, plan = large
    pa, pb, pw, pg = mix[3], mix[4], mix[6], mix[7]
    ng = mix[0].shape[1]
    W = np.bincount(pg, weights=pw, minlength=ng)
    np.testing.assert_allclose(plan[2], W, rtol=1e-13)
    a, b = (pb, pa) if upper else (pa, pb)      # the upper tail needs I_x(b, a)
    for x in (0.3, 0.42, 0.5, 0.61):
        Q, dQ = np.empty(ng), np.empty(ng)
        hq.group_sums(x, np.log(x), np.log1p(-x), upper, mix, plan, Q, dQ, np.empty(hq._BLOCK))
        Qr = np.bincount(pg, weights=pw * special.betainc(a, b, x), minlength=ng)
        Tr = x * (1 - x) * stats.beta.pdf(x, a, b)
        dQr = np.bincount(pg, weights=pw * Tr, minlength=ng)
        assert np.max(np.abs(Q - Qr) / W) < 1e-12
        assert np.max(np.abs(dQ - dQr) / np.maximum(dQr, 1e-300)) < 1e-9


@pytest.mark.parametrize("upper", [False, True])
def test_tail_probability_matches_version_2_and_the_exact_nodes(large, upper):
    mix, meta, plan = large
    ng = mix[0].shape[1]
    for k in (1.0, 2.0, 3.0):
        c = abs(meta[2] + (k if upper else -k) * meta[3])
        work = (np.empty(ng), np.empty(ng), np.empty(hq._BLOCK))
        xi = hq.x_interpolant(c, upper, mix, meta, plan, work[2])
        assert xi[0].size > 0                      # interpolated, then checked against exact values
        new = hq.tail_probability(c, upper, mix, meta, plan)
        old = rs.tail_probability(c, upper, mix, meta)
        assert new[0] == pytest.approx(old[0], rel=1e-9, abs=1e-12)
        assert new[1] == pytest.approx(old[1], rel=1e-7)
        # the integrand on the interpolant equals the exact pair sums at bulk nodes
        none = (np.empty(0), np.empty(0), np.empty((0, ng)), np.empty((0, ng)))
        s = meta[0] + np.array([-3.0, -0.5, 0.0, 2.0]) * meta[1]
        vs = np.sqrt((s - c) / (1 - c))
        lh = rs.panel_log_h(vs, c, mix)
        for i, v in enumerate(vs):
            fi, di = hq._tail_integrand(v, c, upper, mix, plan, xi, lh[i], work)
            fe, de = hq._tail_integrand(v, c, upper, mix, plan, none, lh[i], work)
            assert fi == pytest.approx(fe, rel=1e-9, abs=1e-12)
            assert di == pytest.approx(de, rel=1e-7)


def test_credible_interval_matches_version_2_on_the_same_mixture(large):
    mix, meta, _ = large
    new = hq.credible_interval(0.025, mix, meta)
    old = rs.grouped_credible_interval(0.025, mix, meta)
    np.testing.assert_allclose(new, old, rtol=0, atol=1e-10)


def test_intervals_match_version_1_on_the_new_path():
    t = simulate_tables(MEDIUM, 5, 1)
    mix, _ = _posterior(t, 0)
    assert mix[3].size >= hq._X_MIN_PAIRS
    new = registry.get("bayes_hierarchical").batch(t, 0.03, 0.025)
    old = intervals_v1(t, 0.025)
    np.testing.assert_allclose(new.lower, old[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(new.upper, old[:, 1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(new.estimate, old[:, 2], rtol=0, atol=1e-12)


def _brute_convolution(L11, L00):
    full = L11[:, None] + L00[None, :]
    q = np.add.outer(np.arange(L11.size), np.arange(L00.size)).ravel()
    mx = np.full(L11.size + L00.size - 1, -np.inf)
    np.maximum.at(mx, q, full.ravel())
    return mx + np.log(np.bincount(q, weights=np.exp(full.ravel() - mx[q])))


def test_concave_convolution_matches_brute_force():
    t = simulate_tables(PairedScenario(cells=(0.6, 0.02, 0.01, 0.37), clusters=200,
                                       cluster_size=FixedSize(trials=10), rho=0.3), 3, 1)
    L11, _ = bh.cell_terms(t, 0, 0)
    L00, _ = bh.cell_terms(t, 0, 3)
    assert bh._concave(L11) and bh._concave(L00)
    want = _brute_convolution(L11, L00)
    got = bh._rest_convolution(L11, L00)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-9)


def test_non_concave_sequences_take_the_full_sum():
    rng = np.random.default_rng(4)
    L11 = rng.normal(0, 30, 60)
    L00 = np.cumsum(rng.normal(0, 5, 45))
    assert not bh._concave(L11)
    want = _brute_convolution(L11, L00)
    np.testing.assert_allclose(bh._rest_convolution(L11, L00), want, rtol=1e-14, atol=1e-9)
    np.testing.assert_allclose(bh._full_convolution(L11, L00), want, rtol=1e-14, atol=1e-9)


def test_windowed_alpha_integrals_match_version_1():
    t = simulate_tables(LARGE, 2, 1)
    sizes, counts = _concentration.cluster_sizes(t, 0)
    n = int(t[0].sum())
    got = _concentration.log_alpha_integrals(sizes, counts, n // 3, n)
    want = log_alpha_integrals_v1(sizes, counts, n // 3, n)
    np.testing.assert_allclose(got - got[0], want - want[0], rtol=0, atol=1e-9)
