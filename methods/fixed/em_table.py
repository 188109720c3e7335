"""E+M critical values of ``dm_score`` and the exact law of the pooled discordant counts they
are computed from (Lloyd 2008, Aust N Z J Stat 50:329-345, E+M p-values).  Not a method (no
``METHOD``): ``dm_score.prepare`` builds a calibrated method's table for each design of its data
here, and the exact engine ``studies.exact.convolution`` computes laws, calibrates and certifies
with the same code.

Law.  One cluster of ``M`` trial pairs with cell probabilities ``(p11, p10, p01, p00)`` drawn
from a Dirichlet with concentration ``(1 - rho)/rho`` has Dirichlet-multinomial counts
(Mosimann 1962, Biometrika 49:65-82, eq. 2.1; ``simlab.exact.cluster_law``).  Merging the two
concordant cells keeps the Dirichlet-multinomial form (the aggregation property of the
Dirichlet), so the law of a cluster's ``(n10, n01)`` depends on ``p10``, ``p01`` and rho only --
not on the baseline -- and is obtained here from ``cluster_law`` with all the concordant mass in
one cell.  K clusters of one size are iid, so the pooled ``(L, W) = (sum n10, sum n01)`` has the
K-fold convolution of that ``(M + 1) x (M + 1)`` law, computed by 2-D FFT: the support of the
result is ``[0, N]^2`` (``N = K M``), so a transform of size ``S >= N + 1`` per axis makes the
cyclic convolution equal the linear one; the K-th power of the spectrum is taken by repeated
squaring (relative error about ``log2(K)`` ulps), negative round-off is set to zero.

Statistic on the lattice.  At every ``(L, W)`` with ``L + W <= N`` the margin statistic
``Z(-m)`` and the restricted discordance ``q~(-m)`` of ``dm_score`` are evaluated with the very
numba functions the kernel calls, on the same inputs (a design of K clusters of M pairs has
``N = K M`` and design weight ``N + rho (K M^2 - N)`` whatever the arrangement), so a lattice
decision is bit for bit the kernel's.

Table.  Nodes ``q_j = m + (j h)^2``, ``h = sqrt(q_hi - m) / (n - 1)``, ``j = 0..n-1`` (uniform in
``sqrt(q - m)``: dense near the margin, where ``p01`` is small and the law moves fastest).  At
each node the E-step value ``c_j(beta)`` is the exact upper-``beta`` quantile of ``Z(-m)`` under
the null law ``(p10, p01) = ((q_j + m)/2, (q_j - m)/2)`` at rho: with ``v_1 > v_2 > ...`` the
attained values and ``T_k = P(Z >= v_k)``, ``k = #{T_k <= beta}`` values pass and ``c_j`` is the
midpoint ``(v_k + v_{k+1}) / 2`` (``v_1 + 1`` when none passes), so ``P(Z >= c_j) <= beta`` with no
value at ``c_j`` itself.  Between nodes ``c`` is linear in ``sqrt(q - m)``, and constant beyond the
ends (``critical``).  The M-step (``studies.exact.convolution.calibrate_em``) chooses ``beta``.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numba as nb
import numpy as np

from methods.fixed.clustered_score import restricted_pair_variance, score
from simlab.exact import cluster_law

NODES = 61
MAX_PAIRS = 2447          # (N + 1)(N + 2) / 2 <= 3,000,000 lattice states
TOP_LEVEL = 0.5           # E-step levels lie in (0, TOP_LEVEL)
# dm_score's consts: [rho_max, robust, nodes, h, D, (K_1, M_1) .. (K_D, M_D), table_1 .. table_D] -- one table of
# ``nodes`` critical values per design K_i x M_i of the batch; uncalibrated: D = 0 and one node, z_{1 - alpha}
RHO_AT, ROBUST_AT, NODES_AT, STEP_AT, DESIGNS_AT, DESIGN_AT = range(6)


# ---------------------------------------------------------------- the exact law
def cluster_discordant_law(trials: int, p10: float, p01: float, rho: float) -> np.ndarray:
    """``P[l, w] = P(n10 = l, n01 = w)`` for one cluster of ``trials`` pairs (module docstring)."""
    p10, p01 = max(float(p10), 0.0), max(float(p01), 0.0)
    tables, probs = cluster_law((max(0.0, 1.0 - p10 - p01), p10, p01, 0.0), int(trials), float(rho))
    out = np.zeros((trials + 1, trials + 1))
    np.add.at(out, (tables[:, 1], tables[:, 2]), probs)
    return out


def transform_size(pairs: int) -> int:
    """The FFT size per axis for a pooled law on ``[0, pairs]^2``: no wrap-around."""
    from scipy import fft as sfft  # imported when a pooled law is computed: not for one interval

    return sfft.next_fast_len(int(pairs) + 1, real=True)


@lru_cache(maxsize=8)
def dft_factors(size: int, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """``e_u[u, l] = exp(-2 pi i u l / S)`` (u < S) and ``e_v[v, w]`` (v <= S/2): the two factors of
    the 2-D DFT of a law on ``cells x cells``, zero-padded to ``S x S`` (``rfft2`` layout)."""
    idx = np.arange(cells)
    e_u = np.exp(-2j * np.pi * (np.outer(np.arange(size), idx) % size) / size)
    e_v = np.exp(-2j * np.pi * (np.outer(np.arange(size // 2 + 1), idx) % size) / size)
    e_u.setflags(write=False)
    e_v.setflags(write=False)
    return e_u, e_v


@nb.njit(inline="always", cache=True)
def dft_row(law, e_u, u, rows):
    """``rows[w] = sum_l law[l, w] e_u[u, l]``: the first factor of the separable DFT at row u."""
    for w in range(law.shape[1]):
        acc = 0.0 + 0.0j
        for l in range(law.shape[0]):
            acc += law[l, w] * e_u[u, l]
        rows[w] = acc


@nb.njit(inline="always", cache=True)
def dft_entry(rows, e_v, v):
    """``sum_w rows[w] e_v[v, w]``: the DFT at (u, v) from row u's first factor."""
    acc = 0.0 + 0.0j
    for w in range(rows.size):
        acc += rows[w] * e_v[v, w]
    return acc


