"""Counter-based RNG: purity, chunk invariance, stream independence, uniformity."""
import numpy as np
import pytest
from scipy import stats

from simlab.generate import TableGenerator, simulate_tables
from simlab.rng import stream_key, uniform, uniforms
from simlab.scenario import FixedSize, PairedScenario, PoissonSize


def _scenario(**kw):
    base = dict(cells=(0.9, 0.04, 0.03, 0.03), clusters=30, cluster_size=FixedSize(trials=3), rho=0.1)
    return PairedScenario(**{**base, **kw})


def test_uniform_is_a_pure_function_of_key_rep_draw():
    k1, k2 = stream_key(7, "abc")
    a = uniforms(k1, k2, 12345, 10, 50)
    b = np.array([uniform(k1, k2, 12345, 10 + i) for i in range(50)])
    assert np.array_equal(a, b)
    assert np.all((a >= 0) & (a < 1))
    assert not np.array_equal(a, uniforms(k1, k2, 12346, 10, 50))


def test_stream_key_depends_on_seed_and_scenario_and_rejects_bad_seed():
    assert stream_key(1, "a") != stream_key(2, "a")
    assert stream_key(1, "a") != stream_key(1, "b")
    assert stream_key(1, "a") == stream_key(1, "a")
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="seed"):
            stream_key(bad, "a")


@pytest.mark.parametrize("size", [FixedSize(trials=3), PoissonSize(mean_trials=4.0, minimum=1)])
def test_chunk_invariance_bitwise(size):
    scenario = _scenario(cluster_size=size)
    whole = simulate_tables(scenario, 99, 1000)
    cuts = [0, 1, 17, 18, 250, 611, 999, 1000]  # 7 uneven chunks
    parts = [simulate_tables(scenario, 99, b - a, start=a) for a, b in zip(cuts[:-1], cuts[1:])]
    assert np.array_equal(whole, np.concatenate(parts))
    streamed = np.concatenate([t.copy() for _, t in TableGenerator(scenario, 99).chunks(1000, 333)])
    assert np.array_equal(whole, streamed)
    # any replication regenerated alone
    assert np.array_equal(whole[611], simulate_tables(scenario, 99, 1, start=611)[0])


def test_chunks_reuse_one_buffer_so_memory_does_not_grow():
    gen = TableGenerator(_scenario(), 3)
    bufs = [t for _, t in gen.chunks(10_000, 1000)]
    assert all(np.shares_memory(bufs[0], b) for b in bufs)


def test_scenario_content_key_separates_streams():
    a, b = _scenario(), _scenario(rho=0.2)
    assert a.key != b.key
    assert a.key == _scenario().key  # same content, same key
    assert not np.array_equal(simulate_tables(a, 1, 50), simulate_tables(b, 1, 50))


def test_neighbouring_streams_uncorrelated():
    """Correlation of draw i in replication r with draw i in replication r+1, pooled over many
    pairs: under independence each r_hat has SE ~ 1/sqrt(n); the mean of 400 has SE 1/sqrt(400 n)."""
    k1, k2 = stream_key(2026, "neighbours")
    n, pairs = 2000, 400
    cors = np.empty(pairs)
    for r in range(pairs):
        cors[r] = np.corrcoef(uniforms(k1, k2, r, 0, n), uniforms(k1, k2, r + 1, 0, n))[0, 1]
    se_each = 1 / np.sqrt(n)
    assert abs(cors.mean()) < 4 * se_each / np.sqrt(pairs)
    assert np.max(np.abs(cors)) < 5 * se_each
    # also consecutive draws within a stream (lag-1 autocorrelation)
    u = uniforms(k1, k2, 5, 0, 200_000)
    lag1 = np.corrcoef(u[:-1], u[1:])[0, 1]
    assert abs(lag1) < 4 / np.sqrt(u.size)


def test_uniformity_chi_square_and_moments():
    k1, k2 = stream_key(11, "uniformity")
    u = np.concatenate([uniforms(k1, k2, r, 0, 10_000) for r in range(100)])
    counts = np.histogram(u, bins=100, range=(0, 1))[0]
    chi2 = ((counts - u.size / 100) ** 2 / (u.size / 100)).sum()
    # chi-square with 99 df: mean 99, sd sqrt(198); 4-sigma band
    assert abs(chi2 - 99) < 4 * np.sqrt(198)
    assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / u.size)
    # KS at the 1e-4 level (fixed seed: a failure means a defect, not bad luck)
    assert stats.kstest(u, "uniform").pvalue > 1e-4
