"""Intra-cluster correlation of the paired outcome, with an upper confidence bound.

simlab's data-generating model (``simlab.scenario``) draws each cluster's four cell
probabilities from a Dirichlet, so each of the four cell indicators (n11, n10, n01, n00)
has the same intra-cluster correlation ``rho`` (Mosimann 1962, Biometrika 49:65-82).  The
point estimate pools the one-way ANOVA estimator over the four indicators (the categorical
ANOVA of Light & Margolin 1971, JASA 66:534-544):

    rho_hat = (sum_c MSB_c - sum_c MSW_c) / (sum_c MSB_c + (n0 - 1) sum_c MSW_c),
    n0 = (N - sum_k n_k^2 / N) / (K - 1)

(Donner 1986, Int Stat Rev 54:67-82, eq. 2.2 for unequal cluster sizes).  The upper bound
is Searle's F-based bound (Searle 1971, *Linear Models*, sec. 9.7; Donner & Wells 1986,
Biometrics 42:401-412) for each indicator that varies, at one-sided level ``level``,

    upper_c = (F_c / F_a - 1) / (F_c / F_a + n0 - 1),   F_c = MSB_c / MSW_c,
    F_a = the a = 1 - level quantile of F(K - 1, N - K),

and the largest of the four is reported (conservative: a hold is never avoided by the
choice of indicator).  The F bound is exact for balanced normal data and approximate for
binary indicators.  Data that cannot bound the ICC (no variation at all) get the bound 1;
with one trial pair per cluster the ICC does not enter the design (``applicable`` False).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class IccBound:
    applicable: bool
    estimate: float | None
    upper: float | None
    level: float
    note: str

    def as_dict(self) -> dict:
        return {"applicable": self.applicable, "estimate": self.estimate, "upper": self.upper,
                "level": self.level, "note": self.note,
                "method": "pooled one-way ANOVA estimator; Searle F upper bound, max over cell indicators"}


def icc_upper_bound(tables: np.ndarray, level: float) -> IccBound:
    """ICC estimate and one-sided ``level`` upper bound from per-cluster tables ``(K, 4)``."""
    from scipy import special  # the F quantile; scipy.stats is a far slower import

    t = np.asarray(tables, dtype=np.float64)
    n_k = t.sum(axis=1)
    t, n_k = t[n_k > 0], n_k[n_k > 0]
    K, N = len(n_k), float(n_k.sum())
    if K < 2:
        return IccBound(True, None, 1.0, level, "fewer than two clusters: the ICC cannot be bounded")
    if N == K:
        return IccBound(False, None, None, level, "one trial pair per cluster: clusters are the trials, "
                                                  "the ICC does not enter the design")
    n0 = (N - float(np.sum(n_k ** 2)) / N) / (K - 1)
    p_k = t / n_k[:, None]
    p = t.sum(axis=0) / N
    msb = (n_k[:, None] * (p_k - p) ** 2).sum(axis=0) / (K - 1)
    msw = (t * (1.0 - p_k)).sum(axis=0) / (N - K)
    varies = (msb > 0) | (msw > 0)
    if not varies.any():
        return IccBound(True, None, 1.0, level, "no variation in the paired outcome: the data cannot bound the ICC")
    sb, sw = msb[varies].sum(), msw[varies].sum()
    estimate = float((sb - sw) / (sb + (n0 - 1.0) * sw))
    f_a = float(special.fdtri(K - 1, N - K, 1.0 - level))
    uppers = []
    for b, w in zip(msb[varies], msw[varies]):
        if w == 0.0:
            uppers.append(1.0)
            continue
        ratio = (b / w) / f_a
        uppers.append((ratio - 1.0) / (ratio + n0 - 1.0))
    upper = float(min(1.0, max(0.0, max(uppers))))
    return IccBound(True, estimate, upper, level, f"{K} clusters, {int(N)} pairs, n0 = {n0:.4g}")
