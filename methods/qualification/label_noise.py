"""Label-noise domains: the judge errors and calibration-set size a certificate's worst case is
taken over, and whether a registered judge calibration lies inside one (issue 30, item 3).

When a model judge labels the outcomes, a judge-corrected method's false-pass rate depends
on the judge's sensitivity and specificity on each arm's outputs and on the size of the
human-labelled calibration set they are estimated from (``simlab.scenario.LabelNoise``,
``JudgeCalibration``).  Those parameters are nuisance like the baseline or rho: a
certificate for judge-labelled evidence searches them over a registered
:class:`LabelNoiseDomain` -- sensitivity in ``[se_lo, se_hi]`` and specificity in
``[sp_lo, sp_hi]`` for each arm's judge independently (so a judge more lenient on the
candidate's outputs than on the baseline's is inside), at exactly ``calibration_items``
items per set, per arm or shared.

The search (:meth:`LabelNoiseDomain.models`): every corner of the box -- each arm's
``(Se, Sp)`` at ``{lo, hi}^2``, the arms independently (16 models; 4 with one shared set,
whose arms have one judge) -- and its centre.  Like the rest of a simulation certificate's
nuisance grid it is a search, not a proof between its points.

Coverage (:func:`calibration_outside`): the true sensitivity and specificity are unknown;
the registered calibration set estimates them.  A registered calibration is inside the
domain when its sets have exactly the certified size and layout and the exact
(Clopper-Pearson 1934, Biometrika 26:404-413) two-sided interval of every estimated
sensitivity and specificity lies inside the certified ranges, each interval at level
``1 - (1 - COVERAGE_CONFIDENCE) / r`` for ``r`` estimated rates (Bonferroni): if the truth
lies outside the box, a calibration set is found inside it with probability at most
``1 - COVERAGE_CONFIDENCE``.  Point estimates inside the box are not enough: a 50-item set
estimating 0.95 is consistent with 0.85.
"""
from __future__ import annotations

import itertools

import numpy as np
from pydantic import Field, model_validator

from simlab.models import FrozenModel
from simlab.scenario import JudgeCalibration, LabelNoise

COVERAGE_CONFIDENCE = 0.95
SET_NAMES = {1: ("shared",), 2: ("baseline", "candidate")}


class LabelNoiseDomain(FrozenModel):
    """Sensitivity and specificity ranges (both arms' judges, independently) and the
    calibration-set layout a certificate covers."""
    sensitivity: tuple[float, float]
    specificity: tuple[float, float]
    calibration_items: int = Field(ge=1, le=100_000)
    calibration_shared: bool = False

    @model_validator(mode="after")
    def _ranges(self):
        for name in ("sensitivity", "specificity"):
            lo, hi = getattr(self, name)
            if not 0.0 < lo <= hi <= 1.0:
                raise ValueError(f"label-noise domain: {name} range must satisfy 0 < lo <= hi <= 1, got ({lo}, {hi})")
        if self.sensitivity[0] + self.specificity[0] <= 1.0:
            raise ValueError("label-noise domain: sensitivity lo + specificity lo must exceed 1 (a judge no better "
                             f"than chance cannot be corrected), got {self.sensitivity[0]} + {self.specificity[0]}")
        return self

    def models(self) -> tuple[LabelNoise, ...]:
        """The label-noise models searched: the box's corners, then its centre (no repeats)."""
        cal = JudgeCalibration(items=self.calibration_items, shared=self.calibration_shared)
        corners = list(itertools.product(sorted(set(self.sensitivity)), sorted(set(self.specificity))))
        centre = (sum(self.sensitivity) / 2.0, sum(self.specificity) / 2.0)
        if self.calibration_shared:
            judges = [(a, a) for a in corners + [centre]]
        else:
            judges = list(itertools.product(corners, corners)) + [(centre, centre)]
        out: list[LabelNoise] = []
        for (se_b, sp_b), (se_c, sp_c) in judges:
            m = LabelNoise(baseline_sensitivity=se_b, baseline_specificity=sp_b, candidate_sensitivity=se_c,
                           candidate_specificity=sp_c, calibration=cal)
            if m not in out:
                out.append(m)
        return tuple(out)

    def describe(self) -> str:
        layout = "one set shared by both arms" if self.calibration_shared else "one set per arm"
        return (f"judge sensitivity in [{self.sensitivity[0]:g}, {self.sensitivity[1]:g}] and specificity in "
                f"[{self.specificity[0]:g}, {self.specificity[1]:g}] for each arm's judge independently, calibration "
                f"sets of {self.calibration_items} human-labelled items ({layout}) drawn with every replication")


def rate_intervals(counts: np.ndarray, confidence: float = COVERAGE_CONFIDENCE) -> dict[str, np.ndarray]:
    """Per set of ``counts`` (A, 4) (columns ``2 * human_fail + judge_fail``,
    ``methods.judged``): the estimated sensitivity and specificity with their Bonferroni
    Clopper-Pearson intervals (``lo``/``hi``; NaN where a set has no human pass, resp. fail)."""
    from simlab.proportions import clopper_pearson

    c = np.asarray(counts, dtype=np.int64)
    level = 1.0 - (1.0 - confidence) / (2 * c.shape[0])
    out = {}
    for name, x, n in (("sensitivity", c[:, 0], c[:, 0] + c[:, 1]), ("specificity", c[:, 3], c[:, 2] + c[:, 3])):
        lo, hi = clopper_pearson(x, n, level)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(n > 0, x / np.maximum(n, 1), np.nan)
        out[f"{name}_lo"], out[f"{name}_hi"] = lo, hi
    out["items"] = c.sum(axis=1)
    out["level"] = np.float64(level)
    return out


def calibration_outside(domain: LabelNoiseDomain, counts) -> str | None:
    """Why the registered calibration ``counts`` (A, 4) is not inside ``domain`` (see the
    module docstring), or None when it is."""
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 2 or c.shape[1] != 4 or c.shape[0] not in SET_NAMES:
        return f"calibration counts of shape {c.shape} are neither one shared set nor one set per arm"
    shared = c.shape[0] == 1
    if shared != domain.calibration_shared:
        return (f"the registered calibration has {'one shared set' if shared else 'one set per arm'}, the certificate "
                f"covers {'one shared set' if domain.calibration_shared else 'one set per arm'}")
    est = rate_intervals(c)
    for a, name in enumerate(SET_NAMES[c.shape[0]]):
        if int(est["items"][a]) != domain.calibration_items:
            return (f"the {name} calibration set has {int(est['items'][a])} items, the certificate covers exactly "
                    f"{domain.calibration_items} (calibration-set sizes are not interpolated)")
        for rate in ("sensitivity", "specificity"):
            lo, hi, x = est[f"{rate}_lo"][a], est[f"{rate}_hi"][a], est[rate][a]
            r_lo, r_hi = getattr(domain, rate)
            if not np.isfinite(x):
                return f"the {name} calibration set cannot estimate the judge's {rate} (no human-labelled " + (
                    "pass)" if rate == "sensitivity" else "fail)")
            if lo < r_lo - 1e-12 or hi > r_hi + 1e-12:
                return (f"the {name} set's {rate} {x:.4g} has the {est['level']:.4g} Clopper-Pearson interval "
                        f"[{lo:.4g}, {hi:.4g}], not inside the certified [{r_lo:g}, {r_hi:g}]")
    return None


__all__ = ["COVERAGE_CONFIDENCE", "LabelNoiseDomain", "calibration_outside", "rate_intervals"]
