"""simlab.exact: cluster laws, pooled-table DP and cluster-moment DP against independent
slow implementations (scipy's pmfs, brute-force enumeration over every combination of
cluster tables).  No published worked example exists for these enumerations; the
checks are exact identities, to 1e-12."""
from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from simlab.exact import ExactUnsupported, cluster_law, cluster_laws, compositions
from simlab.exact.moments import moment_distribution, moment_tables
from simlab.exact.pooled import pooled_distribution, unit_cluster_tables
from simlab.scenario import ExplicitSizes, FixedSize, LabelNoise, Missingness, PairedScenario, PoissonSize

HYP = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def as_dict(tables, probs):
    out = defaultdict(float)
    for t, p in zip(map(tuple, np.asarray(tables)), probs):
        out[t] += p
    return out


cells_st = st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4).filter(lambda v: sum(v) > 0.05).map(
    lambda v: tuple(x / sum(v) for x in v))


def test_compositions_count_and_sum():
    for m, parts in ((0, 4), (1, 4), (3, 4), (5, 5), (7, 3)):
        c = compositions(m, parts)
        assert c.shape == (math.comb(m + parts - 1, parts - 1), parts)
        assert np.all(c.sum(axis=1) == m) and np.all(c >= 0)
        assert len({tuple(r) for r in c}) == c.shape[0]


@HYP
@given(cells=cells_st, m=st.integers(1, 7))
def test_multinomial_law_matches_scipy(cells, m):
    tables, probs = cluster_law(cells, m, 0.0)
    assert math.isclose(probs.sum(), 1.0, abs_tol=1e-12)
    for t, p in zip(tables, probs):
        assert p == pytest.approx(stats.multinomial.pmf(t, m, cells), rel=1e-9, abs=1e-15)
    # every table with positive scipy probability is present
    full = compositions(m, 4)
    pos = [tuple(t) for t in full if stats.multinomial.pmf(t, m, cells) > 0]
    assert set(pos) == {tuple(t) for t in tables}


@HYP
@given(cells=cells_st.filter(lambda c: min(c) > 1e-3), m=st.integers(2, 7), rho=st.floats(0.01, 0.9))
def test_dirichlet_multinomial_law_matches_scipy(cells, m, rho):
    alpha = (1 - rho) / rho
    tables, probs = cluster_law(cells, m, rho)
    assert math.isclose(probs.sum(), 1.0, abs_tol=1e-12)
    ref = stats.dirichlet_multinomial.pmf(tables, alpha * np.asarray(cells), m)
    np.testing.assert_allclose(probs, ref, rtol=1e-9, atol=1e-15)


def test_structural_zero_cells_and_one_trial_ignores_rho():
    t, p = cluster_law((0.96, 0.04, 0.0, 0.0), 1, 0.7)  # rho irrelevant for one trial
    assert as_dict(t, p) == pytest.approx({(1, 0, 0, 0): 0.96, (0, 1, 0, 0): 0.04})
    t, p = cluster_law((0.5, 0.5, 0.0, 0.0), 3, 0.3)
    assert np.all(t[:, 2:] == 0)


def test_measurement_law_is_multinomial_over_recorded_cells_with_loss_dropped():
    sc = PairedScenario(cells=(0.7, 0.1, 0.15, 0.05), clusters=2, cluster_size=FixedSize(trials=2),
                        label_noise=LabelNoise(baseline_sensitivity=0.9, candidate_specificity=0.8),
                        missingness=Missingness(loss_rate=0.2))
    Q = sc.measurement_matrix()
    q = np.asarray(sc.cells) @ Q
    tables, probs = cluster_laws(sc)[0]
    # brute force: two independent pairs, each recorded cell 0..3 or lost (4)
    ref = defaultdict(float)
    for a, b in itertools.product(range(5), repeat=2):
        t = [0, 0, 0, 0]
        for x in (a, b):
            if x < 4:
                t[x] += 1
        ref[tuple(t)] += q[a] * q[b]
    got = as_dict(tables, probs)
    assert set(got) == {k for k, v in ref.items() if v > 0}
    for k in got:
        assert got[k] == pytest.approx(ref[k], rel=1e-12)


