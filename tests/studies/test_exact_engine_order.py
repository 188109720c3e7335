"""The moments engine enumerates sufficient statistics that forget the order of the clusters,
so a method whose output depends on that order (the predictable-plug-in bounded-mean
intervals) must get no exact engine, even when the moment probes cannot refute it."""
from __future__ import annotations

from methods import registry
from simlab.scenario import FixedSize, PairedScenario
from studies.exact.fixed import exact_engine


def test_order_dependent_methods_get_no_moments_engine():
    scen = PairedScenario(cells=(0.9, 0.065, 0.035, 0.0), clusters=30, rho=0.1, cluster_size=FixedSize(trials=3))
    for name in ("empirical_bernstein", "betting_ci"):
        engine, why = exact_engine(scen, registry.get(name))
        assert engine is None and "order" in why
    assert exact_engine(scen, registry.get("cluster_t"))[0] == "moments"
