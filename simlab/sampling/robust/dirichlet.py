"""The Dirichlet-multinomial law itself, in the robustness reports' terms, with any size law.

Not a law outside the family: the model a certificate is computed under (``rho`` and the
cluster sizes are its own parameters).  It is here so that one report can hold the model's
own rows beside the others -- the reference row at the certified corner, and **unequal
cluster sizes drawn from a stated law** (``PoissonSize`` / ``GeometricSize``: ``minimum +
Poisson`` or ``minimum + geometric`` trials per cluster, mean ``mean_trials``).  A
certificate is made at fixed sizes ``M``; random sizes with mean ``M`` are a law the design
check (clusters and trials) may not rule out.  The existing trial-level generator
(``simlab.generate``) already draws Dirichlet-multinomial clusters of random sizes, so the
source is exactly ``simlab.sampling.table_source`` of the law's null scenario
(``simlab.estimands.null_scenario``): a study of that scenario under the same seed sees the
same tables.
"""
from __future__ import annotations

from functools import cached_property
from typing import Annotated, Literal, Union

from pydantic import Field, model_validator

from simlab.estimands import Estimand, null_scenario
from simlab.scenario import FixedSize, GeometricSize, PairedScenario, PoissonSize

from ..sources import TableSource, table_source
from .base import RobustLaw, null_rates

SizeLaw = Annotated[Union[FixedSize, PoissonSize, GeometricSize], Field(discriminator="kind")]


class DirichletLaw(RobustLaw):
    """Dirichlet-multinomial clusters (ICC ``rho``) of sizes ``cluster_size`` on the null boundary."""
    kind: Literal["dirichlet_multinomial"] = "dirichlet_multinomial"
    cluster_size: SizeLaw
    discordance: float = Field(gt=0.0, le=1.0)
    rho: float = Field(ge=0.0, lt=1.0)

    @model_validator(mode="after")
    def _on_boundary(self):
        null_rates(self.baseline, self.discordance, self.margin)
        return self

    @cached_property
    def scenario(self) -> PairedScenario:
        """The ``PairedScenario`` this law is (its cells on the trial-weighted null boundary)."""
        return null_scenario(Estimand.TRIAL, self.baseline, self.discordance, self.margin, clusters=self.clusters,
                             cluster_size=self.cluster_size, rho=self.rho)

    def cells(self) -> tuple[float, float, float, float]:
        return self.scenario.cells

    def icc_d(self) -> float:
        return self.rho   # Var D_k = n (1 + (n - 1) rho)(q - d^2): every binary contrast has ICC rho

    def mean_trials(self) -> float:
        return self.cluster_size.mean()

    def source(self, seed: int) -> TableSource:
        return table_source(self.scenario, seed)

    def parameters(self) -> dict[str, float | str]:
        size = self.cluster_size
        sizes = (f"fixed {size.trials}" if isinstance(size, FixedSize)
                 else f"{size.minimum} + {size.kind}, mean {size.mean_trials:g}")
        return {"baseline": self.baseline, "discordance": self.discordance, "rho": self.rho, "sizes": sizes}
