"""The batched sampler (simlab.sampling.shared): scenarios that share laws draw, in one
call, bitwise the tables and cluster moments of their own CompositionSource."""
from __future__ import annotations

import numpy as np
import pytest

from simlab.exact import ExactUnsupported
from simlab.sampling import CompositionSource
from simlab.sampling.shared import SharedComposition, group_length, shared_law
from simlab.sampling.sources import composition_key
from simlab.scenario import FixedSize, LabelNoise, PairedScenario, PoissonSize

SEED = 11


def _scenario(clusters: int, trials: int, rho: float, noise: LabelNoise = LabelNoise(), baseline: float = 0.9):
    return PairedScenario.from_rates(baseline, -0.03, 0.1, clusters=clusters, cluster_size=FixedSize(trials=trials),
                                     rho=rho, label_noise=noise)


CASES = [(k, m, rho, noise) for m in (1, 2, 3, 10) for rho in (0.0, 0.2) for k in (1, 2, 7, 31, 100)
         for noise in (LabelNoise(), LabelNoise(candidate_sensitivity=0.9, baseline_specificity=0.95))]


def test_tables_and_moments_equal_each_scenarios_own_source():
    store = SharedComposition()
    added = []
    for k, m, rho, noise in CASES:
        sc = _scenario(k, m, rho, noise)
        try:
            src = CompositionSource(sc, SEED)
        except ExactUnsupported:
            with pytest.raises(ExactUnsupported):
                shared_law(sc)
            continue
        h = store.add(shared_law(sc), k, *composition_key(sc.key, SEED))
        assert store.moment_size[h] == src.moment_size and store.clusters[h] == k
        assert -(-k // group_length(shared_law(sc)[0].shape[0], k)) == src.groups
        added.append((h, src))
    assert len(added) > 40
    for h, src in added:
        k = src.clusters
        out = np.full((260, k, 4), -1, np.int32)
        store.fill(out, [(h, 1000, 150, 100), (h, 7, 100, 0)])  # two ranges, out of order
        assert np.array_equal(out[:100], src.tables(7, 107)) and np.array_equal(out[100:250], src.tables(1000, 1150))
        assert np.all(out[250:] == -1)  # rows no segment names stay untouched
        if src.moment_size is not None:
            mom = np.zeros((300, 3), np.int64)
            store.fill_moments(mom, [(h, 0, 300, 0)])
            assert np.array_equal(mom, src.fill_moments(np.zeros((300, 3), np.int64), 0))


def test_one_call_draws_many_scenarios_and_equal_laws_share_tables():
    store = SharedComposition()
    srcs = []
    for rho in (0.0, 0.1, 0.5):  # one-trial clusters: the same law at every rho -> one set of tables
        for k in (10, 20, 500):
            sc = _scenario(k, 1, rho)
            srcs.append((store.add(shared_law(sc), k, *composition_key(sc.key, SEED)), CompositionSource(sc, SEED)))
    assert len(store._joint) == 3  # groups of 6 clusters, remainders of 4 and 2
    segs = [(h, 5, 40, 40 * i) for i, (h, _) in enumerate(srcs)]
    mom = store.fill_moments(np.zeros((40 * len(srcs), 3), np.int64), segs)
    for i, (_, src) in enumerate(srcs):
        assert np.array_equal(mom[40 * i:40 * (i + 1)], src.fill_moments(np.zeros((40, 3), np.int64), 5))


def test_shared_law_declines_what_it_cannot_share_and_bad_segments_are_refused():
    poisson = PairedScenario.from_rates(0.9, -0.03, 0.1, clusters=10, cluster_size=PoissonSize(mean_trials=2.0))
    assert shared_law(poisson) is None
    sc = _scenario(10, 3, 0.0)
    store = SharedComposition()
    h = store.add(shared_law(sc), 10, *composition_key(sc.key, SEED))
    with pytest.raises(ValueError, match="not added"):
        store.fill_moments(np.zeros((5, 3), np.int64), [(h + 1, 0, 5, 0)])
    with pytest.raises(ValueError, match="outside"):
        store.fill_moments(np.zeros((5, 3), np.int64), [(h, 0, 5, 1)])
    with pytest.raises(ValueError, match="K"):
        store.fill(np.zeros((5, 11, 4), np.int32), [(h, 0, 5, 0)])
    with pytest.raises(ValueError, match="replications"):
        store.fill(np.zeros((5, 10, 4), np.int32), [(h, -1, 5, 0)])
