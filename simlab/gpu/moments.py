"""The composition sampler's moment draws on a GPU: ``int64[R, 3]`` rows ``(k_used,
S1, S2)`` equal, bit for bit, to what the CPU's ``_fill_group_moments``
(``simlab.sampling``) writes for the same key and replications.

The caller hands over the sampler's arrays (keys, alias pack, group offsets and sizes), so
this module knows nothing of scenarios or studies.  One thread per replication: for each
group, one counter-based uniform (``simlab.rng.uniform``, compiled from the CPU source),
an alias slot, and the slot's or its alias's precomputed moments from the pack.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import cuda  # a module global: the CUDA simulator swaps it inside kernels

from simlab.gpu import device_twin, launch_shape, rounded_ops, simulated
from simlab.rng import MAX_REPLICATIONS, mix64, uniform


@functools.lru_cache(maxsize=1)
def _kernels():
    mul_rn, _, sub_rn = rounded_ops()
    d_mix64 = device_twin(mix64)
    d_uniform = device_twin(uniform, mix64=d_mix64)

    @cuda.jit(device=True)
    def alias_slot(k1, k2, rep, h, n):
        # simlab.sampling._alias_slot with the product and difference rounded separately
        x = mul_rn(d_uniform(k1, k2, rep, h), np.float64(n))
        j = int(x)
        if j >= n:
            j = n - 1
        return j, sub_rn(x, np.float64(j))

    @cuda.jit(device=True)
    def draw_moments(k1, k2, rep, pack, g_off, g_n):
        """(k_used, S1, S2) of replication ``rep`` (``_fill_group_moments``' loop body)."""
        k_used = np.int64(0)
        S1 = np.int64(0)
        S2 = np.int64(0)
        for h in range(g_off.shape[0]):
            j, f = alias_slot(k1, k2, rep, h, g_n[h])
            row = g_off[h] + j
            c = 1 if f < pack[row, 0] else 4
            k_used += np.int64(pack[row, c])
            S1 += np.int64(pack[row, c + 1])
            S2 += np.int64(pack[row, c + 2])
        return k_used, S1, S2

    @cuda.jit
    def fill_moments_kernel(k1, k2, rep_start, pack, g_off, g_n, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            k_used, S1, S2 = draw_moments(k1, k2, rep_start + i, pack, g_off, g_n)
            out[i, 0] = k_used
            out[i, 1] = S1
            out[i, 2] = S2

    return fill_moments_kernel, draw_moments


def draw_moments_device():
    """The device function ``draw_moments(k1, k2, rep, pack, g_off, g_n) -> (k, S1, S2)``,
    for kernels that fuse the draws with their consumers."""
    return _kernels()[1]


class GpuMomentSampler:
    """The moment draws of one composition source, its tables held on the GPU."""

    def __init__(self, k1, k2, pack: np.ndarray, g_off: np.ndarray, g_n: np.ndarray):
        self.k1, self.k2 = np.uint64(k1), np.uint64(k2)
        self.pack = cuda.to_device(np.ascontiguousarray(pack, np.float64))
        self.g_off = cuda.to_device(np.ascontiguousarray(g_off, np.int64))
        self.g_n = cuda.to_device(np.ascontiguousarray(g_n, np.int64))

    def fill(self, out, rep_start: int):
        """Write replications ``rep_start .. rep_start + len(out) - 1`` into the device
        array ``out`` (``int64[R, 3]``); returns ``out``."""
        R = out.shape[0]
        if out.dtype != np.int64 or out.ndim != 2 or out.shape[1] != 3:
            raise ValueError(f"out must be int64[R, 3], got {out.dtype}{out.shape}")
        if rep_start < 0 or rep_start + R > MAX_REPLICATIONS:
            raise ValueError(f"replications must lie in [0, {MAX_REPLICATIONS}), got {rep_start}..{rep_start + R}")
        if R:
            blocks, threads = launch_shape(R)
            _kernels()[0][blocks, threads](self.k1, self.k2, np.int64(rep_start), self.pack, self.g_off,
                                           self.g_n, out)
        return out

    def moments(self, start: int, stop: int) -> np.ndarray:
        """Replications ``start .. stop-1`` as a host ``int64[stop-start, 3]`` array."""
        if stop < start:
            raise ValueError(f"stop ({stop}) must be >= start ({start})")
        out = cuda.device_array((stop - start, 3), np.int64)
        return self.fill(out, start).copy_to_host()


def ptx_of_fill_kernel() -> str:
    """PTX of the compiled fill kernel (real GPU only): for the no-fused-multiply-add check."""
    if simulated():
        raise ValueError("the CUDA simulator compiles no PTX")
    kern = _kernels()[0]
    return "\n".join(kern.inspect_asm().values())