@nb.njit(cache=True)
def _separable_dft(law, e_u, e_v, out):
    rows = np.empty(law.shape[1], np.complex128)
    for u in range(out.shape[0]):
        dft_row(law, e_u, u, rows)
        for v in range(out.shape[1]):
            out[u, v] = dft_entry(rows, e_v, v)


def cluster_spectrum(law: np.ndarray, size: int) -> np.ndarray:
    """``rfft2(law, s=(size, size))`` of a small law, as the separable sum over its ``(M + 1)^2``
    cells (no transform of the zero padding)."""
    e_u, e_v = dft_factors(int(size), law.shape[0])
    out = np.empty((size, size // 2 + 1), np.complex128)
    _separable_dft(np.ascontiguousarray(law, np.float64), e_u, e_v, out)
    return out


@nb.njit(inline="always", cache=True)
def complex_power(z, k):
    """``z ** k`` for an integer ``k >= 1`` by repeated squaring."""
    out = 1.0 + 0.0j
    b = z
    while k:
        if k & 1:
            out = out * b
        k >>= 1
        if k:
            b = b * b
    return out


@nb.njit(cache=True)
def _power_in_place(x, k):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            x[i, j] = complex_power(x[i, j], k)


def pooled_spectrum(clusters: int, law: np.ndarray, size: int) -> np.ndarray:
    """``rfft2`` (size x size) of the K-fold convolution of ``law``: the K-th power of its
    spectrum, by repeated squaring."""
    out = cluster_spectrum(law, size)
    _power_in_place(out, int(clusters))
    return out


def pooled_discordant_law(clusters: int, law: np.ndarray) -> np.ndarray:
    """``P[L, W]`` of the pooled losses and wins of ``clusters`` iid clusters with one-cluster
    law ``law[l, w]``, on ``[0, N]^2`` (zero where ``L + W > N``)."""
    from scipy import fft as sfft

    pairs = clusters * (law.shape[0] - 1)
    size = transform_size(pairs)
    out = sfft.irfft2(pooled_spectrum(clusters, law, size), s=(size, size))[:pairs + 1, :pairs + 1]
    np.maximum(out, 0.0, out=out)
    out[np.add.outer(np.arange(pairs + 1), np.arange(pairs + 1)) > pairs] = 0.0
    return out


def null_cluster_law(trials: int, margin: float, discordance: float, rho: float) -> np.ndarray:
    """One cluster's ``(n10, n01)`` law on the null boundary ``Delta = -margin``."""
    return cluster_discordant_law(trials, (discordance + margin) / 2.0, (discordance - margin) / 2.0, rho)


# ---------------------------------------------------------------- the statistic and the table
@nb.njit(inline="always", cache=True)
def restricted_discordance(delta, w, l, N):
    """``q~(delta) = p~10 + p~01``, Tango's constrained MLE of the discordance under ``Delta =
    delta`` (``sigma2~ + delta^2``)."""
    return restricted_pair_variance(delta, w, l, N) + delta * delta


@nb.njit(inline="always", cache=True)
def design_weight(N, sn2, rho):
    """``sum_k n_k (1 + (n_k - 1) rho)`` from ``N = sum n_k`` and ``sn2 = sum n_k^2``."""
    return N + rho * (sn2 - N)


@nb.njit(inline="always", cache=True)
def critical(qt, margin, consts, at):
    """``c(q~)``: the table starting at ``consts[at]`` read linearly in ``sqrt(q~ - margin)`` (one
    node: a constant critical value)."""
    n = int(consts[NODES_AT])
    if n == 1:
        return consts[at]
    x = math.sqrt(qt - margin if qt > margin else 0.0) / consts[STEP_AT]
    if x >= n - 1:
        return consts[at + n - 1]
    j = int(x)
    f = x - j
    return (1.0 - f) * consts[at + j] + f * consts[at + j + 1]


@nb.njit(cache=True)
def _margin_statistics(L, W, N, weight, margin, z, qt):
    for i in range(L.size):
        w = float(W[i])
        l = float(L[i])
        z[i] = score(-margin, w - l, N, w, l, 0.0, 0.0, 0.0, weight)
        qt[i] = restricted_discordance(-margin, w, l, N)


def lattice_states(pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(L, W)`` with ``L + W <= pairs`` (int64), in the order of ``np.triu_indices``."""
    a, b = np.triu_indices(pairs + 1)
    return a.astype(np.int64), (b - a).astype(np.int64)


class MarginLattice:
    """``Z(-m)`` and ``q~(-m)`` of the model statistic at every state of K clusters of M pairs,
    with the distinct values of Z in decreasing order (``values``; ``rank`` maps each state to
    its value's position in ``values``)."""

    def __init__(self, clusters: int, trials: int, margin: float, rho: float):
        self.clusters, self.trials, self.margin, self.rho = int(clusters), int(trials), float(margin), float(rho)
        self.pairs = self.clusters * self.trials
        if self.pairs > MAX_PAIRS:
            raise ValueError(f"{self.pairs} pairs exceed the exact E-step's {MAX_PAIRS} "
                             f"({(self.pairs + 1) * (self.pairs + 2) // 2:,} lattice states)")
        self.L, self.W = lattice_states(self.pairs)
        N = float(self.pairs)
        self.z = np.empty(self.L.size)
        self.qt = np.empty(self.L.size)
        weight = design_weight(N, float(self.clusters * self.trials * self.trials), self.rho)
        _margin_statistics(self.L, self.W, N, weight, self.margin, self.z, self.qt)
        self.order = np.argsort(-self.z, kind="stable")
        zs = self.z[self.order]
        self.last = np.r_[zs[1:] != zs[:-1], True]
        self.values = zs[self.last]
        rank_sorted = np.cumsum(np.r_[True, self.last[:-1]]) - 1
        self.rank = np.empty(self.L.size, np.int64)
        self.rank[self.order] = rank_sorted

    def gather(self, law2d: np.ndarray) -> np.ndarray:
        """A law on ``[0, N]^2`` as a vector over the states."""
        return law2d[self.L, self.W]

    def tails(self, law: np.ndarray) -> np.ndarray:
        """``P(Z >= v_k)`` for the distinct values down to the first tail above TOP_LEVEL."""
        cum = np.cumsum(law[self.order])[self.last]
        return cum[:int(np.searchsorted(cum, TOP_LEVEL, side="right")) + 1]

    def cutoff(self, tails: np.ndarray, level: float) -> float:
        """The E-step value at one node: the midpoint below the ``k = #{tails <= level}`` top values."""
        k = int(np.searchsorted(tails, level, side="right"))
        if k == 0:
            return float(self.values[0] + 1.0)
        if k >= self.values.size:
            return float(self.values[-1] - 1.0)
        return float(0.5 * (self.values[k - 1] + self.values[k]))


def node_discordances(margin: float, q_hi: float, nodes: int = NODES) -> np.ndarray:
    u = np.linspace(0.0, math.sqrt(q_hi - margin), nodes)
    return margin + u * u


def node_step(margin: float, q_hi: float, nodes: int = NODES) -> float:
    return math.sqrt(q_hi - margin) / (nodes - 1)


@lru_cache(maxsize=8)
def node_tails(clusters: int, trials: int, margin: float, rho: float, q_hi: float) -> tuple[MarginLattice, tuple]:
    """The lattice and, at each node, the upper tails of Z(-m) under the null law at rho."""
    lat = MarginLattice(clusters, trials, margin, rho)
    tails = tuple(lat.tails(lat.gather(pooled_discordant_law(clusters, null_cluster_law(trials, margin, q, rho))))
                  for q in node_discordances(margin, q_hi))
    return lat, tails


@lru_cache(maxsize=32)
def em_table(clusters: int, trials: int, margin: float, rho: float, level: float, q_hi: float) -> np.ndarray:
    """The E-step critical values ``c_j(level)`` at the NODES nodes (module docstring)."""
    if not 0.0 < level < TOP_LEVEL:
        raise ValueError(f"the E-step level must lie in (0, {TOP_LEVEL}), got {level!r}")
    if not margin < q_hi <= 1.0:
        raise ValueError(f"the table's discordance range needs margin < q_hi <= 1, got q_hi={q_hi!r}")
    lat, tails = node_tails(clusters, trials, margin, rho, q_hi)
    out = np.array([lat.cutoff(t, level) for t in tails])
    out.setflags(write=False)
    return out
