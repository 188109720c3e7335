"""The paired, clustered data-generating mechanism (DGM) as a validated, frozen model.

One trial pair falls in one of four cells, always in the order ``(n11, n10, n01, n00)``:
both pass, baseline-only pass, candidate-only pass, both fail.  Within a cluster the
cell probabilities are drawn from a Dirichlet(alpha * p) with ``alpha = (1 - rho) / rho``,
so the cluster's counts are Dirichlet-multinomial and every binary function of a trial
has intra-cluster correlation ``rho`` (Mosimann 1962, Biometrika 49:65-82, eq. 2.4).
Judge label noise then flips each arm's recorded outcome independently, and missingness
removes whole trial pairs (MCAR, or informatively by the recorded candidate outcome).
"""
from __future__ import annotations

import hashlib
import math
from functools import cached_property
from typing import Annotated, Literal, Union

import numpy as np
import rfc8785
from pydantic import Field, field_validator, model_serializer, model_validator

from .models import FrozenModel

CELLS = ("n11", "n10", "n01", "n00")
_TOL = 1e-9


def _check_probability(name: str, value: float) -> float:
    if not (0.0 <= value <= 1.0):
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return value


def _check_cells(name: str, cells: tuple[float, ...]) -> tuple[float, ...]:
    if len(cells) != 4:
        raise ValueError(f"{name} needs 4 probabilities (p11, p10, p01, p00), got {len(cells)}")
    for label, v in zip(("p11", "p10", "p01", "p00"), cells):
        if not math.isfinite(v) or v < 0.0 or v > 1.0:
            raise ValueError(f"{name}.{label} must be a probability in [0, 1], got {v!r}")
    total = sum(cells)
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1, got {total!r}")
    return tuple(float(c) for c in cells)


# ---------------------------------------------------------------- cluster sizes
class FixedSize(FrozenModel):
    """Every cluster has exactly ``trials`` trial pairs."""
    kind: Literal["fixed"] = "fixed"
    trials: int = Field(ge=1, le=100_000)

    def mean(self) -> float:
        return float(self.trials)


class PoissonSize(FrozenModel):
    """``minimum + Poisson(mean - minimum)`` trial pairs (mean is the overall mean)."""
    kind: Literal["poisson"] = "poisson"
    mean_trials: float = Field(gt=0, le=500)
    minimum: int = Field(default=1, ge=0)

    @model_validator(mode="after")
    def _mean_above_min(self):
        if self.mean_trials < self.minimum:
            raise ValueError(f"mean_trials ({self.mean_trials}) must be >= minimum ({self.minimum})")
        return self

    def mean(self) -> float:
        return float(self.mean_trials)


class GeometricSize(FrozenModel):
    """``minimum + G`` trial pairs, G geometric on {0, 1, ...} with mean ``mean - minimum``."""
    kind: Literal["geometric"] = "geometric"
    mean_trials: float = Field(gt=0, le=10_000)
    minimum: int = Field(default=1, ge=0)

    @model_validator(mode="after")
    def _mean_above_min(self):
        if self.mean_trials < self.minimum:
            raise ValueError(f"mean_trials ({self.mean_trials}) must be >= minimum ({self.minimum})")
        return self

    def mean(self) -> float:
        return float(self.mean_trials)


class ExplicitSizes(FrozenModel):
    """One size per cluster, in arrival order (0 = an empty, i.e. missing, cluster)."""
    kind: Literal["explicit"] = "explicit"
    sizes: tuple[int, ...]

    @field_validator("sizes")
    @classmethod
    def _nonnegative(cls, v):
        if len(v) == 0:
            raise ValueError("sizes must list at least one cluster")
        for i, s in enumerate(v):
            if s < 0:
                raise ValueError(f"sizes[{i}] must be >= 0, got {s}")
        return v

    def mean(self) -> float:
        return float(np.mean(self.sizes))


ClusterSize = Annotated[Union[FixedSize, PoissonSize, GeometricSize, ExplicitSizes],
                        Field(discriminator="kind")]


