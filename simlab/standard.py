"""The standard workload every benchmark measures: K = 30 clusters x M = 3 trials,
rho = 0.1, cells (p11, p10, p01, p00) = (0.90, 0.04, 0.03, 0.03)."""
from __future__ import annotations

from .scenario import FixedSize, PairedScenario

STANDARD_CELLS = (0.90, 0.04, 0.03, 0.03)


def standard_scenario() -> PairedScenario:
    """The standard workload's scenario (see the module docstring)."""
    return PairedScenario(cells=STANDARD_CELLS, clusters=30, cluster_size=FixedSize(trials=3), rho=0.1)