def test_unsupported_laws_raise_clear_errors():
    noisy = PairedScenario(cells=(0.7, 0.1, 0.15, 0.05), clusters=3, cluster_size=FixedSize(trials=2), rho=0.2,
                           label_noise=LabelNoise(candidate_sensitivity=0.9))
    with pytest.raises(ExactUnsupported, match="rho > 0"):
        cluster_laws(noisy)
    poisson = PairedScenario(cells=(0.7, 0.1, 0.15, 0.05), clusters=3, cluster_size=PoissonSize(mean_trials=2))
    with pytest.raises(ExactUnsupported, match="fixed or explicit"):
        cluster_laws(poisson)
    # one-trial clusters keep an exact law with rho > 0 and noise
    ok = PairedScenario(cells=(0.7, 0.1, 0.15, 0.05), clusters=3, rho=0.5,
                        label_noise=LabelNoise(candidate_sensitivity=0.9))
    assert len(cluster_laws(ok)) == 3


def brute_pooled(laws):
    out = defaultdict(float)
    for combo in itertools.product(*(range(len(law[1])) for law in laws)):
        t = sum(np.asarray(law[0][i], np.int64) for law, i in zip(laws, combo))
        out[tuple(t)] += math.prod(law[1][i] for law, i in zip(laws, combo))
    return out


@pytest.mark.parametrize("scenario", [
    PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=3, cluster_size=FixedSize(trials=2), rho=0.3),
    PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=3, cluster_size=ExplicitSizes(sizes=(1, 3, 0)),
                   cluster_cells=((0.6, 0.2, 0.15, 0.05), (0.1, 0.3, 0.5, 0.1), (0.25, 0.25, 0.25, 0.25)), rho=0.1),
    PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=3, cluster_size=FixedSize(trials=2),
                   missingness=Missingness(loss_rate=0.3, loss_rate_candidate_fail=0.5)),
])
def test_pooled_dp_matches_brute_force(scenario):
    laws = cluster_laws(scenario)
    tables, probs = pooled_distribution(laws)
    ref = brute_pooled(laws)
    got = as_dict(tables, probs)
    assert set(got) == {k for k, v in ref.items() if v > 0}
    for k, v in got.items():
        assert v == pytest.approx(ref[k], rel=1e-11, abs=1e-16)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)


def test_pooled_dp_state_limit_is_a_clear_error():
    laws = cluster_laws(PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=40,
                                       cluster_size=FixedSize(trials=10)))
    with pytest.raises(ExactUnsupported, match="DP states"):
        pooled_distribution(laws, max_states=1_000_000)


def test_unit_cluster_tables_hold_the_multiset():
    pooled = np.array([[2, 1, 0, 1], [0, 0, 3, 0]])
    t = unit_cluster_tables(pooled, 5)
    assert t.shape == (2, 5, 4)
    np.testing.assert_array_equal(t.sum(axis=1), pooled)
    assert np.all(t.sum(axis=2) <= 1)
    assert t[1, 3:].sum() == 0  # the remaining clusters are empty


