"""Exact certification engine ``exact-convolution``: clusters of one size M > 1 with correlated
pairs (Dirichlet-multinomial, rho > 0), perfect labels, no looks, and a fixed-sample method whose
decision depends on the data only through the pooled discordant counts ``(L, W) = (sum n10,
sum n01)`` -- checked on the kernel itself by ``studies.exact.discordant.discordant_probe``
(dealing the same pooled pairs into clusters differently, permuting clusters and relabelling
concordant pairs n11 <-> n00 never changes a result).

Why it is exact.  A cluster's ``(n10, n01)`` law depends on ``(p10, p01, rho)`` only, not on the
baseline (Dirichlet aggregation; ``methods.fixed.em_table``), and K clusters of one size are iid,
so the law of ``(L, W)`` is the K-fold convolution of one cluster's law (2-D FFT, no Monte Carlo
error; float rounding only).  On the null boundary ``Delta = -m`` of the method's estimand
(``simlab.estimands.null_pair_rates``) the nuisance is ``(q, rho)``, and

    P(pass | q, rho) = sum over (L, W) with L + W <= N of pass(L, W) P_{q, rho}(L, W).

The pass mask comes from the method's own kernel on one representative table per state
(``discordant.arrange``: the pooled pairs dealt into K clusters of M pairs), so the rate is the
kernel's, not a re-implementation's.  Each rate is the Parseval sum of the mask's spectrum against
the law's spectrum (the K-th power of one cluster's, by repeated squaring): no inverse transform.

What it does not prove.  The rate is exact at every evaluated ``(q, rho)``; between nodes no bound
is proven (the Bhattacharyya-angle bound of ``methods.qualification.certificate`` is a
one-dimensional argument for laws affine in q, and DM laws are not affine in (q, rho)), so a
certificate of this engine is a statement about a dense exact grid.

Calibration (``calibrate_em``): the E+M critical values of ``dm_score`` (Lloyd 2008, Aust N Z J
Stat 50:329-345).  The E-step table at level beta is exact (``em_table``); the M-step takes the
largest beta whose exact worst false-pass over the dense (q, rho) grid is <= alpha.  It is exact,
not a bisection: the pass set grows with beta, every lattice state enters it at one level
``beta*`` (the smallest tail value of its two nodes at which ``Z >= c(q~)``; found by binary search
over those tail values), so each law's rate is a cumulative sum in ``beta*`` order and the
admissible levels are read off in one pass over the grid's laws.  The chosen level is a short
decimal inside the admissible gap (so a table rebuilt from the name ``dm_score@alpha=L`` has the
same pass set), and the calibrated method is checked with its own kernel before it is returned.
The calibrated method is ``dm_score@alpha=L`` (``DecisionMethod.calibrated``): named by its level
alone, it builds the E+M table at level L for the design of whatever data it is given, so at
another K, M or margin it is simply a different, uncertified design; the guarantee is the
certificate's, for its design and alpha (``methods.qualification`` checks that a certificate
covers the design it is used at).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Callable

import numba as nb
import numpy as np
from scipy import fft as sfft

from methods.fixed.em_table import (MAX_PAIRS, TOP_LEVEL, cluster_discordant_law, complex_power, dft_entry,
                                    dft_factors, dft_row, em_table, lattice_states, node_step, node_tails,
                                    pooled_discordant_law, transform_size)
from methods.protocol import PASS
from simlab.exact import ExactUnsupported
from simlab.estimands import null_pair_rates
from studies.exact.discordant import BLOCK_CELLS, arrange, discordant_probe

MAX_LEVEL = 0.25          # the largest nominal one-sided level (methods.protocol.check_alpha)
GRID_DISCORDANCES = 121
GRID_RHOS = 6
LOCAL_POINTS = 21


def nuisance_grid(margin: float, q_lo: float, q_hi: float, rho_max: float, n_q: int = GRID_DISCORDANCES,
                  n_rho: int = GRID_RHOS) -> tuple[np.ndarray, np.ndarray]:
    """``(q, rho)`` of every grid point: q uniform in ``sqrt(q - margin)`` on [q_lo, q_hi] (dense
    near the margin), rho equally spaced on [0, rho_max]; q varies fastest."""
    u = np.linspace(math.sqrt(max(q_lo - margin, 0.0)), math.sqrt(max(q_hi - margin, 0.0)), n_q)
    qs = np.unique(np.clip(margin + u * u, q_lo, q_hi))
    rhos = np.unique(np.round(np.linspace(0.0, rho_max, n_rho if rho_max > 0 else 1), 12))
    q, rho = np.meshgrid(qs, rhos)
    return q.ravel(), rho.ravel()


class ConvolutionStates:
    """The method's pass indicator on every state ``(L, W)`` of K clusters of M pairs, and its
    exact pass probability under any iid Dirichlet-multinomial cluster law (module docstring)."""

    def __init__(self, method, clusters: int, trials: int, margin: float, alpha: float, *, probe: bool = True):
        self.clusters, self.trials, self.margin, self.alpha = int(clusters), int(trials), float(margin), float(alpha)
        self.estimand = method.estimand.value
        self.pairs = N = self.clusters * self.trials
        if N > MAX_PAIRS:
            raise ExactUnsupported(f"{N} pairs give {(N + 1) * (N + 2) // 2:,} states, more than the exact "
                                   f"convolution engine's {(MAX_PAIRS + 1) * (MAX_PAIRS + 2) // 2:,}")
        if probe and not discordant_probe(method, self.clusters, self.trials, self.margin, self.alpha):
            raise ExactUnsupported(f"{method.name!r} uses more than the pooled discordant counts; "
                                   "the exact convolution engine does not apply")
        self.L, self.W = lattice_states(N)
        self.passed = np.zeros(self.L.size, bool)
        step = max(1, BLOCK_CELLS // N)
        for s in range(0, self.L.size, step):
            t = arrange(self.L[s:s + step], self.W[s:s + step], self.clusters, self.trials)
            self.passed[s:s + step] = method.batch(t, self.margin, self.alpha).status == PASS
        self.states = int(self.L.size)
        self.size = transform_size(N)
        grid = np.zeros((self.size, self.size))
        grid[self.L[self.passed], self.W[self.passed]] = 1.0
        self._mask_spectrum = np.conj(sfft.rfft2(grid))
        half = self._mask_spectrum.shape[1]
        self._weight = np.full(half, 2.0)
        self._weight[0] = 1.0
        if self.size % 2 == 0:
            self._weight[-1] = 1.0

    def probability(self, cluster_law: np.ndarray) -> float:
        """Exact P(pass) when every cluster's ``(n10, n01)`` has law ``cluster_law`` (Parseval)."""
        e_u, e_v = dft_factors(self.size, cluster_law.shape[0])
        total = _parseval_power(np.ascontiguousarray(cluster_law, np.float64), e_u, e_v, self.clusters,
                                self._mask_spectrum, self._weight) / (self.size * self.size)
        return min(max(total, 0.0), 1.0)

    def pass_probability(self, p10, p01, rho) -> np.ndarray:
        """P(pass) at cell probabilities ``(p10, p01)`` and ICC rho (broadcast arrays): power at an
        alternative, false-pass on the null."""
        p10, p01, rho = np.broadcast_arrays(np.asarray(p10, float), np.asarray(p01, float), np.asarray(rho, float))
        out = np.empty(p10.shape)
        for i in np.ndindex(p10.shape):
            out[i] = self.probability(cluster_discordant_law(self.trials, p10[i], p01[i], rho[i]))
        return out

    def rates(self, q, rho) -> np.ndarray:
        """Exact false-pass rate on the null boundary of the method's estimand at discordance q
        and ICC rho (broadcast arrays)."""
        q = np.asarray(q, float)
        p10, p01 = null_pair_rates(self.estimand, q, self.margin)
        return self.pass_probability(p10, np.maximum(p01, 0.0), rho)


