"""Cluster-moment decisions on a GPU (optional; needs numba's CUDA target).

``clustered_normal`` and ``cluster_t`` decide from each replication's integer cluster
moments ``(k_used, S1 = sum D_k, S2 = sum D_k^2)`` (``methods.fixed._moments``).  This
module gives the same decision as a CUDA device function, for kernels that fuse it with
sampling and tallying (``studies.engine.gpu``), and as a batch kernel writing exactly what the
CPU's ``cluster_mean_moments_kernel`` writes (tested bit for bit).

The mean and variance come from the CPU source itself (``moments_mean_var``, compiled
for the GPU by ``simlab.gpu.device_twin``; divisions and products only, nothing a
compiler may fuse); the interval ``mean -+ crit * sqrt(var / k)`` rounds its product
and its sum separately, as the CPU does (``simlab.gpu`` explains why that must be
spelled out on a GPU).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda  # a module global: the CUDA simulator swaps it inside kernels

from methods.protocol import INCONCLUSIVE, check_margin
from methods.fixed._common import decide
from methods.fixed._moments import cluster_mean_moments_kernel, moments_mean_var


def supports(method) -> bool:
    """True when ``method`` decides from cluster moments with the kernel this module mirrors."""
    return getattr(method, "moments_kernel", None) is cluster_mean_moments_kernel


@functools.lru_cache(maxsize=1)
def _kernels():
    from simlab.gpu import device_twin, rounded_ops

    mul_rn, add_rn, sub_rn = rounded_ops()
    d_mean_var = device_twin(moments_mean_var)
    d_decide = device_twin(decide)

    @cuda.jit(device=True)
    def cluster_mean_decision(k_used, S1, S2, size, margin, crit):
        """(lower, upper, estimate, status) of one replication (``_interval`` of the CPU)."""
        mean, var = d_mean_var(k_used, size, S1, S2)
        if k_used < 2 or k_used < crit[0]:
            return math.nan, math.nan, mean, INCONCLUSIVE
        half = mul_rn(crit[k_used - 1], math.sqrt(var / k_used))
        lower = sub_rn(mean, half)
        return lower, add_rn(mean, half), mean, d_decide(lower, margin)

    @cuda.jit
    def batch_kernel(stats, size, margin, crit, lower, upper, estimate, status):
        r = cuda.grid(1)
        if r < stats.shape[0]:
            lo, up, est, st = cluster_mean_decision(stats[r, 0], stats[r, 1], stats[r, 2], size, margin, crit)
            lower[r] = lo
            upper[r] = up
            estimate[r] = est
            status[r] = st

    return cluster_mean_decision, batch_kernel


def decision_device():
    """The device function ``cluster_mean_decision(k_used, S1, S2, size, margin, crit) ->
    (lower, upper, estimate, status)``; ``crit`` is the method's ``moment_consts``."""
    return _kernels()[0]


def batch_moments_gpu(method, stats: np.ndarray, size: int, clusters: int, margin: float,
                      alpha: float = 0.025) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``method.batch_moments`` on the GPU: host ``int64[R, 3]`` in, host arrays
    ``(lower, upper, estimate, status)`` out."""
    from simlab.gpu import launch_shape, require

    if not supports(method):
        raise ValueError(f"method {method.name!r} has no GPU moment decision (only the cluster-mean methods do)")
    check_margin(margin)
    if stats.ndim != 2 or stats.shape[1] != 3 or stats.dtype != np.int64:
        raise ValueError(f"stats must be int64[R, 3], got {stats.dtype}{stats.shape}")
    require()
    R = stats.shape[0]
    crit = cuda.to_device(method.moment_consts(alpha, margin, clusters))
    d = [cuda.device_array(R, np.float64) for _ in range(3)] + [cuda.device_array(R, np.int8)]
    if R:
        blocks, threads = launch_shape(R)
        _kernels()[1][blocks, threads](cuda.to_device(stats), np.int64(size), np.float64(margin), crit, *d)
    return tuple(a.copy_to_host() for a in d)
