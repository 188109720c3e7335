"""The exact engines' state limits are applied before the applicability probes (issue 29.4:
``false-pass`` at 10^5 clusters was silent 28 s (one trial) and 60 s (three) only to reach
the refusal that the state counts already implied)."""
from __future__ import annotations

import numpy as np
import pytest

from methods import get
from simlab.exact import ExactUnsupported, cluster_laws
from simlab.exact.moments import DEFAULT_MAX_BYTES, moment_distribution
from simlab.exact.pooled import DEFAULT_MAX_STATES, pooled_distribution
from simlab.scenario import FixedSize, PairedScenario
from studies.exact import fixed


def scenario(clusters: int, trials: int, cells=(0.9, 0.04, 0.03, 0.03)) -> PairedScenario:
    return PairedScenario(cells=cells, clusters=clusters, cluster_size=FixedSize(trials=trials))


@pytest.fixture
def no_probes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a probe ran where the state count alone decides")
    monkeypatch.setattr(fixed, "probe", refuse)


def test_one_trial_clusters_beyond_the_pooled_limit_are_refused_before_the_laws_and_probes(no_probes):
    engine, why = fixed.exact_engine(scenario(100_000, 1), get("cluster_t"))
    assert engine is None and "DP states" in why and f"{DEFAULT_MAX_STATES:,}" in why


def test_many_clusters_of_several_trials_skip_both_probed_engines(no_probes):
    engine, why = fixed.exact_engine(scenario(100_000, 3), get("cluster_t"))
    assert engine is None
    assert "over the exact engine's" in why and "cluster-moment engine's states for 100000 clusters" in why


def test_the_pooled_shortcut_is_the_dp_limit_itself():
    # just inside the limit the pooled engine is still tried; one pair more and its DP refuses
    n = max(k for k in range(1, 1000) if (k + 1) ** 3 <= DEFAULT_MAX_STATES)  # pairs the DP still holds
    assert (n + 2) ** 3 > DEFAULT_MAX_STATES
    with pytest.raises(ExactUnsupported, match="DP states"):
        pooled_distribution(cluster_laws(scenario(n + 1, 1)))
    assert "DP states" in fixed.exact_engine(scenario(n + 1, 1), get("cluster_t"))[1]
    assert fixed.exact_engine(scenario(n, 1), get("cluster_t"))[0] == "unit"


def test_the_moment_bound_counts_only_clusters_whose_difference_varies():
    varied = cluster_laws(scenario(10, 3))
    still = cluster_laws(scenario(10, 3, cells=(0.9, 0.0, 0.0, 0.1)))  # no discordance: d = 0 always
    assert not fixed._moments_surely_over_limit(varied)
    n = next(n for n in range(1, 100_000) if 16 * (n * (n + 1) // 2 + n) > DEFAULT_MAX_BYTES)
    assert fixed._moments_surely_over_limit([varied[0]] * n)
    assert not fixed._moments_surely_over_limit([varied[0]] * (n - 1) + [still[0]] * 10 * n)


def test_below_the_bound_the_moment_engine_still_decides():
    engine, _ = fixed.exact_engine(scenario(30, 3), get("cluster_t"))
    assert engine == "moments"
    d, probs, _ = moment_distribution(cluster_laws(scenario(30, 3)), np.full(30, 3))
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