@nb.njit(cache=True)
def _parseval_power(law, e_u, e_v, k, mask_spectrum, weight):
    """``sum w_v Re(F^k conj(mask))`` with ``F`` the separable DFT of ``law``: the full-spectrum
    inner product of the pooled law and the mask from the half spectrum, in one pass."""
    rows = np.empty(law.shape[1], np.complex128)
    total = 0.0
    for u in range(mask_spectrum.shape[0]):
        dft_row(law, e_u, u, rows)
        for v in range(mask_spectrum.shape[1]):
            total += weight[v] * (complex_power(dft_entry(rows, e_v, v), k) * mask_spectrum[u, v]).real
    return total


MAX_NODES = GRID_DISCORDANCES * GRID_RHOS + 3 * LOCAL_POINTS    # what dense_search evaluates at most


def node_seconds(clusters: int, trials: int) -> float:
    """Seconds of one node's exact rate at this design (one Parseval sum at its transform size,
    timed on a zero mask after a warm-up call): ``dense_search`` costs up to ``MAX_NODES`` of
    them, which at 300 x 3 is most of a certificate (17 s of 19 s measured)."""
    size = transform_size(int(clusters) * int(trials))
    law = np.zeros((trials + 1, trials + 1))
    law[0, 0] = 1.0
    e_u, e_v = dft_factors(size, trials + 1)
    mask = np.zeros((size, size // 2 + 1), np.complex128)
    weight = np.ones(size // 2 + 1)
    _parseval_power(law, e_u, e_v, int(clusters), mask[:1], weight)      # compile or load the kernel
    t0 = time.perf_counter()
    _parseval_power(law, e_u, e_v, int(clusters), mask, weight)
    return time.perf_counter() - t0


def dense_search(states: ConvolutionStates, q_lo: float, q_hi: float, rho_max: float,
                 local: int = LOCAL_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact rates on ``nuisance_grid`` and then on ``local`` points between the worst node's
    neighbours in q (at its rho and at rho_max) and in rho (at its q); sorted by (rho, q)."""
    q, rho = nuisance_grid(states.margin, q_lo, q_hi, rho_max)
    r = states.rates(q, rho)
    i = int(np.argmax(r))
    qs, rhos = np.unique(q), np.unique(rho)
    j, k = int(np.searchsorted(qs, q[i])), int(np.searchsorted(rhos, rho[i]))
    near_q = np.linspace(qs[max(j - 1, 0)], qs[min(j + 1, qs.size - 1)], local)
    near_rho = np.linspace(rhos[max(k - 1, 0)], rhos[min(k + 1, rhos.size - 1)], local)
    extra = [(x, y) for y in sorted({float(rho[i]), float(rho_max)}) for x in near_q]
    extra += [(float(q[i]), y) for y in near_rho]
    seen = set(zip(q.tolist(), rho.tolist()))
    extra = [p for p in dict.fromkeys(extra) if p not in seen]
    if extra:
        eq, er = np.array(extra).T
        q, rho, r = np.r_[q, eq], np.r_[rho, er], np.r_[r, states.rates(eq, er)]
    order = np.lexsort((q, rho))
    return q[order], rho[order], r[order]


# ---------------------------------------------------------------- E+M calibration of dm_score
@nb.njit(cache=True)
def _node_cut(tails, start, stop, values, level):
    """The E-step value of one node (tails[start:stop]) at ``level`` (as ``MarginLattice.cutoff``)."""
    lo = start
    hi = stop
    while lo < hi:                       # k = #{tails <= level}
        mid = (lo + hi) // 2
        if tails[mid] <= level:
            lo = mid + 1
        else:
            hi = mid
    k = lo - start
    if k == 0:
        return values[0] + 1.0
    if k >= values.size:
        return values[-1] - 1.0
    return 0.5 * (values[k - 1] + values[k])


@nb.njit(cache=True)
def _entry_levels(z, qt, margin, h, tails, offsets, cands, cand_offsets, values, out):
    """``out[i]``: the smallest candidate level at which state i passes (inf: none).  The pass
    condition is the kernel's ``Z >= c(q~)`` with ``critical``'s arithmetic; segment j < n - 1
    (between nodes j and j + 1) searches the union of both nodes' tails, segment n - 1 (beyond
    the last node) that node's."""
    n_nodes = offsets.size - 1
    for i in range(z.size):
        x = math.sqrt(qt[i] - margin if qt[i] > margin else 0.0) / h
        two = x < n_nodes - 1
        j = int(x) if two else n_nodes - 1
        f = x - j if two else 0.0
        lo = cand_offsets[j]
        hi = cand_offsets[j + 1]
        stop = hi
        while lo < hi:                   # the pass condition is monotone in the level
            mid = (lo + hi) // 2
            b = cands[mid]
            cut = _node_cut(tails, offsets[j], offsets[j + 1], values, b)
            if two:
                cut = (1.0 - f) * cut + f * _node_cut(tails, offsets[j + 1], offsets[j + 2], values, b)
            if z[i] >= cut:
                hi = mid
            else:
                lo = mid + 1
        out[i] = cands[lo] if lo < stop else math.inf


def entry_levels(lat, tails, margin: float, q_hi: float) -> np.ndarray:
    """The level at which each lattice state enters the pass set of the E+M rule (inf: never
    below TOP_LEVEL); candidate levels are 0 and the nodes' tail values below TOP_LEVEL."""
    below = [t[t < TOP_LEVEL] for t in tails]
    segs = [np.union1d(below[j], below[j + 1]) for j in range(len(below) - 1)] + [below[-1]]
    cands = np.concatenate([np.r_[0.0, s] for s in segs])
    cand_offsets = np.r_[0, np.cumsum([s.size + 1 for s in segs])].astype(np.int64)
    offsets = np.r_[0, np.cumsum([t.size for t in tails])].astype(np.int64)
    out = np.empty(lat.z.size)
    _entry_levels(lat.z, lat.qt, margin, node_step(margin, q_hi), np.concatenate(tails), offsets, cands,
                  cand_offsets, lat.values, out)
    return out


def short_level(lo: float, hi: float) -> float:
    """The shortest decimal inside the middle half of ``[lo, hi)``: a level that names the same
    pass set even if a table rebuilt elsewhere moves a tail value by a few ulps."""
    a, b = lo + (hi - lo) / 4.0, hi - (hi - lo) / 4.0
    for digits in range(1, 18):
        x = float(f"{0.5 * (a + b):.{digits}g}")
        if a <= x <= b and x > 0.0:
            return x
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class EMCalibration:
    """The E+M calibration of ``dm_score`` at one design: the calibrated method
    (``dm_score@alpha=level``, with the ``rho_max`` and ``em_q_hi`` it was calibrated with), its
    E-step table at the design, the exact worst false-pass over the grid and where it is."""
    method: object
    table: np.ndarray
    level: float
    level_range: tuple[float, float]      # every level in [lo, hi) gives the same pass set at the design
    worst: float
    worst_point: tuple[float, float]      # (discordance, rho)
    grid_points: int
    seconds: float


def calibrated_method(method, level: float, rho_max: float, q_hi: float = 0.5):
    """``method`` (dm_score or a variant) calibrated at E-step level ``level``: the table's ICC
    and discordance range set, the level its name (``dm_score@alpha=level``)."""
    return method.with_options(rho_max=rho_max, em_q_hi=q_hi).calibrated(level)


def calibrate_em(method, clusters: int, trials: int, margin: float, rho_max: float, alpha: float, *,
                 discordance: tuple[float, float] | None = None,
                 progress: Callable[[str], None] | None = None) -> EMCalibration:
    """The largest E-step level at which the calibrated method's exact false-pass is <= alpha at
    every point of ``nuisance_grid`` (module docstring).  ``discordance``: the null-boundary range
    searched, default ``(margin, 0.5)``; its upper end is also the table's ``em_q_hi``.  The
    method's ``rho_max`` option is set to ``rho_max`` (the E-step law and the design effect use
    the same ICC); a robust variant is calibrated through its model variant (its pass set is
    contained in it).  Levels are nominal one-sided levels, so at most ``MAX_LEVEL``."""
    t0 = time.perf_counter()
    if getattr(method, "calibration", None) != "exact-em":
        raise ValueError(f"method {method.name!r} declares no E+M table (calibration 'exact-em'); calibrate dm_score")
    method = replace(method, nominal_alpha=None)
    if trials * clusters > MAX_PAIRS:
        raise ExactUnsupported(f"{clusters} x {trials} pairs exceed the exact calibration's {MAX_PAIRS}")
    q_lo, q_hi = discordance if discordance is not None else (margin, 0.5)
    q_lo = max(q_lo, margin)
    if not q_lo < q_hi <= 1.0:
        raise ValueError(f"discordance range [{q_lo:g}, {q_hi:g}] is empty on the null boundary -{margin:g}")
    model = method.with_options(robust=0.0)
    lat, tails = node_tails(clusters, trials, margin, rho_max, q_hi)
    entry = entry_levels(lat, tails, margin, q_hi)
    can = np.flatnonzero(np.isfinite(entry))
    by_level = can[np.argsort(entry[can], kind="stable")]
    sorted_levels = entry[by_level]
    ends = np.r_[sorted_levels[1:] != sorted_levels[:-1], True]
    distinct = sorted_levels[ends]
    q, rho = nuisance_grid(margin, q_lo, q_hi, rho_max)
    if progress:
        progress(f"calibrate {method.name} at K={clusters}, M={trials}: E-step on {len(tails)} nodes, M-step over "
                 f"{q.size} exact laws")

    def admit(line: float) -> int:        # the groups every law of one rho line keeps <= alpha
        out = distinct.size
        for x in q[rho == line]:
            p10, p01 = null_pair_rates(method.estimand.value, x, margin)
            law = lat.gather(pooled_discordant_law(clusters, cluster_discordant_law(trials, p10, max(p01, 0.0), line)))
            out = min(out, int(np.searchsorted(np.cumsum(law[by_level])[ends], alpha, side="right")))
        return out

    # the rate grows with rho at every grid point measured so far, so the M-step starts on the
    # rho_max line and takes in another line only when the exact check of the whole grid needs it
    done = {float(rho.max())}
    admissible = admit(float(rho.max()))
    for _ in range(len(set(rho.tolist())) + 4):
        k = admissible
        if k == 0:
            break
        upper = distinct[k] if k < distinct.size else TOP_LEVEL
        if distinct[k - 1] >= MAX_LEVEL:     # a level no calibrated method can be named by
            admissible = k - 1
            continue
        level = short_level(float(distinct[k - 1]), min(float(upper), MAX_LEVEL))
        cal = calibrated_method(model, level, rho_max, q_hi)
        states = ConvolutionStates(cal, clusters, trials, margin, alpha, probe=False)
        if not np.array_equal(states.passed, entry <= level):
            admissible = k - 1     # the lattice and the kernel disagree on a state: the next smaller level
            continue
        r = states.rates(q, rho)
        if r.max() <= alpha:
            i = int(np.argmax(r))
            out = calibrated_method(method, level, rho_max, q_hi)
            return EMCalibration(out, em_table(clusters, trials, margin, rho_max, level, q_hi), level,
                                 (float(distinct[k - 1]), float(upper)), float(r[i]), (float(q[i]), float(rho[i])),
                                 int(q.size), time.perf_counter() - t0)
        lines = set(rho[r > alpha].tolist()) - done
        if not lines:                # round-off between the two exact sums: step down
            admissible = k - 1
            continue
        for line in lines:
            admissible = min(admissible, admit(line))
        done |= lines
    raise ValueError(f"no E+M level keeps the exact false-pass of {method.name!r} at or below alpha = {alpha:g} at "
                     f"{clusters} x {trials}, margin {margin:g}, rho <= {rho_max:g}")
