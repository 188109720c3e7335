"""The one way to name a scenario of a qualification: its nuisance coordinates on the null
boundary, and the design cell they belong to.

* :class:`NuisancePoint` -- baseline pass rate, discordance, intra-cluster correlation rho
  and the index of the label-noise model: where on the null boundary (``simlab.estimands``
  builds the law from them and the method's estimand);
* :class:`ScenarioPoint` -- a nuisance point in a design cell of a domain: clusters K, the
  index of the cluster-size law, the margin; ``stage`` says whether the grid or the
  refinement search put it there.

Records (``WorstCase``), certificates (``CertPoint``), the qualifier's tasks and the
sizing screen all use these; the classes also take their fields positionally, in the
order of ``POSITIONAL``.
"""
from __future__ import annotations

from typing import ClassVar, Literal

from simlab.models import FrozenModel


class _Positional(FrozenModel):
    POSITIONAL: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args, **kwargs):
        if len(args) > len(self.POSITIONAL):
            raise TypeError(f"{type(self).__name__} takes at most {len(self.POSITIONAL)} positional fields")
        kwargs.update(zip(self.POSITIONAL, args))
        super().__init__(**kwargs)


class NuisancePoint(_Positional):
    """Where on the null boundary: baseline, discordance, rho and the label-noise model."""
    baseline: float
    discordance: float
    rho: float
    noise: int = 0

    POSITIONAL: ClassVar[tuple[str, ...]] = ("baseline", "discordance", "rho", "noise")


class ScenarioPoint(NuisancePoint):
    """A nuisance point in a design cell ``(clusters, size index, rho, margin, noise index)``."""
    clusters: int
    size: int
    margin: float
    stage: Literal["grid", "refine"] = "grid"

    POSITIONAL: ClassVar[tuple[str, ...]] = ("clusters", "size", "rho", "margin", "noise", "baseline",
                                             "discordance", "stage")

    @property
    def cell(self) -> tuple[int, int, float, float, int]:
        return (self.clusters, self.size, self.rho, self.margin, self.noise)

    @property
    def point(self) -> tuple:
        """The cell and the rounded nuisance: the key a scenario is known by (stage aside)."""
        return self.cell + (round(self.baseline, 12), round(self.discordance, 12))


__all__ = ["NuisancePoint", "ScenarioPoint"]
