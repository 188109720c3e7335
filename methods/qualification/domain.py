"""The domain a qualification covers: discrete design cells and the continuous nuisance
(baseline pass rate, discordance) at the null boundary of the method's estimand (true
value = -margin; ``simlab.estimands`` builds the scenarios)."""
from __future__ import annotations

import itertools

from pydantic import Field, field_validator, model_validator

from simlab.estimands import Estimand, null_discordance_range
from simlab.models import FrozenModel
from simlab.scenario import ClusterSize, ExplicitSizes, FixedSize, LabelNoise

DIFFERENCE = Estimand.TRIAL.value  # the default null: a difference of -margin


class Axis(FrozenModel):
    """A closed range ``[lo, hi]`` and the grid evaluated in it (grid[0] = lo, grid[-1] = hi)."""
    lo: float
    hi: float
    grid: tuple[float, ...]

    @model_validator(mode="after")
    def _grid(self):
        g = self.grid
        if not g:
            raise ValueError("grid must list at least one value")
        if list(g) != sorted(set(g)):
            raise ValueError(f"grid must be strictly increasing, got {list(g)}")
        if g[0] != self.lo or g[-1] != self.hi:
            raise ValueError(f"grid must start at lo={self.lo} and end at hi={self.hi}, got {list(g)}")
        return self

    def contains(self, x: float) -> bool:
        return self.lo - 1e-12 <= x <= self.hi + 1e-12

    def bracket(self, x: float) -> tuple[float, ...]:
        """Grid values that enclose ``x``: itself when on the grid, else both neighbours."""
        for g in self.grid:
            if abs(g - x) <= 1e-12 * max(1.0, abs(x)):
                return (g,)
        below = max(g for g in self.grid if g < x)
        above = min(g for g in self.grid if g > x)
        return (below, above)


class IntAxis(Axis):
    lo: int
    hi: int
    grid: tuple[int, ...]


def _probability_axis(name: str, axis: Axis, lo: float = 0.0, hi: float = 1.0, open_hi: bool = False) -> Axis:
    if axis.lo < lo or axis.hi > hi or (open_hi and axis.hi >= hi):
        raise ValueError(f"{name} must lie in [{lo}, {hi}{')' if open_hi else ']'}, got [{axis.lo}, {axis.hi}]")
    return axis


class QualificationDomain(FrozenModel):
    """The design and nuisance region a qualification must cover."""
    clusters: IntAxis
    cluster_sizes: tuple[ClusterSize, ...]
    rho: Axis
    margin: Axis
    baseline: Axis
    discordance: Axis
    label_noise: tuple[LabelNoise, ...] = (LabelNoise(),)
    looks: int | None = Field(default=None, ge=1, le=1000)

    @field_validator("clusters")
    @classmethod
    def _k(cls, v):
        if v.lo < 2:
            raise ValueError(f"clusters must be >= 2, got lo={v.lo}")
        return v

    @field_validator("cluster_sizes")
    @classmethod
    def _sizes(cls, v):
        if not v:
            raise ValueError("cluster_sizes must list at least one cluster-size law")
        for i, s in enumerate(v):
            if isinstance(s, ExplicitSizes):
                raise ValueError(f"cluster_sizes[{i}]: explicit size lists cannot span a grid of K; "
                                 "use fixed, poisson or geometric")
        if len(set(v)) != len(v):
            raise ValueError("cluster_sizes lists a law twice")
        return v

    @field_validator("rho")
    @classmethod
    def _rho(cls, v):
        return _probability_axis("rho", v, open_hi=True)

    @field_validator("margin")
    @classmethod
    def _margin(cls, v):
        if v.lo <= 0.0 or v.hi >= 1.0:
            raise ValueError(f"margin must lie in (0, 1), got [{v.lo}, {v.hi}]")
        return v

    @field_validator("baseline")
    @classmethod
    def _baseline(cls, v):
        return _probability_axis("baseline", v)

    @field_validator("discordance")
    @classmethod
    def _discordance(cls, v):
        return _probability_axis("discordance", v)

    @field_validator("label_noise")
    @classmethod
    def _noise(cls, v):
        if not v:
            raise ValueError("label_noise must list at least one measurement model (perfect labels: {})")
        if len(set(v)) != len(v):
            raise ValueError("label_noise lists a model twice")
        return v

    @model_validator(mode="after")
    def _feasible(self):
        if self.looks is not None and self.looks > self.clusters.lo:
            raise ValueError(f"looks ({self.looks}) cannot exceed the smallest K ({self.clusters.lo})")
        for m in self.margin.grid:
            if not nuisance_grid(self, m):
                raise ValueError(f"margin {m}: no (baseline, discordance) in the domain is compatible with a "
                                 f"true difference of -{m} (discordance must be >= margin)")
        return self

    # -- axes of discrete cells ---------------------------------------------------
    def look_schedule(self, clusters: int) -> tuple[int, ...]:
        """Sequential methods: ``looks`` equally spaced looks, cumulative clusters ceil(j K / L)."""
        if self.looks is None:
            raise ValueError("this domain declares no look schedule (looks)")
        from methods.sequential.base import LookSchedule
        return LookSchedule.equally_spaced(self.looks, clusters).looks

    def cells(self) -> list[tuple[int, int, float, float, int]]:
        """Discrete cells ``(clusters, size index, rho, margin, noise index)``."""
        return list(itertools.product(self.clusters.grid, range(len(self.cluster_sizes)), self.rho.grid,
                                      self.margin.grid, range(len(self.label_noise))))


def discordance_limits(baseline: float, margin: float, lo: float, hi: float,
                       estimand: str = DIFFERENCE) -> tuple[float, float] | None:
    """Feasible discordance at the null boundary of ``estimand``, within [lo, hi]
    (``simlab.estimands.null_discordance_range``)."""
    return null_discordance_range(estimand, baseline, margin, lo, hi)


def clip_discordance(q: float, baseline: float, margin: float, lo: float, hi: float,
                     estimand: str = DIFFERENCE) -> float | None:
    lim = discordance_limits(baseline, margin, lo, hi, estimand)
    if lim is None:
        return None
    return min(max(q, lim[0]), lim[1])


def nuisance_grid(domain: QualificationDomain, margin: float, estimand: str = DIFFERENCE) -> list[tuple[float, float]]:
    """Grid of (baseline, discordance) at the null boundary of ``estimand`` for one margin:
    every grid discordance clipped into the feasible interval of each baseline (deduplicated)."""
    out: list[tuple[float, float]] = []
    d = domain.discordance
    for b in domain.baseline.grid:
        seen: set[float] = set()
        for q in d.grid:
            qc = clip_discordance(q, b, margin, d.lo, d.hi, estimand)
            if qc is None:
                continue
            qc = round(qc, 12)
            if qc not in seen:
                seen.add(qc)
                out.append((b, qc))
    return out
