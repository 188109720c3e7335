"""Exact operating characteristics of sequential rules on i.i.d. binary / paired-trial data
(absorbing-state path enumeration; no Monte Carlo error).

Two data models, one observation (one trial pair = one cluster of one trial) per step:

* binomial -- each step is a loss with probability ``p_loss`` and otherwise a tie (the
  seed's Bernoulli losses with a perfect baseline: cells ``(1 - q, q, 0, 0)``); the state
  after ``n`` steps is the loss count ``x``;
* trinomial -- each step is a loss (``p_loss``), a win (``p_win``) or a tie; the state is
  ``(losses, wins)``.

A sequential rule is given as its *decision regions*: for look ``j`` at ``n_j`` steps an
int8 array over the states with 0 = continue, 1 = promote, 3 = stop for harm (this module
knows nothing of methods; ``studies.exact.sequential`` derives the regions from a method's
own kernel).  The engine carries the probability mass of the paths that have not stopped,
state by state: ``n_j - n_{j-1}`` steps of the one-step transition (a two- or three-point
stencil, applied in place), then the mass on stopping states is booked as first crossings
at look ``j`` and removed (Armitage, McPherson & Rowe 1969, J R Stat Soc A 132:235-244,
who computed binomial repeated-testing schemes this way).  Every number is a finite sum
of products of the step probabilities, exact up to float64 rounding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

CONTINUE, PROMOTE, HARM = 0, 1, 3


@dataclass(frozen=True)
class SequentialExact:
    """Exact results of one rule under one i.i.d. step law."""
    looks: np.ndarray              # int64[L] cumulative steps
    promote_by_look: np.ndarray    # float64[L] P(first crossing = promote at look j)
    harm_by_look: np.ndarray       # float64[L] P(stop for harm at look j)
    reach_by_look: np.ndarray      # float64[L] P(the analysis reaches look j)

    @property
    def promote(self) -> float:
        return float(self.promote_by_look.sum())

    @property
    def harm(self) -> float:
        return float(self.harm_by_look.sum())

    @property
    def no_promotion(self) -> float:
        return float(1.0 - self.promote - self.harm)

    @property
    def cumulative_promote(self) -> np.ndarray:
        return np.cumsum(self.promote_by_look)

    @property
    def stop_by_look(self) -> np.ndarray:
        """P(the analysis ends at look j): a crossing there, or the last look reached."""
        out = self.promote_by_look + self.harm_by_look
        out[-1] = self.reach_by_look[-1]
        return out

    @property
    def expected_observations(self) -> float:
        """E[steps at the end of the analysis] (stop or horizon)."""
        return float(np.sum(self.looks * self.stop_by_look))

    def as_dict(self) -> dict:
        return {"looks": self.looks.tolist(), "promote": self.promote, "harm": self.harm,
                "no_promotion": self.no_promotion, "promote_by_look": self.promote_by_look.tolist(),
                "harm_by_look": self.harm_by_look.tolist(), "reach_by_look": self.reach_by_look.tolist(),
                "cumulative_promote": self.cumulative_promote.tolist(),
                "stop_by_look": self.stop_by_look.tolist(),
                "expected_observations": self.expected_observations}


def _check(looks, regions, dims: int) -> np.ndarray:
    looks = np.asarray(looks, dtype=np.int64)
    if looks.ndim != 1 or looks.size == 0:
        raise ValueError("looks must be a non-empty 1-d list of cumulative step counts")
    if looks[0] < 1 or np.any(np.diff(looks) <= 0):
        raise ValueError(f"looks must be strictly increasing positive counts, got {looks.tolist()}")
    if len(regions) != looks.size:
        raise ValueError(f"regions lists {len(regions)} looks but the schedule has {looks.size}")
    for j, (n, reg) in enumerate(zip(looks, regions)):
        want = (n + 1,) * dims
        if np.shape(reg) != want:
            raise ValueError(f"regions[{j}] must have shape {want} for look {n}, got {np.shape(reg)}")
        bad = ~np.isin(np.asarray(reg), (CONTINUE, PROMOTE, HARM))
        if np.any(bad):
            raise ValueError(f"regions[{j}] holds codes other than 0 (continue), 1 (promote), 3 (harm)")
    return looks


def _check_p(name: str, p: float) -> float:
    if not (isinstance(p, (float, int)) and 0.0 <= p <= 1.0):
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


@nb.njit(cache=True)
def _binomial(p, looks, flat, offsets, promote, harm, reach):
    nmax = looks[-1]
    u = np.zeros(nmax + 1)
    u[0] = 1.0
    q = 1.0 - p
    n = 0
    for j in range(looks.shape[0]):
        nj = looks[j]
        while n < nj:
            n += 1
            u[n] = u[n - 1] * p
            for x in range(n - 1, 0, -1):
                u[x] = u[x] * q + u[x - 1] * p
            u[0] = u[0] * q
        tot = 0.0
        pr = 0.0
        hm = 0.0
        off = offsets[j]
        for x in range(nj + 1):
            tot += u[x]
            s = flat[off + x]
            if s == 1:
                pr += u[x]
                u[x] = 0.0
            elif s == 3:
                hm += u[x]
                u[x] = 0.0
        reach[j] = tot
        promote[j] = pr
        harm[j] = hm


def binomial_paths(p_loss: float, looks, regions) -> SequentialExact:
    """Exact first-crossing probabilities for i.i.d. Bernoulli(p_loss) losses;
    ``regions[j]`` is int8[n_j + 1] over the loss count at look j."""
    p = _check_p("p_loss", p_loss)
    looks = _check(looks, regions, 1)
    flat = np.concatenate([np.asarray(r, dtype=np.int8).ravel() for r in regions])
    offsets = np.concatenate([[0], np.cumsum(looks + 1)[:-1]]).astype(np.int64)
    L = looks.size
    promote, harm, reach = np.zeros(L), np.zeros(L), np.zeros(L)
    _binomial(p, looks, flat, offsets, promote, harm, reach)
    return SequentialExact(looks, promote, harm, reach)


@nb.njit(cache=True)
def _trinomial(pl, pw, looks, flat, offsets, promote, harm, reach):
    nmax = looks[-1]
    u = np.zeros((nmax + 1, nmax + 1))
    u[0, 0] = 1.0
    pt = 1.0 - pl - pw
    if pt < 0.0:
        pt = 0.0
    n = 0
    for j in range(looks.shape[0]):
        nj = looks[j]
        while n < nj:
            n += 1
            # in place, both indices descending: u[a, w] <- tie + loss from (a-1, w) + win from (a, w-1)
            for a in range(n, -1, -1):          # a = losses, w = wins
                for w in range(n - a, -1, -1):
                    v = u[a, w] * pt
                    if a > 0:
                        v += u[a - 1, w] * pl
                    if w > 0:
                        v += u[a, w - 1] * pw
                    u[a, w] = v
        tot = 0.0
        pr = 0.0
        hm = 0.0
        off = offsets[j]
        side = nj + 1
        for a in range(nj + 1):
            for w in range(nj + 1 - a):
                m = u[a, w]
                tot += m
                s = flat[off + a * side + w]
                if s == 1:
                    pr += m
                    u[a, w] = 0.0
                elif s == 3:
                    hm += m
                    u[a, w] = 0.0
        reach[j] = tot
        promote[j] = pr
        harm[j] = hm


def trinomial_paths(p_loss: float, p_win: float, looks, regions) -> SequentialExact:
    """Exact first-crossing probabilities for i.i.d. paired trials (loss / win / tie);
    ``regions[j]`` is int8[n_j + 1, n_j + 1] indexed ``[losses, wins]`` (entries with
    ``losses + wins > n_j`` are ignored)."""
    pl = _check_p("p_loss", p_loss)
    pw = _check_p("p_win", p_win)
    if pl + pw > 1.0 + 1e-12:
        raise ValueError(f"p_loss + p_win must not exceed 1, got {pl + pw!r}")
    looks = _check(looks, regions, 2)
    flat = np.concatenate([np.asarray(r, dtype=np.int8).ravel() for r in regions])
    offsets = np.concatenate([[0], np.cumsum((looks + 1) ** 2)[:-1]]).astype(np.int64)
    L = looks.size
    promote, harm, reach = np.zeros(L), np.zeros(L), np.zeros(L)
    _trinomial(pl, pw, looks, flat, offsets, promote, harm, reach)
    return SequentialExact(looks, promote, harm, reach)
