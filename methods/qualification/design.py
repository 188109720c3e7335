"""What a coverage question asks and answers: the design point of an experiment, and whether
a record or certificate covers it (``scope`` decides; certificates and records both answer
with a :class:`Coverage`)."""
from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from simlab.models import FrozenModel
from simlab.scenario import ClusterSize, FixedSize, LabelNoise


class DesignPoint(FrozenModel):
    """What the evidence path knows about an experiment's design.  ``rho`` is the intra-
    cluster correlation when known; ``rho_max`` the pre-registered upper limit when not.
    ``calibration``: the registered judge calibration when the outcomes are judge labels."""
    clusters: int = Field(ge=1)
    cluster_size: ClusterSize = FixedSize(trials=1)
    margin: float = Field(gt=0.0, lt=1.0)
    rho: float | None = Field(default=None, ge=0.0, lt=1.0)
    rho_max: float | None = Field(default=None, ge=0.0, lt=1.0)
    label_noise: LabelNoise = LabelNoise()
    baseline: float | None = Field(default=None, ge=0.0, le=1.0)
    discordance: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence: float | None = None
    looks: int | None = Field(default=None, ge=1)
    # judge-labelled outcomes: the registered calibration counts, one row per set (baseline,
    # candidate) or one shared row, columns 2 * human_fail + judge_fail (``methods.judged``);
    # only a certificate with a label-noise domain covers them
    calibration: tuple[tuple[int, int, int, int], ...] | None = None

    @property
    def rho_irrelevant(self) -> bool:
        """One trial per cluster: the cluster effect does not change the data's law."""
        return isinstance(self.cluster_size, FixedSize) and self.cluster_size.trials == 1


@dataclass(frozen=True)
class Coverage:
    """Answer of :func:`covers`: ``covered`` plus why, and the cells consulted."""
    covered: bool
    reason: str
    cells: tuple[tuple, ...] = ()
    record: str = ""               # record or certificate file, when found by :func:`find_coverage`

    def __bool__(self) -> bool:
        return self.covered
