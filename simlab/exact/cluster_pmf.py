"""Exact law of one cluster's recorded 2x2 table.

A cluster of ``m`` trial pairs with population cells ``p = (p11, p10, p01, p00)``:

* rho = 0: the counts are Multinomial(m, p);
* rho > 0: the cell probabilities are Dirichlet(alpha p), alpha = (1 - rho) / rho, so the
  counts are Dirichlet-multinomial (Mosimann 1962, Biometrika 49:65-82, eq. 2.1):

      P(c) = m! / prod c_j!  *  prod_j [alpha p_j]^(c_j)  /  [alpha]^(m),

  with ``[x]^(n) = x (x + 1) ... (x + n - 1)`` the rising factorial (Johnson, Kotz &
  Balakrishnan 1997, *Discrete Multivariate Distributions*, eq. 35.152).  Cells with
  ``p_j = 0`` are structural zeros.

Recording error and pair loss (``PairedScenario.measurement_matrix``, a 4 x 5 matrix
whose last column is "pair lost") act on each pair independently given its true cell.
When pairs are independent (rho = 0), or a cluster holds a single pair, the recorded
cell of a pair is therefore categorical with probabilities ``q = p @ Q`` over five
outcomes and the recorded table is Multinomial(m, q) with the lost pairs dropped.  For
rho > 0 and m >= 2 with measurement error the recorded law is a mixture that is not
computed here (:class:`ExactUnsupported`).
"""
from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np

from ..scenario import ExplicitSizes, FixedSize, PairedScenario

# A large cluster at a large rho overflows the Dirichlet-multinomial's rising factorials
# (inf, then inf / inf = NaN); ``_normalised`` turns that into ExactUnsupported (callers fall
# back to simulation), so numpy's overflow / invalid-value warnings from this module are noise.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"simlab\.exact\.cluster_pmf")


class ExactUnsupported(ValueError):
    """The scenario (or method) lies outside what the exact engines compute."""


@lru_cache(maxsize=4096)  # the recursion visits every (m' <= m, parts' < parts): keep them all
def _compositions_cached(m: int, parts: int) -> np.ndarray:
    if parts == 1:
        return np.array([[m]], dtype=np.int32)
    rows = []
    for first in range(m, -1, -1):
        rest = _compositions_cached(m - first, parts - 1)
        rows.append(np.concatenate([np.full((rest.shape[0], 1), first, np.int32), rest], axis=1))
    out = np.concatenate(rows, axis=0)
    out.setflags(write=False)
    return out


def compositions(m: int, parts: int) -> np.ndarray:
    """All vectors of ``parts`` non-negative integers summing to ``m`` (int32[S, parts]),
    ``S = C(m + parts - 1, parts - 1)``, in reverse lexicographic order of the first part."""
    if m < 0 or parts < 1:
        raise ValueError(f"compositions need m >= 0 and parts >= 1, got m={m}, parts={parts}")
    return _compositions_cached(int(m), int(parts))


# Every law is computed with the four IEEE operations only, in a fixed order, and sums are
# math.fsum (correctly rounded): no log, exp or BLAS, whose last bits differ between CPUs
# (numpy's AVX-512 exp/log, glibc's FMA variants, OpenBLAS kernels).  The composition
# sampler's alias tables amplify a one-ulp change in a law into different draws, so a law
# must be the same bits on every machine for the tables to be.

def _multinomial_coefficient(m: int, row: list[int]) -> int:
    """``m! / prod c_j!`` as the exact integer ``prod_j C(m - c_0 - ... - c_(j-1), c_j)``."""
    out, rest = 1, m
    for c in row[:-1]:
        out *= math.comb(rest, c)
        rest -= c
    return out


@lru_cache(maxsize=64)
def _coefficients(m: int, parts: int) -> np.ndarray:
    """``m! / prod c_j!`` of every composition (exact integers, rounded once to float64)."""
    comp = compositions(m, parts)
    out = np.array([float(_multinomial_coefficient(m, row)) for row in comp.tolist()])
    out.setflags(write=False)
    return out


def _powers(x: float, n_max: int) -> np.ndarray:
    """``x^n`` for n = 0..n_max by repeated multiplication."""
    out = np.empty(n_max + 1)
    acc = 1.0
    for n in range(n_max + 1):
        out[n] = acc
        acc *= x
    return out


