"""methods/explain.py: every inconclusive analysis says why."""
from __future__ import annotations

import numpy as np

from methods import registry
from methods.explain import explain


def _reasons(name, rows, **options):
    m = registry.get(name)
    if options:
        m = m.with_options(**options)
    table = np.array(rows, np.int64)
    r = m.analyze(table, 0.03, 0.025)
    return r.status, explain(m, table, r.status)


def test_clustered_normal_names_min_clusters():
    status, why = _reasons("clustered_normal", [[3, 1, 0, 0], [2, 0, 1, 0]])
    assert status == "inconclusive" and len(why) == 1 and "min_clusters=30" in why[0] and "2 non-empty" in why[0]


def test_variance_needs_two_clusters_even_with_a_low_minimum():
    status, why = _reasons("cluster_t", [[3, 1, 0, 0]])
    assert status == "inconclusive" and "1 non-empty cluster, fewer than 2 (min_clusters=2" in why[0]
    status, why = _reasons("cluster_t", [[3, 1, 0, 0], [0, 0, 0, 0]], min_clusters=0)
    assert status == "inconclusive" and "fewer than 2 (a between-cluster variance needs at least 2" in why[0]


def test_resampling_needs_two_clusters():
    status, why = _reasons("cluster_bootstrap", [[3, 1, 0, 0]])
    assert status == "inconclusive" and "resampling" in why[0]


def test_no_trials_and_decided_results():
    status, why = _reasons("paired_wald", [[0, 0, 0, 0], [0, 0, 0, 0]])
    assert status == "inconclusive" and why == ["no trials: all 2 clusters are empty"]
    status, why = _reasons("paired_wald", [[90, 1, 2, 7]])
    assert status != "inconclusive" and why == []


def test_every_inconclusive_fixed_method_gives_a_reason():
    for name in registry.names("fixed"):
        m = registry.get(name)
        for rows in ([[0, 0, 0, 0]], [[3, 1, 0, 0]], [[1, 0, 0, 0]] * 3):
            table = np.array(rows, np.int64)
            r = m.analyze(table, 0.03, 0.025)
            reasons = explain(m, table, r.status)
            assert (r.status == "inconclusive") == bool(reasons), (name, rows, r.status, reasons)
