"""Generator kernels: fill ``tables[R, K, 4]`` (int32 counts ``n11, n10, n01, n00``).

Cluster cell probabilities follow Dirichlet(alpha * p); instead of drawing the Dirichlet
and then a multinomial, counts are drawn with the equivalent Polya urn (Johnson, Kotz &
Balakrishnan 1997, *Discrete Multivariate Distributions*, ch. 40): trial t of a cluster
falls in cell j with probability ``(alpha * p_j + c_j) / (alpha + t)``.  That costs one
uniform per trial pair and no gamma variates.  Recording error and loss then move each
pair with one more uniform through the 4 x 5 measurement matrix of the scenario.

Draw order inside a replication (the "draw index" of ``simlab.rng``): for each cluster in
arrival order, its size draw (random sizes only), then one uniform per trial pair, then
(only with measurement error) one per trial pair.  The order is part of the contract:
changing it changes every simulated number, so it is versioned by ``GENERATOR_VERSION``.
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import numba as nb
import numpy as np

from .rng import MAX_REPLICATIONS, stream_key, uniform
from .scenario import ExplicitSizes, FixedSize, GeometricSize, PairedScenario, PoissonSize

GENERATOR_VERSION = "1"

SIZE_FIXED, SIZE_POISSON, SIZE_GEOMETRIC, SIZE_EXPLICIT = 0, 1, 2, 3


@nb.njit(inline="always", cache=True)
def _poisson_inversion(u, lam):
    # Sequential search inversion (Devroye 1986, X.3.3); lam <= 500 keeps exp(-lam) > 0.
    k = 0
    p = math.exp(-lam)
    cdf = p
    while u > cdf and p > 0.0:
        k += 1
        p *= lam / k
        cdf += p
    return k


@nb.njit(inline="always", cache=True)
def _geometric_inversion(u, mean):
    # Number of failures before a success, success prob 1 / (1 + mean): floor(log(1-u)/log(1-q)).
    if mean <= 0.0:
        return 0
    q = 1.0 / (1.0 + mean)
    return int(math.floor(math.log1p(-u) / math.log1p(-q)))


@nb.njit(cache=True)
def fill_tables(k1, k2, rep_start, out, cum_cells, alpha_cells, alpha, size_kind,
                size_a, size_min, sizes, meas_cum, has_meas):
    """Fill ``out[R, K, 4]`` with replications ``rep_start .. rep_start + R - 1``.

    cum_cells[K, 4]: cumulative cell probabilities per cluster (rho = 0 path);
    alpha_cells[K, 4]: alpha * p per cluster (Polya urn path, alpha finite);
    size_kind / size_a / size_min / sizes: cluster-size law; meas_cum[4, 5]: cumulative
    measurement matrix rows (used when has_meas).
    """
    R, K, _ = out.shape
    urn = math.isfinite(alpha)
    for i in range(R):
        rep = rep_start + i
        draw = 0
        for k in range(K):
            if size_kind == SIZE_FIXED or size_kind == SIZE_EXPLICIT:
                m = sizes[k]
            else:
                u = uniform(k1, k2, rep, draw)
                draw += 1
                if size_kind == SIZE_POISSON:
                    m = size_min + _poisson_inversion(u, size_a)
                else:
                    m = size_min + _geometric_inversion(u, size_a)
            c0 = 0
            c1 = 0
            c2 = 0
            c3 = 0
            for t in range(m):
                u = uniform(k1, k2, rep, draw)
                draw += 1
                if urn:
                    # Polya urn step: compare u * (alpha + t) with running weights.
                    x = u * (alpha + t)
                    w = alpha_cells[k, 0] + c0
                    if x < w:
                        c0 += 1
                        continue
                    w += alpha_cells[k, 1] + c1
                    if x < w:
                        c1 += 1
                        continue
                    w += alpha_cells[k, 2] + c2
                    if x < w:
                        c2 += 1
                        continue
                    c3 += 1
                else:
                    if u < cum_cells[k, 0]:
                        c0 += 1
                    elif u < cum_cells[k, 1]:
                        c1 += 1
                    elif u < cum_cells[k, 2]:
                        c2 += 1
                    else:
                        c3 += 1
            if has_meas:
                counts = (c0, c1, c2, c3)
                o0 = 0
                o1 = 0
                o2 = 0
                o3 = 0
                for j in range(4):
                    for _ in range(counts[j]):
                        u = uniform(k1, k2, rep, draw)
                        draw += 1
                        if u < meas_cum[j, 0]:
                            o0 += 1
                        elif u < meas_cum[j, 1]:
                            o1 += 1
                        elif u < meas_cum[j, 2]:
                            o2 += 1
                        elif u < meas_cum[j, 3]:
                            o3 += 1
                        # else: the pair is lost
                c0, c1, c2, c3 = o0, o1, o2, o3
            out[i, k, 0] = c0
            out[i, k, 1] = c1
            out[i, k, 2] = c2
            out[i, k, 3] = c3


class TableGenerator:
    """Compiled view of one scenario under one seed; produces any replication range."""

    def __init__(self, scenario: PairedScenario, seed: int):
        self.scenario = scenario
        self.seed = int(seed)
        self.k1, self.k2 = stream_key(self.seed, scenario.key)
        cells = scenario.cell_matrix()
        self._cum = np.cumsum(cells, axis=1)
        self._cum[:, 3] = 1.0  # guard against round-off: the last cell takes the rest
        self._alpha = scenario.concentration
        self._alpha_cells = cells * (self._alpha if math.isfinite(self._alpha) else 0.0)
        cs = scenario.cluster_size
        K = scenario.clusters
        self._sizes = np.zeros(K, np.int64)
        self._size_a, self._size_min = 0.0, 0
        if isinstance(cs, FixedSize):
            self._kind = SIZE_FIXED
            self._sizes[:] = cs.trials
        elif isinstance(cs, ExplicitSizes):
            self._kind = SIZE_EXPLICIT
            self._sizes[:] = cs.sizes
        elif isinstance(cs, PoissonSize):
            self._kind, self._size_a, self._size_min = SIZE_POISSON, cs.mean_trials - cs.minimum, cs.minimum
        elif isinstance(cs, GeometricSize):
            self._kind, self._size_a, self._size_min = SIZE_GEOMETRIC, cs.mean_trials - cs.minimum, cs.minimum
        else:  # pragma: no cover - pydantic's discriminator forbids it
            raise TypeError(f"unknown cluster size law {cs!r}")
        meas = scenario.measurement_matrix()
        self._meas_cum = np.cumsum(meas, axis=1)
        self._has_meas = scenario.has_measurement_error

    def fill(self, out: np.ndarray, rep_start: int) -> np.ndarray:
        """Fill a preallocated int32[R, K, 4] buffer with replications rep_start..+R-1."""
        R = out.shape[0]
        if out.dtype != np.int32 or out.ndim != 3 or out.shape[1:] != (self.scenario.clusters, 4):
            raise ValueError(f"out must be int32[R, {self.scenario.clusters}, 4], got {out.dtype}{out.shape}")
        if rep_start < 0 or rep_start + R > MAX_REPLICATIONS:
            raise ValueError(f"replications must lie in [0, {MAX_REPLICATIONS}), got {rep_start}..{rep_start + R}")
        fill_tables(self.k1, self.k2, np.int64(rep_start), out, self._cum, self._alpha_cells, self._alpha,
                    self._kind, self._size_a, self._size_min, self._sizes, self._meas_cum, self._has_meas)
        return out

    def tables(self, start: int, stop: int) -> np.ndarray:
        """Replications ``start .. stop-1`` as a new int32[stop-start, K, 4] array."""
        if stop < start:
            raise ValueError(f"stop ({stop}) must be >= start ({start})")
        return self.fill(np.empty((stop - start, self.scenario.clusters, 4), np.int32), start)

    def chunks(self, n_reps: int, chunk_size: int = 65_536, start: int = 0) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_rep, tables)`` chunks reusing one buffer: memory stays
        ``chunk_size * K * 16`` bytes whatever ``n_reps`` is.  Consume each chunk before
        asking for the next."""
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        buf = np.empty((min(chunk_size, max(n_reps, 1)), self.scenario.clusters, 4), np.int32)
        for s in range(start, start + n_reps, chunk_size):
            n = min(chunk_size, start + n_reps - s)
            yield s, self.fill(buf[:n], s)


def simulate_tables(scenario: PairedScenario, seed: int, n_reps: int, start: int = 0) -> np.ndarray:
    """Convenience: replications ``start .. start+n_reps-1`` of ``scenario`` under ``seed``."""
    return TableGenerator(scenario, seed).tables(start, start + n_reps)