# ---------------------------------------------------------------- measurement
class JudgeCalibration(FrozenModel):
    """The judge's human-labelled calibration set: ``items`` items per arm (``shared``: one
    set of ``items`` for both arms, which then need the same judge error), each with a
    human label (taken as the truth) and the judge's label.  The set is *representative*:
    an item is an output of its arm drawn from the scenario's population, so its human
    label passes with the arm's true (trial-weighted) pass rate; the judge then labels it
    through the arm's sensitivity and specificity (``simlab.sampling.calibration`` draws it
    per replication).  Its counts are what a judge-corrected method is given besides the
    tables; its size is part of the design a qualification covers."""
    items: int = Field(ge=1, le=100_000)
    shared: bool = False


class LabelNoise(FrozenModel):
    """Judge error per arm: sensitivity = P(recorded pass | true pass),
    specificity = P(recorded fail | true fail); ``calibration``: the human-labelled set the
    judge's error is estimated from, when the design has one."""
    baseline_sensitivity: float = 1.0
    baseline_specificity: float = 1.0
    candidate_sensitivity: float = 1.0
    candidate_specificity: float = 1.0
    calibration: JudgeCalibration | None = None

    @model_serializer(mode="wrap")
    def _drop_no_calibration(self, handler):
        # Without a calibration set the model serialises as before the field existed, so the
        # content keys (hence the random streams) of every scenario, record and certificate
        # that names no calibration set do not move.
        data = handler(self)
        if self.calibration is None:
            data.pop("calibration", None)
        return data

    @model_validator(mode="after")
    def _probabilities(self):
        for name in ("baseline_sensitivity", "baseline_specificity",
                     "candidate_sensitivity", "candidate_specificity"):
            _check_probability(name, getattr(self, name))
        if self.calibration is not None and self.calibration.shared and (
                self.baseline_sensitivity != self.candidate_sensitivity
                or self.baseline_specificity != self.candidate_specificity):
            raise ValueError("calibration.shared: one calibration set serves both arms only when their judge error "
                             "is the same (baseline_sensitivity = candidate_sensitivity and baseline_specificity = "
                             "candidate_specificity)")
        return self


class Missingness(FrozenModel):
    """Loss of whole trial pairs.  ``loss_rate`` applies to every pair (MCAR); when
    ``loss_rate_candidate_fail`` is set, pairs whose *recorded* candidate outcome is a
    failure are lost with that probability instead (informative loss)."""
    loss_rate: float = 0.0
    loss_rate_candidate_fail: float | None = None

    @model_validator(mode="after")
    def _probabilities(self):
        _check_probability("loss_rate", self.loss_rate)
        if self.loss_rate_candidate_fail is not None:
            _check_probability("loss_rate_candidate_fail", self.loss_rate_candidate_fail)
        if self.loss_rate >= 1.0 and (self.loss_rate_candidate_fail or 1.0) >= 1.0:
            raise ValueError("loss_rate: every pair would be lost")
        return self


