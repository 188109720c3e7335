"""What every law outside the Dirichlet-multinomial family shares: the model's common
fields and identity, the source base class, and the realised moments of drawn tables.

A law is a frozen pydantic model (``simlab.models.FrozenModel``) of one experiment: ``K``
clusters, the margin it sits on the null boundary of, the population baseline pass rate,
and its own parameters.  ``key`` is the sha256 of its RFC 8785 canonical JSON (as
``PairedScenario.key``); the ``kind`` field keeps the JSON of two laws of different kinds
apart.  Every law states its population cell rates per trial pair, its trial-weighted
difference (``-margin``: the null boundary) and the implied intra-cluster correlation of
``D = n01 - n10`` (the quantity the evidence path's ICC check estimates), so a report can
say whether that check could catch it (ICC above ``rho_max``) or not.
"""
from __future__ import annotations

import abc
import hashlib
from functools import cached_property

import numba as nb
import numpy as np
import rfc8785
from pydantic import Field, model_validator

from simlab.estimands import Estimand, null_discordance_range
from simlab.models import FrozenModel
from simlab.rng import stream_key

from ..sources import TableSource

DRAW_LIMIT = 1 << 31  # draws a replication may use (the counter holds 2^32; rejection needs slack)


class RobustLaw(FrozenModel):
    """Fields every law has; subclasses add ``kind`` and their parameters."""
    clusters: int = Field(ge=1, le=1_000_000)
    margin: float = Field(gt=0.0, lt=1.0)
    baseline: float = Field(gt=0.0, lt=1.0)

    def model_copy(self, *, update=None, deep: bool = False):
        """A validated copy: pydantic's own copy would skip the validators and carry over the
        cached ``key`` (and a law's cached constants) of the original."""
        return type(self).model_validate({**self.model_dump(), **(update or {})})

    # -- identity ----------------------------------------------------------
    def canonical_json(self) -> bytes:
        return rfc8785.dumps(self.model_dump(mode="json"))

    @cached_property
    def key(self) -> str:
        """Content key: sha256 of the RFC 8785 canonical JSON of the law."""
        return hashlib.sha256(self.canonical_json()).hexdigest()

    # -- what every law states ---------------------------------------------
    @abc.abstractmethod
    def cells(self) -> tuple[float, float, float, float]:
        """Population probabilities ``(p11, p10, p01, p00)`` of a trial pair."""

    @abc.abstractmethod
    def icc_d(self) -> float:
        """Intra-cluster correlation of a trial's ``D = n01 - n10`` (two trials of one cluster)."""

    @abc.abstractmethod
    def source(self, seed: int) -> TableSource:
        """The table source of this law under ``seed``."""

    @abc.abstractmethod
    def parameters(self) -> dict[str, float | str]:
        """The law's own parameters (what a report's row shows beside the kind)."""

    @abc.abstractmethod
    def mean_trials(self) -> float:
        """Mean trial pairs per cluster (the design's M)."""

    @property
    def label(self) -> str:
        """``kind: name value, ...`` -- one line for a table (the baseline, common to a report's
        laws, left out)."""
        def fmt(v):
            return v if isinstance(v, str) else f"{v:.4g}"
        return f"{self.kind}: " + ", ".join(f"{k} {fmt(v)}" for k, v in self.parameters().items() if k != "baseline")

    def implied_difference(self) -> float:
        """Trial-weighted difference ``p01 - p10`` of the population cells (``-margin``)."""
        c = self.cells()
        return c[2] - c[1]

    def implied_discordance(self) -> float:
        """``P(outcomes differ) = p10 + p01`` of the population cells."""
        c = self.cells()
        return c[1] + c[2]


class FixedTrialsLaw(RobustLaw):
    """A law whose clusters all have ``trials`` trial pairs."""
    trials: int = Field(ge=1, le=10_000)

    def mean_trials(self) -> float:
        return float(self.trials)

    @model_validator(mode="after")
    def _draws_fit(self):
        if self.clusters * self.trials * 16 >= DRAW_LIMIT:
            raise ValueError(f"clusters x trials = {self.clusters * self.trials} is too large for one replication's "
                             f"draw counter (at most {DRAW_LIMIT // 16 - 1} trial pairs)")
        return self