def _rising_ratios(a: float, alpha: float, n_max: int) -> np.ndarray:
    """``[a]^(n) / alpha^n = prod_{i < n} (a + i) / alpha`` for n = 0..n_max (every factor is
    O(1), so large ``alpha`` -- small rho -- neither overflows nor underflows)."""
    out = np.empty(n_max + 1)
    acc = 1.0
    for n in range(n_max + 1):
        out[n] = acc
        acc *= (a + n) / alpha
    return out


def _product(comp: np.ndarray, coef: np.ndarray, tables: list[np.ndarray]) -> np.ndarray:
    """``coef * prod_j tables[j][comp[:, j]]``, multiplied in cell order."""
    out = coef.copy()
    for j, tab in enumerate(tables):
        out *= tab[comp[:, j]]
    return out


def _support(m: int, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The compositions with no count in a structural-zero cell, and their coefficients:
    the compositions of ``m`` over the positive cells only, written into every cell.  In
    the reverse lexicographic order of :func:`compositions` over all cells (fixing the zero
    cells at 0 leaves the order of the others), with the same integer coefficients (0! = 1),
    so the law is the same bits as filtering the full enumeration -- at C(m + k - 1, k - 1)
    instead of C(m + 3, 3) rows for k positive cells."""
    pos = np.flatnonzero(probs > 0)
    comp = np.zeros((math.comb(m + pos.size - 1, pos.size - 1), probs.size), np.int32)
    comp[:, pos] = compositions(m, pos.size)
    return comp, _coefficients(m, pos.size)


def _multinomial(m: int, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    comp, coef = _support(m, probs)
    pr = _product(comp, coef, [_powers(float(x), m) for x in probs])
    return comp, pr


def _dirichlet_multinomial(m: int, probs: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    comp, coef = _support(m, probs)
    tabs = [_rising_ratios(alpha * float(x), alpha, m) for x in probs]
    pr = _product(comp, coef, tabs) / _rising_ratios(alpha, alpha, m)[m]
    return comp, pr


def _normalised(tables: np.ndarray, probs: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    total = float(math.fsum(probs))
    if not abs(total - 1.0) < 1e-9:
        raise ExactUnsupported(f"{what}: probabilities sum to {total!r}, not 1 (numerical failure)")
    keep = probs > 0
    return np.ascontiguousarray(tables[keep], dtype=np.int32), probs[keep] / total


# Limits of one enumerated law: the compositions are built in memory (int32[S, 4]) and each
# carries its multinomial coefficient, an exact integer from m! rounded once to float64.
# The coefficients of k outcomes sum to k^m, so they fit a float64 while m ln k <= 709
# (m <= 1023 for two outcomes, 511 for four); the tables S bound the memory and the Python
# loop (at the limits: about a second and 2 MiB).  Beyond them a law is ``ExactUnsupported``
# at once -- callers fall back to simulation -- instead of an enumeration that runs for hours
# (C(1503, 3) = 5.6e8 tables at m = 1500) or a float overflow.
MAX_LAW_TABLES = 1 << 17
MAX_LAW_TRIALS = 1023
MAX_LOG_COEFFICIENT = 709.0


def _exact_record(measurement: np.ndarray | None) -> bool:
    return measurement is None or np.array_equal(
        np.asarray(measurement)[:, :4], np.eye(4)) and not np.any(np.asarray(measurement)[:, 4])


def _recorded_probs(p: np.ndarray, measurement: np.ndarray) -> np.ndarray:
    """The categorical law over the 5 recorded outcomes (the last = pair lost) of one pair."""
    Q = np.asarray(measurement, dtype=np.float64)
    q = np.array([max(0.0, math.fsum(p[i] * Q[i, j] for i in range(4))) for j in range(Q.shape[1])])
    return q / math.fsum(q)


def law_tables(cells: tuple[float, ...] | np.ndarray, size: int, measurement: np.ndarray | None = None) -> int:
    """How many tables :func:`cluster_law` enumerates for a cluster of ``size`` pairs:
    ``C(m + k - 1, k - 1)`` over the ``k`` outcomes of positive probability (the law keeps
    those whose probability does not underflow).  Costs nothing, whatever ``size``."""
    return math.comb(int(size) + _outcomes(cells, measurement) - 1, _outcomes(cells, measurement) - 1) \
        if size > 0 else 1


def _outcomes(cells, measurement: np.ndarray | None) -> int:
    """Outcomes of one pair with positive probability (recorded outcomes under measurement error)."""
    p = np.asarray(cells, dtype=np.float64)
    probs = p if _exact_record(measurement) else _recorded_probs(p, measurement)
    return int(np.count_nonzero(probs > 0))


def check_law_size(cells, size: int, measurement: np.ndarray | None = None) -> None:
    """``ExactUnsupported`` when :func:`cluster_law` would enumerate more than it can (see
    ``MAX_LAW_TABLES``); costs nothing, whatever ``size``."""
    n, k = law_tables(cells, size, measurement), _outcomes(cells, measurement)
    if n > MAX_LAW_TABLES or size > MAX_LAW_TRIALS or size * math.log(max(k, 1)) > MAX_LOG_COEFFICIENT:
        raise ExactUnsupported(f"the exact law of a cluster of {size} trials has {n:,} tables over {k} outcomes; "
                               f"exact laws are enumerated up to {MAX_LAW_TABLES:,} tables and {MAX_LAW_TRIALS} "
                               f"trials, with multinomial coefficients below 1e308")


def scenario_law_tables(scenario: PairedScenario) -> int:
    """The largest :func:`law_tables` over the clusters of ``scenario`` (no law is built)."""
    sizes = cluster_sizes(scenario)
    cells = scenario.cell_matrix()
    meas = scenario.measurement_matrix() if scenario.has_measurement_error else None
    return max(law_tables(c, int(m), meas) for m, c in {(int(m), tuple(c)) for m, c in zip(sizes, cells)})


def cluster_law(cells: tuple[float, ...] | np.ndarray, size: int, rho: float,
                measurement: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of one cluster's recorded table.

    Returns ``(tables int32[S, 4], probs float64[S])`` over the tables with positive
    probability.  ``measurement`` is the 4 x 5 matrix of ``PairedScenario.measurement_matrix``
    (None or the identity with a zero loss column means perfect recording)."""
    p = np.asarray(cells, dtype=np.float64)
    if p.shape != (4,) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"cells must be 4 probabilities summing to 1, got {p.tolist()}")
    if size < 0:
        raise ValueError(f"cluster size must be >= 0, got {size}")
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must lie in [0, 1), got {rho!r}")
    if size == 0:
        return np.zeros((1, 4), np.int32), np.ones(1)
    exact_record = _exact_record(measurement)
    if exact_record or rho == 0.0 or size == 1:
        check_law_size(p, size, measurement)
    if exact_record:
        if rho == 0.0 or size == 1:
            comp, pr = _multinomial(size, p)
        else:
            comp, pr = _dirichlet_multinomial(size, p, (1.0 - rho) / rho)
        return _normalised(comp, pr, f"cluster law (m={size})")
    if rho > 0.0 and size > 1:
        raise ExactUnsupported("exact laws with rho > 0 need perfect recording (no label noise, no loss) "
                               f"for clusters of more than one trial (m={size})")
    q = _recorded_probs(p, measurement)  # 5 outcomes, the last = pair lost
    comp, pr = _multinomial(size, q)
    return _normalised(comp[:, :4], pr, f"recorded cluster law (m={size})")