# ---------------------------------------------------------------- the scenario
class PairedScenario(FrozenModel):
    """One paired, clustered binary DGM.

    ``cells`` are the population cell probabilities ``(p11, p10, p01, p00)`` of a trial
    pair.  ``cluster_cells`` optionally gives each cluster its own cells (requires
    explicit sizes), e.g. the seed's 15 one-trial customers who win and 15 nine-trial
    customers who lose.
    """
    cells: tuple[float, float, float, float]
    clusters: int = Field(ge=1, le=1_000_000)
    cluster_size: ClusterSize = FixedSize(trials=1)
    rho: float = Field(default=0.0, ge=0.0, lt=1.0)
    label_noise: LabelNoise = LabelNoise()
    missingness: Missingness = Missingness()
    cluster_cells: tuple[tuple[float, float, float, float], ...] | None = None

    @field_validator("cells")
    @classmethod
    def _cells_valid(cls, v):
        return _check_cells("cells", v)

    @field_validator("cluster_cells")
    @classmethod
    def _cluster_cells_valid(cls, v):
        if v is None:
            return v
        return tuple(_check_cells(f"cluster_cells[{i}]", row) for i, row in enumerate(v))

    @model_validator(mode="after")
    def _consistent(self):
        if isinstance(self.cluster_size, ExplicitSizes) and len(self.cluster_size.sizes) != self.clusters:
            raise ValueError(f"cluster_size.sizes lists {len(self.cluster_size.sizes)} clusters "
                             f"but clusters = {self.clusters}")
        if self.cluster_cells is not None:
            if not isinstance(self.cluster_size, ExplicitSizes):
                raise ValueError("cluster_cells requires cluster_size of kind 'explicit'")
            if len(self.cluster_cells) != self.clusters:
                raise ValueError(f"cluster_cells lists {len(self.cluster_cells)} clusters "
                                 f"but clusters = {self.clusters}")
        return self

    # -- construction ------------------------------------------------------
    @classmethod
    def from_rates(cls, baseline: float, difference: float, discordance: float, **kw) -> "PairedScenario":
        """Cells from the baseline pass rate, the true difference (candidate - baseline)
        and the discordance rate P(outcomes differ) = p10 + p01."""
        for name, v in (("baseline", baseline), ("discordance", discordance)):
            if not math.isfinite(v) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {v!r}")
        if not math.isfinite(difference) or abs(difference) > discordance + _TOL:
            raise ValueError(f"difference={difference!r} is incompatible with discordance={discordance!r}: "
                             "|difference| cannot exceed the discordance rate")
        p10 = (discordance - difference) / 2.0
        p01 = (discordance + difference) / 2.0
        p11 = baseline - p10
        p00 = 1.0 - p11 - p10 - p01
        if p11 < -_TOL or p00 < -_TOL:
            raise ValueError(f"baseline={baseline!r}, difference={difference!r}, discordance={discordance!r} "
                             f"are incompatible: they imply p11={p11:.6g}, p00={p00:.6g}")
        cells = tuple(max(0.0, c) for c in (p11, p10, p01, p00))
        return cls(cells=cells, **kw)

    @classmethod
    def independent_arms(cls, baseline: float, candidate: float, **kw) -> "PairedScenario":
        """Cells for arms that pass independently with the given probabilities."""
        pb, pc = baseline, candidate
        return cls(cells=(pb * pc, pb * (1 - pc), (1 - pb) * pc, (1 - pb) * (1 - pc)), **kw)

    # -- identity ----------------------------------------------------------
    def canonical_json(self) -> bytes:
        return rfc8785.dumps(self.model_dump(mode="json"))

    @cached_property
    def key(self) -> str:
        """Content key: sha256 of the RFC 8785 canonical JSON of the scenario."""
        return hashlib.sha256(self.canonical_json()).hexdigest()

    # -- derived quantities --------------------------------------------------
    @property
    def concentration(self) -> float:
        """Dirichlet concentration alpha = (1 - rho) / rho (inf when rho = 0)."""
        return math.inf if self.rho == 0.0 else (1.0 - self.rho) / self.rho

    def cell_matrix(self) -> np.ndarray:
        """True cell probabilities per cluster, float64[K, 4]."""
        if self.cluster_cells is not None:
            return np.asarray(self.cluster_cells, dtype=np.float64)
        return np.tile(np.asarray(self.cells, dtype=np.float64), (self.clusters, 1))

    def measurement_matrix(self) -> np.ndarray:
        """float64[4, 5]: P(recorded cell j | true cell i), column 4 = pair lost."""
        n = self.label_noise
        def arm(sens, spec):  # rows: true pass, true fail; cols: recorded pass, recorded fail
            return np.array([[sens, 1 - sens], [1 - spec, spec]])
        b = arm(n.baseline_sensitivity, n.baseline_specificity)
        c = arm(n.candidate_sensitivity, n.candidate_specificity)
        flip = np.kron(b, c)  # cell index = 2*baseline_fail + candidate_fail, matches CELLS order
        miss = self.missingness
        loss_fail = miss.loss_rate if miss.loss_rate_candidate_fail is None else miss.loss_rate_candidate_fail
        loss = np.array([miss.loss_rate, loss_fail, miss.loss_rate, loss_fail])
        out = np.empty((4, 5))
        out[:, :4] = flip * (1.0 - loss)[None, :]
        out[:, 4] = 1.0 - out[:, :4].sum(axis=1)
        return out

    @property
    def has_measurement_error(self) -> bool:
        m = self.measurement_matrix()
        return not np.allclose(m[:, :4], np.eye(4), atol=0.0, rtol=0.0)

    def expected_sizes(self) -> np.ndarray:
        cs = self.cluster_size
        if isinstance(cs, ExplicitSizes):
            return np.asarray(cs.sizes, dtype=np.float64)
        return np.full(self.clusters, cs.mean())

    @staticmethod
    def _difference(cells: np.ndarray) -> np.ndarray:
        return cells[..., 2] - cells[..., 1]

    def true_difference_trial(self) -> float:
        """Trial-weighted estimand: E[sum (n01 - n10)] / E[sum n] for true outcomes."""
        w = self.expected_sizes()
        return float(np.sum(w * self._difference(self.cell_matrix())) / np.sum(w))

    def true_difference_cluster(self) -> float:
        """Cluster-weighted estimand: mean over clusters of each cluster's difference
        (clusters with zero expected size carry no weight)."""
        w = self.expected_sizes()
        d = self._difference(self.cell_matrix())
        return float(np.mean(d[w > 0]))

    def observed_cell_matrix(self) -> np.ndarray:
        """Recorded cell probabilities of a *retained* pair, per cluster, float64[K, 4]."""
        raw = self.cell_matrix() @ self.measurement_matrix()
        return raw[:, :4] / raw[:, :4].sum(axis=1, keepdims=True)

    def retention_rate(self) -> np.ndarray:
        raw = self.cell_matrix() @ self.measurement_matrix()
        return raw[:, :4].sum(axis=1)

    def observed_difference_trial(self) -> float:
        """Trial-weighted difference of recorded outcomes among retained pairs."""
        w = self.expected_sizes() * self.retention_rate()
        return float(np.sum(w * self._difference(self.observed_cell_matrix())) / np.sum(w))

    def observed_difference_cluster(self) -> float:
        w = self.expected_sizes()
        return float(np.mean(self._difference(self.observed_cell_matrix())[w > 0]))

    def true_loss_rate(self) -> float:
        """Loss-rate estimand: E[sum n10] / E[sum n] for true outcomes -- the share of
        trial pairs in which the baseline passes and the candidate fails (trial-weighted,
        as the binomial loss test counts them)."""
        w = self.expected_sizes()
        return float(np.sum(w * self.cell_matrix()[:, 1]) / np.sum(w))

    def true_pass_rates(self) -> tuple[float, float]:
        """``(baseline, candidate)`` true pass rates, trial-weighted (``E sum (n11 + n10) /
        E sum n`` and ``E sum (n11 + n01) / E sum n``): the rates a judge-corrected method
        recovers per arm, and the human pass rate of a representative calibration set."""
        w = self.expected_sizes()
        c = self.cell_matrix()
        tot = np.sum(w)
        return (float(np.sum(w * (c[:, 0] + c[:, 1])) / tot), float(np.sum(w * (c[:, 0] + c[:, 2])) / tot))

    def observed_loss_rate(self) -> float:
        """Loss rate of recorded outcomes among retained pairs."""
        w = self.expected_sizes() * self.retention_rate()
        return float(np.sum(w * self.observed_cell_matrix()[:, 1]) / np.sum(w))

    def true_values(self) -> dict[str, float]:
        return {
            "true_difference_trial": self.true_difference_trial(),
            "true_difference_cluster": self.true_difference_cluster(),
            "observed_difference_trial": self.observed_difference_trial(),
            "observed_difference_cluster": self.observed_difference_cluster(),
            "true_loss_rate": self.true_loss_rate(),
            "observed_loss_rate": self.observed_loss_rate(),
        }
