"""bayes_hierarchical's grouped mixture against version 1 (methods.reference.hierarchical_v1):
the same bounds within 1e-9 (the documented tolerance is 1e-6; measured about 1e-14) on
designs that exercise grouping, chaining, the interpolant and its exact fall-back."""
import numpy as np
import pytest

from methods import registry
from methods.fixed import _dirichlet_mixture
from methods.fixed.bayes_hierarchical import cell_terms
from methods.reference.hierarchical_v1 import cell_terms_v1, intervals_v1
from simlab.generate import simulate_tables
from simlab.scenario import ExplicitSizes, FixedSize, PairedScenario

CASES = [
    PairedScenario(cells=(0.90, 0.04, 0.03, 0.03), clusters=40, cluster_size=FixedSize(trials=10), rho=0.1),
    PairedScenario(cells=(0.6, 0.2, 0.1, 0.1), clusters=12, cluster_size=FixedSize(trials=6), rho=0.4),
    PairedScenario(cells=(0.96, 0.04, 0.0, 0.0), clusters=30, cluster_size=FixedSize(trials=1)),   # no 01 at all
    PairedScenario(cells=(0.7, 0.1, 0.1, 0.1), clusters=6, cluster_size=ExplicitSizes(sizes=(9, 0, 3, 1, 7, 2))),
]


@pytest.mark.parametrize("sc", CASES, ids=lambda s: f"K{s.clusters}")
def test_bounds_match_version_1(sc):
    tables = simulate_tables(sc, 7, 5)
    new = registry.get("bayes_hierarchical").batch(tables, 0.03, 0.025)
    old = intervals_v1(tables, 0.025)
    np.testing.assert_allclose(new.lower, old[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(new.upper, old[:, 1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(new.estimate, old[:, 2], rtol=0, atol=1e-12)


def test_stirling_products_on_ratios_match_log_space():
    sc = PairedScenario(cells=(0.5, 0.2, 0.2, 0.1), clusters=60, cluster_size=FixedSize(trials=12), rho=0.3)
    t = simulate_tables(sc, 3, 2)
    for j in range(4):
        L, c0 = cell_terms(t, 0, j)
        L1, c1 = cell_terms_v1(t, 0, j)
        assert c0 == c1
        np.testing.assert_allclose(L, L1, rtol=1e-12, atol=1e-9)


def test_interpolant_is_built_and_checked():
    import methods.fixed.bayes_hierarchical as bh

    sc = CASES[0]
    t = simulate_tables(sc, 1, 1)
    mix, _ = bh.posterior(t, 0, np.empty(4))
    cz = mix[11]
    assert cz.size in (13, 25, 49, 97, 193)  # a Chebyshev grid of degree 12 * 2^k was accepted
    assert _dirichlet_mixture.INTERP_TOL <= 1e-10
