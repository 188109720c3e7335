"""The bootstraps' histogram path (clusters of one size) lists exactly the statistics the
sort lists, so both bootstrap methods decide exactly as before."""
import numpy as np
import pytest

from methods.fixed._bootstrap import HISTOGRAM_BINS_PER_RESAMPLE, sorted_bootstrap, sorted_bootstrap_by_sort
from simlab.generate import simulate_tables
from simlab.scenario import ExplicitSizes, FixedSize, PairedScenario


def _both(tables, B):
    K = tables.shape[1]
    for r in range(tables.shape[0]):
        got, ref = np.full(B, np.nan), np.full(B, np.nan)
        m1 = sorted_bootstrap(tables, r, np.empty(K, np.int64), np.empty(K, np.int64), got)
        m2 = sorted_bootstrap_by_sort(tables, r, np.empty(K, np.int64), np.empty(K, np.int64), ref)
        yield m1, m2, got, ref


@pytest.mark.parametrize("K,M,rho,cells", [(30, 3, 0.1, (0.90, 0.04, 0.03, 0.03)), (2, 1, 0.0, (0.5, 0.2, 0.2, 0.1)),
                                           (100, 10, 0.3, (0.6, 0.2, 0.1, 0.1)), (7, 4, 0.0, (0.96, 0.04, 0, 0))])
@pytest.mark.parametrize("B", [1, 2, 999])
def test_histogram_lists_the_sorted_statistics(K, M, rho, cells, B):
    sc = PairedScenario(cells=cells, clusters=K, cluster_size=FixedSize(trials=M), rho=rho)
    tables = simulate_tables(sc, 3, 40)
    for m1, m2, got, ref in _both(tables, B):
        assert m1 == m2
        if m1 >= 2:
            assert np.array_equal(got, ref)  # bitwise: same divisions, same order


def test_unequal_sizes_and_empty_clusters_take_the_sort():
    sc = PairedScenario(cells=(0.7, 0.1, 0.1, 0.1), clusters=6, cluster_size=ExplicitSizes(sizes=(2, 0, 3, 2, 0, 1)))
    for m1, m2, got, ref in _both(simulate_tables(sc, 5, 30), 199):
        assert m1 == m2 == 4 and np.array_equal(got, ref)
    eq = PairedScenario(cells=(0.7, 0.1, 0.1, 0.1), clusters=5, cluster_size=ExplicitSizes(sizes=(3, 0, 3, 3, 0)))
    for m1, m2, got, ref in _both(simulate_tables(eq, 5, 30), 199):  # empty clusters do not break "one size"
        assert m1 == m2 == 3 and np.array_equal(got, ref)


def test_too_many_bins_fall_back_to_the_sort():
    B = 3
    K, M = 40, 1  # 2 K M + 1 = 81 bins > 16 * 3 resamples
    assert 2 * K * M + 1 > HISTOGRAM_BINS_PER_RESAMPLE * B
    sc = PairedScenario(cells=(0.5, 0.2, 0.2, 0.1), clusters=K, cluster_size=FixedSize(trials=M))
    for m1, m2, got, ref in _both(simulate_tables(sc, 1, 10), B):
        assert np.array_equal(got, ref)
