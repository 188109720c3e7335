"""The studies engine's moment path on a GPU: sample, decide and tally on the device.

For a composition source with equal cluster sizes and methods that decide from cluster
moments on the GPU (``methods.gpu.supports``), each batch of replications is
1. drawn as ``(k_used, S1, S2)`` rows (``simlab.gpu.moments``, the CPU's streams), then
2. decided and tallied for every (method, margin, alpha) by one kernel launch each:
   a grid-stride loop keeps each thread's tally in registers, a block adds its threads'
   tallies in shared memory and then into the global tally with integer atomics.
Tallies are integers (``studies.engine.tally``; fixed-point sums carried in two words), and
integer addition is associative, so the result equals the CPU's bit for bit whatever
the grid, the batch or the order of the atomics (tested against the CPU path).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda  # a module global: the CUDA simulator swaps it inside kernels

from studies.engine import tally as _tally

GPU_BATCH = 1 << 25          # replications per sampling launch (805 MB of moments)
ITEMS_PER_THREAD = 16        # replications per thread in the decide-and-tally launch


def unsupported_reason(source, methods) -> str:
    """Why the GPU cannot run ``methods`` on ``source`` ('' when it can)."""
    from methods.gpu import supports

    bad = [m.name for m in methods if not supports(m)]
    if bad:
        from methods import gpu_refusal

        return gpu_refusal(bad)
    if source.moment_size is None:
        return (f"the {source.name} source draws no cluster moments for this scenario (the GPU needs the "
                "composition sampler and clusters that all share one size)")
    return ""


@functools.lru_cache(maxsize=1)
def fused_kernel():
    from methods.gpu import decision_device
    from simlab.gpu import rounded_ops

    mul_rn, add_rn, _ = rounded_ops()
    decision = decision_device()
    NF = _tally.NF

    @cuda.jit(device=True)
    def acc_fixed(out, hi, lo, x):
        # studies.engine.tally._acc: round(x 2^32) added to a two-word integer
        q = np.int64(math.floor(add_rn(mul_rn(x, 4294967296.0), 0.5)))
        t = out[lo] + q
        carry = t >> 32
        out[hi] += carry
        out[lo] = t - (carry << 32)

    @cuda.jit(device=True)
    def tally_one(s, e, lo, up, theta, out):
        # studies.engine.tally.tally_batch, one replication
        out[0] += 1
        if s == 1:
            out[1] += 1
        elif s == 0:
            out[2] += 1
        else:
            out[3] += 1
        if abs(e) < 32768.0:
            out[4] += 1
            acc_fixed(out, 5, 6, e)
            acc_fixed(out, 7, 8, mul_rn(e, e))
        if not (math.isnan(lo) or math.isnan(up)):
            out[9] += 1
            if lo <= theta and theta <= up:
                out[10] += 1
            if lo > theta:
                out[11] += 1
            w = up - lo
            if abs(w) < 32768.0:
                out[12] += 1
                acc_fixed(out, 13, 14, w)
                acc_fixed(out, 15, 16, mul_rn(w, w))

    @cuda.jit
    def decide_tally(stats, size, margin, crit, theta, acc, combo):
        mine = cuda.local.array(NF, np.int64)
        for f in range(NF):
            mine[f] = 0
        for r in range(cuda.grid(1), stats.shape[0], cuda.gridsize(1)):
            lo, up, est, st = decision(stats[r, 0], stats[r, 1], stats[r, 2], size, margin, crit)
            tally_one(st, est, lo, up, theta, mine)
        block = cuda.shared.array(NF, np.int64)
        t = cuda.threadIdx.x
        if t < NF:
            block[t] = 0
        cuda.syncthreads()
        for f in range(NF):
            if mine[f] != 0:
                cuda.atomic.add(block, f, mine[f])
        cuda.syncthreads()
        if t < NF:
            cuda.atomic.add(acc, (combo, t), block[t])

    return decide_tally


def evaluate_moments_gpu(source, methods, thetas, margins, alphas, start: int, stop: int,
                         out: np.ndarray, batch: int | None = None) -> None:
    """Add the tallies of replications ``start .. stop-1`` to ``out[method, margin,
    alpha, NF]``, as ``studies.engine.runner`` does on the CPU's moment path."""
    from simlab.gpu import launch_shape, require
    from simlab.gpu.moments import GpuMomentSampler

    why = unsupported_reason(source, methods)
    if why:
        raise ValueError(f"--device gpu: {why}")
    require()
    if stop <= start:
        return
    K, m = source.clusters, source.moment_size
    pack, g_off, g_n = source.moment_tables()
    sampler = GpuMomentSampler(source.k1, source.k2, pack, g_off, g_n)
    combos = [(i, j, c) for i in range(len(methods)) for c in range(len(alphas)) for j in range(len(margins))]
    crit = {(i, j, c): cuda.to_device(methods[i].moment_consts(alphas[c], margins[j], K)) for i, j, c in combos}
    d_acc = cuda.to_device(np.zeros((len(combos), _tally.NF), np.int64))
    kern = fused_kernel()
    b = min(batch or GPU_BATCH, stop - start)
    buf = cuda.device_array((b, 3), np.int64)
    for s in range(start, stop, b):
        n = min(b, stop - s)
        stats = sampler.fill(buf[:n], s)
        blocks, threads = launch_shape(n, ITEMS_PER_THREAD)
        for x, (i, j, c) in enumerate(combos):
            kern[blocks, threads](stats, np.int64(m), np.float64(margins[j]), crit[(i, j, c)],
                                  np.float64(thetas[i]), d_acc, np.int64(x))
    acc = d_acc.copy_to_host()
    for x, (i, j, c) in enumerate(combos):
        out[i, j, c] = _tally.add(out[i, j, c], acc[x])
