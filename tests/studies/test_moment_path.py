"""The runner's moment path: cluster-moment methods decided from ``(k, sum D, sum D^2)``
drawn without tables must give exactly what the table path gives."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from methods import registry
from methods.fixed._moments import cluster_mean_var
from simlab.scenario import ExplicitSizes, FixedSize, LabelNoise, Missingness, PairedScenario, PoissonSize
from studies.engine.evaluate import moment_path
from studies.engine.runner import evaluate_scenario
from simlab.sampling import scenario_tables, table_source

def table_moments(tables, out):
    """Reference reduction: ``out[r] = (non-empty clusters, sum D, sum D^2)``, D = n01 - n10."""
    t = tables.astype(np.int64)
    D = t[..., 2] - t[..., 1]
    out[:, 0] = (t.sum(axis=2) > 0).sum(axis=1)
    out[:, 1] = D.sum(axis=1)
    out[:, 2] = (D * D).sum(axis=1)
    return out


MOMENT_METHODS = ["clustered_normal", {"name": "cluster_t", "options": {"min_clusters": 5}}, "cluster_t"]

MOMENT_SCENARIOS = [
    PairedScenario(cells=(0.91, 0.06, 0.02, 0.01), clusters=30, cluster_size=FixedSize(trials=3)),
    PairedScenario(cells=(0.5, 0.2, 0.2, 0.1), clusters=12, cluster_size=FixedSize(trials=4), rho=0.3),
    PairedScenario(cells=(0.96, 0.04, 0.0, 0.0), clusters=30, cluster_size=FixedSize(trials=1)),
    PairedScenario(cells=(0.7, 0.1, 0.05, 0.15), clusters=9,
                   cluster_size=ExplicitSizes(sizes=(2, 0, 2, 2, 0, 2, 2, 2, 2))),
    PairedScenario(cells=(0.8, 0.1, 0.05, 0.05), clusters=20, cluster_size=FixedSize(trials=2),
                   label_noise=LabelNoise(baseline_sensitivity=0.95, candidate_specificity=0.9)),
]


@pytest.mark.parametrize("sc", MOMENT_SCENARIOS, ids=lambda s: f"K{s.clusters}")
def test_moment_path_tallies_equal_table_path_bitwise(sc):
    src = table_source(sc, 11)
    resolved = [registry.get(m) if isinstance(m, str) else registry.get(m["name"]).with_options(**m["options"])
                for m in MOMENT_METHODS]
    assert src.moment_size is not None and moment_path(src, resolved)
    args = dict(margins=[0.03, 0.1], alphas=[0.05, 0.025], replications=30_000, seed=11)
    fast = evaluate_scenario(sc, MOMENT_METHODS, **args)
    slow = evaluate_scenario(sc, MOMENT_METHODS, moments=False, **args)
    np.testing.assert_array_equal(fast.tally, slow.tally)
    # and chunking still does not matter on the moment path
    split = evaluate_scenario(sc, MOMENT_METHODS, **{**args, "replications": 12_345}).merge(
        evaluate_scenario(sc, MOMENT_METHODS, **{**args, "replications": 30_000 - 12_345}, start=12_345, batch=999))
    np.testing.assert_array_equal(fast.tally, split.tally)


@pytest.mark.parametrize("sc", MOMENT_SCENARIOS[:4], ids=lambda s: f"K{s.clusters}")
def test_fill_moments_is_the_reduction_of_fill(sc):
    src = table_source(sc, 3)
    tables = scenario_tables(sc, 3, 500, 2500)
    want = table_moments(tables, np.empty((tables.shape[0], 3), np.int64))
    got = src.fill_moments(np.empty((2000, 3), np.int64), 500)
    np.testing.assert_array_equal(got, want)


def test_moment_path_only_where_it_applies():
    poisson = PairedScenario(cells=(0.8, 0.1, 0.05, 0.05), clusters=10, cluster_size=PoissonSize(mean_trials=3))
    lossy = PairedScenario(cells=(0.8, 0.1, 0.05, 0.05), clusters=10, cluster_size=FixedSize(trials=3),
                           missingness=Missingness(loss_rate=0.2))
    for sc in (poisson, lossy):
        assert table_source(sc, 1).moment_size is None  # recorded sizes differ between clusters
    # one method that needs the tables sends the whole study down the table path
    src = table_source(MOMENT_SCENARIOS[0], 1)
    assert not moment_path(src, [registry.get("clustered_normal"), registry.get("tango_score")])
    assert not moment_path(table_source(MOMENT_SCENARIOS[0], 1, "trial"), [registry.get("clustered_normal")])
    both = evaluate_scenario(MOMENT_SCENARIOS[0], ["clustered_normal", "tango_score"], replications=5000, seed=2)
    alone = evaluate_scenario(MOMENT_SCENARIOS[0], ["clustered_normal"], replications=5000, seed=2)
    np.testing.assert_array_equal(both.tally[:1], alone.tally)  # same draws whichever path
    with pytest.raises(ValueError, match="cannot draw cluster moments"):
        table_source(poisson, 1).fill_moments(np.empty((2, 3), np.int64), 0)


def _equal_size_tables(draw_counts, m):
    """int32[R, K, 4] from per-cluster (n11, n10, n01) with n00 = m - rest (empty when m = 0)."""
    t = np.asarray(draw_counts, np.int32)
    n00 = m - t.sum(axis=-1, keepdims=True)
    return np.concatenate([t, n00], axis=-1).astype(np.int32)


@st.composite
def equal_size_batches(draw):
    m = draw(st.integers(1, 6))
    K = draw(st.integers(1, 12))
    R = draw(st.integers(1, 8))
    rows = []
    for _ in range(R * K):
        if draw(st.booleans()) and draw(st.integers(0, 4)) == 0:
            rows.append([0, 0, 0, 0])  # an empty (missing) cluster
            continue
        a = draw(st.integers(0, m))
        b = draw(st.integers(0, m - a))
        c = draw(st.integers(0, m - a - b))
        rows.append([a, b, c, m - a - b - c])
    return np.asarray(rows, np.int32).reshape(R, K, 4), m


@settings(max_examples=150, deadline=None, derandomize=True)
@given(equal_size_batches(), st.sampled_from([0.01, 0.1, 0.5]), st.sampled_from([0.8, 0.95]))
def test_moments_kernel_equals_table_kernel(batch, margin, confidence):
    tables, m = batch
    stats = table_moments(tables, np.empty((tables.shape[0], 3), np.int64))
    for name, opts in (("clustered_normal", {"min_clusters": 2.0}), ("clustered_normal", {}), ("cluster_t", {})):
        meth = registry.get(name).with_options(**opts)
        a = meth.batch(tables, margin, (1 - confidence) / 2)
        b = meth.batch_moments(stats, m, tables.shape[1], margin, (1 - confidence) / 2)
        for field in ("lower", "upper", "estimate", "status"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=f"{name} {field}")


def test_equal_differences_give_zero_variance_exactly():
    # 30 clusters of 3 trials, each with one lost pair: d_k = -1/3 for all k
    t = np.tile(np.array([[2, 1, 0, 0]], np.int32), (30, 1))[None]
    k, mean, var = cluster_mean_var(t, 0)
    assert (k, var) == (30, 0.0) and mean == -1 / 3
    r = registry.get("clustered_normal").batch(t, 0.5, 0.025)
    assert r.lower[0] == r.upper[0] == r.estimate[0] == -1 / 3 and r.status[0] == 1  # the seed's flaw
    # unequal sizes keep the two-pass formula: d = 0.5 and 1.0
    u = np.array([[[0, 0, 1, 1], [0, 0, 2, 0], [0, 0, 1, 1]]], np.int32)
    k, mean, var = cluster_mean_var(u, 0)
    assert k == 3 and mean == pytest.approx(2 / 3) and var == pytest.approx(np.var([0.5, 1.0, 0.5], ddof=1))


def test_batch_moments_rejects_bad_input():
    meth = registry.get("clustered_normal")
    with pytest.raises(ValueError, match=r"int64\[R, 3\]"):
        meth.batch_moments(np.zeros((3, 2), np.int64), 3, 30, 0.03)
    with pytest.raises(ValueError, match="size must be an integer >= 1"):
        meth.batch_moments(np.zeros((3, 3), np.int64), 0, 30, 0.03)
    with pytest.raises(ValueError, match="margin"):
        meth.batch_moments(np.zeros((3, 3), np.int64), 3, 30, 1.5)
    with pytest.raises(ValueError, match="no option"):
        meth.with_options(nope=1.0)


def test_qualification_tasks_count_the_same_on_both_paths(monkeypatch):
    """The qualifier's run_task takes the moment path for cluster-moment methods; forcing
    the table path gives the same counts."""
    import importlib
    evaluate = importlib.import_module("studies.engine.evaluate")   # the module: the package exports a function of that name
    from methods.qualification import named_policy
    from studies.qualify.run import ScenarioPoint, Task, method_key, run_task

    policy = named_policy("reduced")
    keys = tuple(method_key(registry.get(n)) for n in ("clustered_normal", "cluster_t"))
    specs = [ScenarioPoint(30, 1, 0.2, 0.03, 0, 1.0, 0.03), ScenarioPoint(10, 0, 0.0, 0.1, 0, 0.7, 0.1)]
    from studies.qualify.run import scenario_of
    for s in specs:  # the fast run really takes the moment path
        src = table_source(scenario_of(policy, s, "cluster_weighted"), policy.seed, policy.sampler)
        assert moment_path(src, [registry.get("clustered_normal"), registry.get("cluster_t")])
    fast = [run_task(policy, Task(s, keys, 0, 20_000), ("cluster_weighted",)) for s in specs]
    monkeypatch.setattr(evaluate, "takes_moments", lambda methods: False)
    slow = [run_task(policy, Task(s, keys, 0, 20_000), ("cluster_weighted",)) for s in specs]
    assert fast == slow
    assert fast[0][keys[0]][0] > 0  # the seed's design point passes sometimes (zero-SD samples)
