"""The GPU cluster-moment decision writes exactly what the CPU moment kernel writes."""
import numpy as np
import pytest

from methods import registry
from simlab import gpu

pytestmark = pytest.mark.skipif(not gpu.available(), reason=f"no GPU and no CUDA simulator: {gpu.why_unavailable()}")


def _stats(rng, n, K, m):
    """Random attainable moments plus the edge cases: no cluster, one cluster, zero variance."""
    rows = []
    for _ in range(n):
        k = int(rng.integers(0, K + 1))
        D = rng.integers(-m, m + 1, size=k)
        rows.append((k, D.sum(), (D * D).sum()))
    rows += [(0, 0, 0), (1, -1, 1), (K, -K, K), (K, 0, 0), (2, 1, 1), (K, -m * K, m * m * K)]
    return np.array(rows, np.int64)


@pytest.mark.parametrize("name,alpha", [("clustered_normal", 0.025), ("cluster_t", 0.05),
                                             ("cluster_t", 0.005)])
def test_gpu_decisions_equal_cpu(name, alpha):
    from methods.gpu import batch_moments_gpu, supports

    method = registry.get(name)
    if name == "clustered_normal":
        method = method.with_options(min_clusters=3.0)  # so that few-cluster rows get intervals too
    assert supports(method)
    K, m = 12, 3
    stats = _stats(np.random.default_rng(7), 120, K, m)
    for margin in (0.03, 0.2):
        cpu = method.batch_moments(stats, m, K, margin, alpha)
        got = batch_moments_gpu(method, stats, m, K, margin, alpha)
        for a, b in zip(got, (cpu.lower, cpu.upper, cpu.estimate, cpu.status)):
            assert a.dtype == b.dtype
            assert np.array_equal(a, b, equal_nan=True)
        assert set(np.unique(cpu.status)) >= {0, 1, 2}  # every status occurs


def test_methods_without_a_gpu_decision_are_refused():
    from methods.gpu import batch_moments_gpu, supports

    m = registry.get("paired_wald")
    assert not supports(m)
    with pytest.raises(ValueError, match="no GPU moment decision"):
        batch_moments_gpu(m, np.zeros((1, 3), np.int64), 1, 3, 0.03)
