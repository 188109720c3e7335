"""The rules practitioners run today, as methods to measure: ``lmeval_ztest``
(lm-evaluation-harness's comparator z-test), ``trial_bootstrap`` (naive paired bootstrap over
trials) and ``inspect_cluster_se`` (Inspect AI's clustered stderr per model, combined).

Validated against the slow references of ``methods.reference.practitioner`` (the published
formulas applied literally to expanded score vectors), a worked example, the seed chapter's
exact false-pass probability 0.96^30 (which all three reproduce: their zero-variance pass), and
edge cases."""
from __future__ import annotations

from simlab.hashing import is_hash
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from methods import registry
from methods.protocol import Estimand
from methods.reference import practitioner as ref

RULES = ["lmeval_ztest", "trial_bootstrap", "inspect_cluster_se"]
HYP = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def method(name):
    m = registry.get(name)
    return m.with_options(resamples=199) if name == "trial_bootstrap" else m


def reference(name, t, margin):
    if name == "trial_bootstrap":
        return ref.trial_bootstrap(t, margin, resamples=199)
    return getattr(ref, name)(t, margin)


@pytest.mark.parametrize("name, estimand", [("lmeval_ztest", Estimand.TRIAL), ("trial_bootstrap", Estimand.TRIAL),
                                            ("inspect_cluster_se", Estimand.CLUSTER)])
def test_registered(name, estimand):
    m = registry.get(name)
    assert name in registry.names("fixed") and m.estimand is estimand and m.citation and m.summary
    assert is_hash(m.identity.source_sha256)


@pytest.mark.parametrize("name", RULES)
@HYP
@given(rows=st.lists(st.tuples(*[st.integers(0, 3)] * 4), min_size=1, max_size=12),
       margin=st.sampled_from([0.03, 0.2]))
def test_kernel_matches_reference(name, rows, margin):
    t = np.array(rows, dtype=np.int64)
    got = method(name).analyze(t, margin)
    lo, hi, est, status = reference(name, t, margin)
    if math.isnan(est):
        assert math.isnan(got.estimate) and got.status == "inconclusive"
        return
    assert got.estimate == pytest.approx(est, abs=1e-12)
    if math.isnan(lo):
        assert got.status == "inconclusive"
        return
    assert got.lower == pytest.approx(lo, abs=1e-12) and got.upper == pytest.approx(hi, abs=1e-12)
    assert got.status == status


def test_lmeval_worked_example():
    """acc 0.6 vs 0.7 on 100 documents: the script's se^2 = p(1-p)/(n-1) per model."""
    r = registry.get("lmeval_ztest").analyze([[50, 10, 20, 20]], 0.03)
    half = stats.norm.isf(0.025) * math.sqrt((0.6 * 0.4 + 0.7 * 0.3) / 99)
    assert r.estimate == pytest.approx(0.1) and r.lower == pytest.approx(0.1 - half, abs=1e-14)


def test_inspect_formula_on_paired_differences_is_clustered_normal():
    """The docstring's remark: Inspect's clustered stderr applied to per-sample paired differences
    (each sample its own cluster) is the clustered normal interval's standard error."""
    rng = np.random.default_rng(5)
    t = rng.integers(0, 4, size=(17, 4))
    n = t.sum(axis=1)
    d = (t[:, 2] - t[:, 1]) / n
    se = ref.inspect_stderr(d, np.arange(d.size))
    cn = registry.get("clustered_normal").with_options(min_clusters=2).analyze(t, 0.03)
    assert (cn.upper - cn.lower) / 2 == pytest.approx(stats.norm.isf(0.025) * se, rel=1e-12)


@pytest.mark.parametrize("name", RULES)
def test_seed_false_pass_is_exactly_096_pow_30(name):
    """Reference number (tests/reference_values.py): 30 customers x 1 trial, baseline always passes, candidate loses
    w.p. 0.04, margin 0.03.  Each rule depends only on the number j of losers; it passes at j = 0
    (zero variance) and fails for j >= 1, so P(pass) = 0.96^30 = 0.29386 exactly."""
    m = registry.get(name)
    p = 0.0
    for j in range(31):
        t = np.zeros((30, 4), int)
        t[:, 0] = 1
        t[:j] = (0, 1, 0, 0)
        if m.analyze(t, 0.03).passed:
            p += stats.binom.pmf(j, 30, 0.04)
    assert p == pytest.approx(0.96 ** 30, abs=1e-12)


@pytest.mark.parametrize("name", RULES)
def test_edge_cases(name):
    m = registry.get(name)
    for row in ([3, 0, 0, 0], [0, 0, 0, 3]):  # all pass, all fail: the zero-variance pass
        r = m.analyze(np.tile(row, (30, 1)), 0.03)
        assert (r.lower, r.upper, r.estimate, r.status) == (0.0, 0.0, 0.0, "pass")
    r = m.analyze(np.tile([1, 0, 0, 2], (30, 1)), 0.03)  # ties, pass rate 1/3 in both arms
    if name == "lmeval_ztest":  # unpaired: each arm's 1/3 rate has variance, the pairing is ignored
        half = stats.norm.isf(0.025) * math.sqrt(2 * (1 / 3) * (2 / 3) / 89)
        assert r.lower == pytest.approx(-half, abs=1e-14) and r.status == "fail"
    else:  # paired resamples all tie; every sample's rate is the same in both arms
        assert (r.lower, r.upper, r.status) == (0.0, 0.0, "pass")
    r = m.analyze(np.tile([0, 3, 0, 0], (30, 1)), 0.03)
    assert r.estimate == -1.0 and r.status == "fail"
    assert m.analyze([[0, 0, 0, 0]], 0.03).status == "inconclusive"
    one = m.analyze([[0, 1, 0, 0]], 0.03)  # one trial (or one sample): no standard error
    assert one.status == "inconclusive" and one.estimate == -1.0
    t = np.array([[2, 1, 0, 0], [0, 0, 3, 1], [1, 1, 1, 1]])
    a, b = m.analyze(t, 0.1), m.analyze(np.insert(t, 2, [0, 0, 0, 0], axis=0), 0.1)
    assert (a.lower, a.upper, a.estimate, a.status) == (b.lower, b.upper, b.estimate, b.status)


def test_trial_bootstrap_is_keyed_by_the_table():
    m = registry.get("trial_bootstrap")
    t = np.array([[5, 2, 1, 2], [3, 0, 2, 5]])
    batch = m.batch(np.stack([t, t[::-1], t]), 0.1)
    assert batch.lower[0] == batch.lower[1] == batch.lower[2]  # pooled counts decide, not order or index
