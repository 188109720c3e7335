"""A direction mixture: some customers favour the candidate, the rest the baseline.

Every cluster has discordance ``q``; a share ``favour_share`` of the clusters (drawn
independently per cluster) has candidate-minus-baseline difference ``favour_difference``,
the others ``delta_- = (-m - s delta_+) / (1 - s)``, so the population's trial-weighted
difference is ``-m`` (the null boundary) however large the split.  A cluster of difference
``delta`` has pair cells ``p10 = (q - delta)/2``, ``p01 = (q + delta)/2`` and concordant
pairs ``1 - q`` split in the ratio ``r`` that puts the population baseline at ``baseline``;
given its type a cluster's trials are independent (a finite mixture of multinomials, the
"latent class" model: McLachlan & Peel 2000, *Finite Mixture Models*, ch. 1).

Both differences must keep the cells probabilities: ``|delta_+|, |delta_-| <= q``.  Two
trials of one cluster have ``Cov(D_j, D_j') = Var(delta) = s (1 - s) (delta_+ - delta_-)^2``,
so ``ICC_D = s (1 - s) (delta_+ - delta_-)^2 / (q - m^2)``: the mixture's ICC can exceed any
``rho_max`` while the concordant cells show no overdispersion at all.

Draw order (``DirectionSource`` version 1): per cluster one uniform for its type, then one
per trial for the pair's cell.
"""
from __future__ import annotations

from typing import Literal

import numba as nb
from pydantic import Field, model_validator

from simlab.rng import uniform

from .base import FixedTrialsLaw, RobustSource, null_rates, pair_cell


class DirectionLaw(FixedTrialsLaw):
    """Clusters of two directions at the null boundary (module docstring)."""
    kind: Literal["direction_mixture"] = "direction_mixture"
    discordance: float = Field(gt=0.0, le=1.0)
    favour_share: float = Field(gt=0.0, lt=1.0)
    favour_difference: float = Field(ge=-1.0, le=1.0)

    @model_validator(mode="after")
    def _cells_valid(self):
        null_rates(self.baseline, self.discordance, self.margin)
        if self.favour_difference < -self.margin:
            raise ValueError(f"favour_difference ({self.favour_difference:g}) must be >= -margin "
                             f"({-self.margin:g}): the favouring clusters lean towards the candidate")
        for name, d in (("favour_difference", self.favour_difference), ("the other clusters' difference",
                                                                         self.other_difference)):
            if abs(d) > self.discordance + 1e-12:
                raise ValueError(f"{name} ({d:g}) must lie within +-discordance ({self.discordance:g}): "
                                 "a cluster's difference cannot exceed its discordance")
        return self

    @property
    def other_difference(self) -> float:
        """The difference of the clusters that favour the baseline."""
        s = self.favour_share
        return (-self.margin - s * self.favour_difference) / (1.0 - s)

    def cells(self) -> tuple[float, float, float, float]:
        p10, p01, r = null_rates(self.baseline, self.discordance, self.margin)
        return (1.0 - self.discordance) * r, p10, p01, (1.0 - self.discordance) * (1.0 - r)

    def icc_d(self) -> float:
        s = self.favour_share
        spread = self.favour_difference - self.other_difference
        return s * (1.0 - s) * spread * spread / (self.discordance - self.margin ** 2)

    def source(self, seed: int) -> "DirectionSource":
        return DirectionSource(self, seed)

    def parameters(self) -> dict[str, float | str]:
        return {"baseline": self.baseline, "discordance": self.discordance, "favour_share": self.favour_share,
                "favour_difference": self.favour_difference, "other_difference": self.other_difference}


@nb.njit(cache=True)
def fill_direction(k1, k2, rep_start, out, trials, q, r, share, delta_plus, delta_minus):
    """Replications ``rep_start ..`` into ``out[R, K, 4]``."""
    R, K, _ = out.shape
    for i in range(R):
        rep = rep_start + i
        draw = 0
        for k in range(K):
            delta = delta_plus if uniform(k1, k2, rep, draw) < share else delta_minus
            draw += 1
            p10 = 0.5 * (q - delta)
            out[i, k, :] = 0
            for _ in range(trials):
                out[i, k, pair_cell(uniform(k1, k2, rep, draw), p10, q, r)] += 1
                draw += 1


class DirectionSource(RobustSource):
    """Tables of a :class:`DirectionLaw`, one pure function of ``(seed, law, replication)``."""
    name = "direction_mixture"
    version = "1"

    def kernel(self, out, rep_start):
        law = self.law
        _, _, r = null_rates(law.baseline, law.discordance, law.margin)
        fill_direction(self.k1, self.k2, rep_start, out, law.trials, law.discordance, r, law.favour_share,
                       law.favour_difference, law.other_difference)