def null_rates(baseline: float, discordance: float, margin: float) -> tuple[float, float, float]:
    """``(p10, p01, r)`` of a trial pair on the null boundary (``p01 - p10 = -margin``) at this
    discordance, with ``r = p11 / (p11 + p00)``: the share of concordant pairs that both pass.
    A ``ValueError`` naming the field when the discordance puts no law there."""
    lim = null_discordance_range(Estimand.TRIAL, baseline, margin)
    if lim is None or not lim[0] - 1e-12 <= discordance <= lim[1] + 1e-12:
        where = "none" if lim is None else f"[{lim[0]:g}, {lim[1]:g}]"
        raise ValueError(f"discordance {discordance:g} puts no law on the null boundary at baseline {baseline:g}, "
                         f"margin {margin:g} (feasible: {where})")
    p10, p01 = (discordance + margin) / 2.0, (discordance - margin) / 2.0
    r = (baseline - p10) / (1.0 - discordance) if discordance < 1.0 else 0.0
    return p10, p01, min(max(r, 0.0), 1.0)


class RobustSource(TableSource):
    """A table source whose stream key is ``(seed, law key | name-vVERSION)``; ``fill``
    checks the buffer and the replication range, then runs the law's kernel (which zeroes
    each cluster's row before counting into it)."""
    moment_size = None

    def __init__(self, law: RobustLaw, seed: int):
        self.law = law
        self.clusters = law.clusters
        self.k1, self.k2 = stream_key(int(seed), f"{law.key}|{self.name}-v{self.version}")

    @abc.abstractmethod
    def kernel(self, out: np.ndarray, rep_start: np.int64) -> None:
        """Write replications ``rep_start ..`` into the checked ``out``."""

    def fill(self, out, rep_start):
        if self.check_buffer(out, rep_start):
            self.kernel(out, np.int64(rep_start))
        return out


@nb.njit(inline="always", cache=True)
def pair_cell(x, p10, q, concordant_pass):
    """The cell (``simlab.scenario`` order: 0 n11, 1 n10, 2 n01, 3 n00) a uniform ``x`` puts a trial pair
    in, with ``P(n10) = p10``, ``P(n01) = q - p10`` and concordant pairs ``1 - q``, a share
    ``concordant_pass`` of which both pass (cumulative order n10, n01, n11, n00)."""
    if x < p10:
        return 1
    if x < q:
        return 2
    if x < q + (1.0 - q) * concordant_pass:
        return 0
    return 3


def realised_moments(tables: np.ndarray, difference: float | None = None,
                     discordance: float | None = None) -> dict[str, np.ndarray]:
    """Per replication of ``tables[R, K, 4]``: the trial-weighted difference and discordance
    and the moment estimate of the ICC of ``D``,

        rho_D = (sum_k (D_k - n_k d)^2 - N v) / ((sum_k n_k^2 - N) v),   v = q - d^2,

    of ``Cov(D_j, D_j') / Var(D_j)`` for two trials of one cluster (the Dirichlet-multinomial
    rho: ``Var D_k = n_k (1 + (n_k - 1) rho) v``).  With the law's true ``difference`` and
    ``discordance`` as ``d`` and ``q`` the estimate is unbiased given the sizes; without them
    each replication's own are used (biased by O(1/K)).  NaN where no cluster has two trials."""
    t = tables.astype(np.int64)
    n = t.sum(axis=2)
    D = (t[:, :, 2] - t[:, :, 1]).astype(np.float64)
    N = n.sum(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        own_d = D.sum(axis=1) / N
        own_q = (t[:, :, 1] + t[:, :, 2]).sum(axis=1) / N
        d = own_d if difference is None else np.full_like(own_d, difference)
        q = own_q if discordance is None else np.full_like(own_q, discordance)
        v = q - d * d
        ss = ((D - n * d[:, None]) ** 2).sum(axis=1)
        pairs = (n * n).sum(axis=1) - N
        rho = np.where((pairs > 0) & (v > 0), (ss - N * v) / (pairs * v), np.nan)
    return {"difference": own_d, "discordance": own_q, "icc_d": rho}
