"""Clusters of many trials (issue 29): an exact cluster law is refused *before* it is
enumerated when it would hold too many tables (the composition sampler and the cost pilot
then fall back to the trial-level generator at once), and the enumeration over the
positive cells only gives the same bits as filtering the enumeration over all four cells."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from simlab.exact import ExactUnsupported, cluster_law
from simlab.exact import cluster_pmf
from simlab.sampling import source_name, table_source
from simlab.scenario import FixedSize, PairedScenario


def full_enumeration_law(cells, m, rho):
    """The law the way the module computed it before: every composition of m over all four
    cells, structural zeros filtered afterwards; the same float operations in the same order."""
    p = np.asarray(cells, dtype=np.float64)
    rows = [c for c in itertools.product(range(m + 1), repeat=4) if sum(c) == m]
    rows.sort(reverse=True)  # reverse lexicographic, first part slowest
    rows = [c for c in rows if all(p[j] > 0 or c[j] == 0 for j in range(4))]
    if rho == 0.0 or m == 1:
        tabs = [cluster_pmf._powers(float(x), m) for x in p]
        scale = 1.0
    else:
        alpha = (1.0 - rho) / rho
        tabs = [cluster_pmf._rising_ratios(alpha * float(x), alpha, m) for x in p]
        scale = cluster_pmf._rising_ratios(alpha, alpha, m)[m]
    probs = []
    for c in rows:
        v = float(math.factorial(m) // math.prod(math.factorial(x) for x in c))
        for j in range(4):
            v *= tabs[j][c[j]]
        probs.append(v / scale if scale != 1.0 else v)
    probs = np.array(probs)
    tables = np.array(rows, dtype=np.int32).reshape(-1, 4)
    keep = probs > 0
    return tables[keep], probs[keep] / math.fsum(probs)


@pytest.mark.parametrize("cells", [(0.9, 0.04, 0.03, 0.03), (0.96, 0.04, 0.0, 0.0), (0.0, 0.5, 0.5, 0.0),
                                   (0.7, 0.0, 0.3, 0.0), (1.0, 0.0, 0.0, 0.0), (0.5, 0.2, 0.0, 0.3)])
@pytest.mark.parametrize("m", [1, 2, 5, 9])
@pytest.mark.parametrize("rho", [0.0, 0.2])
def test_positive_cell_enumeration_is_the_same_law_bit_for_bit(cells, m, rho):
    tables, probs = cluster_law(cells, m, rho)
    ref_tables, ref_probs = full_enumeration_law(cells, m, rho)
    assert np.array_equal(tables, ref_tables)
    assert probs.tobytes() == ref_probs.tobytes()


def test_law_tables_counts_the_enumeration_without_building_it():
    assert cluster_pmf.law_tables((0.9, 0.04, 0.03, 0.03), 3) == 20
    assert cluster_pmf.law_tables((0.96, 0.04, 0.0, 0.0), 1500) == 1501
    assert cluster_pmf.law_tables((0.9, 0.04, 0.03, 0.03), 100_000) == math.comb(100_003, 3)
    assert cluster_law((0.9, 0.04, 0.03, 0.03), 3, 0.1)[0].shape[0] == 20


@pytest.mark.parametrize("trials", [1500, 100_000])
def test_many_trials_pick_the_trial_generator_without_enumerating(trials, monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("a law of a many-trial cluster was enumerated")

    monkeypatch.setattr(cluster_pmf, "compositions", refuse)
    sc = PairedScenario.from_rates(0.9, -0.03, 0.1, clusters=20, cluster_size=FixedSize(trials=trials), rho=0.1)
    assert source_name(sc) == "trial"
    assert table_source(sc, 1).name == "trial"
    with pytest.raises(ExactUnsupported, match="tables"):
        cluster_law(sc.cells, trials, 0.1)


def test_a_law_whose_coefficients_overflow_is_refused_not_a_crash():
    # C(2000, 1000) ~ 2e600 does not fit a float64: an OverflowError before this check
    with pytest.raises(ExactUnsupported, match="1e308"):
        cluster_law((0.96, 0.04, 0.0, 0.0), 1023, 0.0)  # 1023 ln 2 > 709
    assert cluster_law((0.96, 0.04, 0.0, 0.0), 1000, 0.0)[0].shape[0] > 0