def cluster_sizes(scenario: PairedScenario) -> np.ndarray:
    """Per-cluster sizes (int64[K]) of a fixed-size design; random size laws are unsupported."""
    cs = scenario.cluster_size
    if isinstance(cs, FixedSize):
        return np.full(scenario.clusters, cs.trials, np.int64)
    if isinstance(cs, ExplicitSizes):
        return np.asarray(cs.sizes, np.int64)
    raise ExactUnsupported(f"exact engines need fixed or explicit cluster sizes, not {cs.kind!r}")


def cluster_laws(scenario: PairedScenario) -> list[tuple[np.ndarray, np.ndarray]]:
    """The exact recorded-table law of every cluster of ``scenario``, in cluster order
    (identical clusters share one law object)."""
    sizes = cluster_sizes(scenario)
    cells = scenario.cell_matrix()
    meas = scenario.measurement_matrix() if scenario.has_measurement_error else None
    cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    out = []
    for k in range(scenario.clusters):
        key = (int(sizes[k]), tuple(cells[k]))
        if key not in cache:
            cache[key] = cluster_law(cells[k], int(sizes[k]), scenario.rho, meas)
        out.append(cache[key])
    return out


def law_has_loss(law: tuple[np.ndarray, np.ndarray]) -> bool:
    """True when the law's tables do not all hold the same number of pairs (pairs lost)."""
    totals = law[0].sum(axis=1)
    return bool(totals.min() != totals.max())