@pytest.mark.parametrize("scenario", [
    PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=4, cluster_size=FixedSize(trials=3), rho=0.25),
    PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=4, cluster_size=ExplicitSizes(sizes=(1, 2, 3, 0)),
                   cluster_cells=((0.6, 0.2, 0.15, 0.05), (0.1, 0.3, 0.5, 0.1), (0.25, 0.25, 0.25, 0.25),
                                  (0.6, 0.2, 0.15, 0.05)), rho=0.1),
])
def test_moment_dp_matches_brute_force(scenario):
    laws = cluster_laws(scenario)
    sizes = np.array(scenario.cluster_size.sizes if isinstance(scenario.cluster_size, ExplicitSizes)
                     else [scenario.cluster_size.trials] * scenario.clusters)
    d, probs, L = moment_distribution(laws, sizes)
    assert L == math.lcm(*[int(s) for s in sizes if s > 0])
    # brute force over every combination of cluster tables: key = exact (S1, S2) of the means
    ref = defaultdict(float)
    for combo in itertools.product(*(range(len(law[1])) for law in laws)):
        v = [(int(law[0][i][2]) - int(law[0][i][1])) * L // int(m) for law, i, m in zip(laws, combo, sizes) if m > 0]
        ref[(sum(v), sum(x * x for x in v))] += math.prod(law[1][i] for law, i in zip(laws, combo))
    active = sizes > 0
    got = {}
    for row, p in zip(d, probs):
        v = row[active] * L // sizes[active]
        key = (int(v.sum()), int((v * v).sum()))
        assert key not in got  # one representative per state
        got[key] = p
    assert set(got) == {k for k, v in ref.items() if v > 0}
    for k, v in got.items():
        assert v == pytest.approx(ref[k], rel=1e-11, abs=1e-16)
    t = moment_tables(d, sizes)
    np.testing.assert_array_equal(t.sum(axis=2), np.broadcast_to(sizes, d.shape))
    np.testing.assert_array_equal(t[:, :, 2] - t[:, :, 1], d)


def test_moment_dp_rejects_loss():
    sc = PairedScenario(cells=(0.6, 0.2, 0.15, 0.05), clusters=3, cluster_size=FixedSize(trials=2),
                        missingness=Missingness(loss_rate=0.1))
    with pytest.raises(ExactUnsupported, match="fixed cluster sizes"):
        moment_distribution(cluster_laws(sc), np.array([2, 2, 2]))


def test_moment_dp_wide_denominator_uses_int16_back_pointers():
    """Sizes 5, 8, 9: L = 360 > 127.  Brute force over the clusters' difference laws."""
    from simlab.exact.moments import difference_law

    sizes = np.array([5, 8, 9])
    sc = PairedScenario(cells=(0.5, 0.25, 0.15, 0.1), clusters=3, cluster_size=ExplicitSizes(sizes=tuple(sizes)),
                        rho=0.2)
    laws = cluster_laws(sc)
    d, probs, L = moment_distribution(laws, sizes)
    assert L == 360
    dl = [difference_law(law) for law in laws]
    ref = defaultdict(float)
    for combo in itertools.product(*(range(len(v)) for v, _ in dl)):
        v = [int(dl[k][0][i]) * L // int(sizes[k]) for k, i in enumerate(combo)]
        ref[(sum(v), sum(x * x for x in v))] += math.prod(dl[k][1][i] for k, i in enumerate(combo))
    got = {}
    for row, p in zip(d, probs):
        v = row * L // sizes
        got[(int(v.sum()), int((v * v).sum()))] = p
    assert set(got) == {k for k, v in ref.items() if v > 0}
    for k, v in got.items():
        assert v == pytest.approx(ref[k], rel=1e-11, abs=1e-16)


def test_sparse_and_dense_moment_dp_agree():
    sc = PairedScenario.from_rates(0.9, -0.03, 0.1, clusters=12, cluster_size=FixedSize(trials=3), rho=0.1)
    laws, sizes = cluster_laws(sc), np.full(12, 3)
    out = {}
    for layout in ("dense", "sparse"):
        d, p, _ = moment_distribution(laws, sizes, layout=layout)
        out[layout] = dict(zip(zip(d.sum(axis=1).tolist(), (d * d).sum(axis=1).tolist()), p))
    assert set(out["dense"]) == set(out["sparse"]) and len(out["dense"]) > 100
    for k, v in out["dense"].items():
        assert out["sparse"][k] == pytest.approx(v, rel=1e-12, abs=1e-300)


def test_sparse_moment_dp_refuses_by_projection_only_what_it_cannot_hold(monkeypatch):
    """The sparse DP refuses once the states it holds plus as many again at each remaining
    step pass ``max_bytes``: a limit equal to the states the full DP keeps (16 bytes each,
    summed over steps, counted on prefixes) is enough; one byte less is refused; half of it
    is refused before the last cluster is added."""
    K = 12
    sc = PairedScenario.from_rates(0.9, -0.03, 0.1, clusters=K, cluster_size=FixedSize(trials=3), rho=0.1)
    laws, sizes = cluster_laws(sc), np.full(K, 3)
    kept = [moment_distribution(laws[:j], sizes[:j], layout="sparse")[1].size for j in range(1, K + 1)]
    assert kept == sorted(kept) and kept[-1] > kept[0]  # the projection's premise, here
    total = 16 * sum(kept)
    d, p, _ = moment_distribution(laws, sizes, max_bytes=total, layout="sparse")
    assert p.size == kept[-1]
    with pytest.raises(ExactUnsupported, match="more than"):
        moment_distribution(laws, sizes, max_bytes=total - 1, layout="sparse")
    calls = []
    unique = np.unique
    monkeypatch.setattr(np, "unique", lambda *a, **k: calls.append(k.get("return_inverse")) or unique(*a, **k))
    limit = total // 2
    with pytest.raises(ExactUnsupported, match="more than"):
        moment_distribution(laws, sizes, max_bytes=limit, layout="sparse")
    used = np.cumsum(16 * np.array(kept))
    projected = used + 16 * np.array(kept) * (K - 1 - np.arange(K))
    first_over = int(np.argmax(projected > limit))
    assert first_over < int(np.argmax(used > limit))  # earlier than counting alone would refuse
    assert calls.count(True) == first_over + 1  # one merge of states per DP step
