"""GPU moment draws equal the CPU's bit for bit (on a GPU, or under numba's CUDA simulator)."""
import numpy as np
import pytest

from simlab import gpu
from simlab.scenario import PairedScenario
from simlab.sampling import table_source

pytestmark = [pytest.mark.skipif(not gpu.available(), reason=f"no GPU and no CUDA simulator: {gpu.why_unavailable()}"),
              pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]  # simulator's uint64 math


def _scenario(clusters=30, trials=3, rho=0.0):
    return PairedScenario.independent_arms(0.97, 0.93, clusters=clusters, rho=rho,
                                           cluster_size={"kind": "fixed", "trials": trials})


@pytest.mark.parametrize("kw", [{}, {"clusters": 7, "trials": 2, "rho": 0.3}, {"clusters": 5, "trials": 1}])
def test_gpu_moments_equal_cpu(kw):
    from simlab.gpu.moments import GpuMomentSampler

    src = table_source(_scenario(**kw), 20261130, "composition")
    assert src.moment_size is not None
    start, n = 123_456_789, 96  # a replication range far from 0: the counter's high word is used
    cpu = src.fill_moments(np.empty((n, 3), np.int64), start)
    sampler = GpuMomentSampler(src.k1, src.k2, *src.moment_tables())
    assert np.array_equal(sampler.moments(start, start + n), cpu)
    assert np.array_equal(sampler.moments(start + 40, start + 50), cpu[40:50])  # any sub-range alone


def test_gpu_sampler_checks_its_output():
    from numba import cuda

    from simlab.gpu.moments import GpuMomentSampler

    src = table_source(_scenario(clusters=4, trials=1), 1, "composition")
    sampler = GpuMomentSampler(src.k1, src.k2, *src.moment_tables())
    with pytest.raises(ValueError, match="int64"):
        sampler.fill(cuda.device_array((4, 2), np.int64), 0)
    with pytest.raises(ValueError, match="replications must lie"):
        sampler.fill(cuda.device_array((4, 3), np.int64), -1)


@pytest.mark.skipif(gpu.available() and gpu.simulated(), reason="the CUDA simulator compiles no PTX")
def test_compiled_kernels_hold_no_fused_multiply_add():
    from simlab.gpu.moments import GpuMomentSampler, ptx_of_fill_kernel

    src = table_source(_scenario(clusters=4, trials=1), 1, "composition")
    GpuMomentSampler(src.k1, src.k2, *src.moment_tables()).moments(0, 8)  # compile
    ptx = ptx_of_fill_kernel()
    assert "mul.rn.f64" in ptx and "fma." not in ptx
