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
from functools import lru_cache

import numpy as np

from ..scenario import ExplicitSizes, FixedSize, PairedScenario


class ExactUnsupported(ValueError):
    """The scenario (or method) lies outside what the exact engines compute."""


@lru_cache(maxsize=64)
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

@lru_cache(maxsize=64)
def _coefficients(m: int, parts: int) -> np.ndarray:
    """``m! / prod c_j!`` of every composition (exact integers, rounded once to float64)."""
    comp = compositions(m, parts)
    fact = [math.factorial(i) for i in range(m + 1)]
    out = np.array([float(fact[m] // math.prod(fact[c] for c in row)) for row in comp.tolist()])
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


def _multinomial(m: int, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    comp = compositions(m, probs.size)
    keep = np.all((probs > 0) | (comp == 0), axis=1)  # structural zeros
    pr = _product(comp[keep], _coefficients(m, probs.size)[keep], [_powers(float(x), m) for x in probs])
    return comp[keep], pr


def _dirichlet_multinomial(m: int, probs: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    comp = compositions(m, probs.size)
    keep = np.all((probs > 0) | (comp == 0), axis=1)
    tabs = [_rising_ratios(alpha * float(x), alpha, m) for x in probs]
    pr = _product(comp[keep], _coefficients(m, probs.size)[keep], tabs) / _rising_ratios(alpha, alpha, m)[m]
    return comp[keep], pr


def _normalised(tables: np.ndarray, probs: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    total = float(math.fsum(probs))
    if not abs(total - 1.0) < 1e-9:
        raise ExactUnsupported(f"{what}: probabilities sum to {total!r}, not 1 (numerical failure)")
    keep = probs > 0
    return np.ascontiguousarray(tables[keep], dtype=np.int32), probs[keep] / total


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
    exact_record = measurement is None or np.array_equal(
        np.asarray(measurement)[:, :4], np.eye(4)) and not np.any(np.asarray(measurement)[:, 4])
    if exact_record:
        if rho == 0.0 or size == 1:
            comp, pr = _multinomial(size, p)
        else:
            comp, pr = _dirichlet_multinomial(size, p, (1.0 - rho) / rho)
        return _normalised(comp, pr, f"cluster law (m={size})")
    if rho > 0.0 and size > 1:
        raise ExactUnsupported("exact laws with rho > 0 need perfect recording (no label noise, no loss) "
                               f"for clusters of more than one trial (m={size})")
    Q = np.asarray(measurement, dtype=np.float64)  # 5 outcomes, the last = pair lost
    q = np.array([max(0.0, math.fsum(p[i] * Q[i, j] for i in range(4))) for j in range(Q.shape[1])])
    q = q / math.fsum(q)
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
