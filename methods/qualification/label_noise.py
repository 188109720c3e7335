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

The search (:meth:`LabelNoiseDomain.models`) evaluates finitely many nodes of that box, the
judge coordinates being ``(Se, Sp)`` of one shared judge or ``(Se_b, Sp_b, Se_c, Sp_c)``
of the two arms' judges: ``corners`` -- every corner and the centre (5 nodes shared, 17 per
arm); ``edges`` (the default for new certificates) -- also every edge midpoint, the nodes
with exactly one coordinate at its range's midpoint (the full 3 x 3 grid, 9 nodes, shared;
49 per arm).  The certificate lists the nodes it evaluated (``CertifiedDesign.label_noise``,
bound to the domain: :meth:`LabelNoiseDomain.node_set`), and its worst case is the worst
over those nodes, like the rest of a simulation certificate's nuisance grid: a search, not a
proof between its points.  No monotonicity in Se or Sp is claimed: the delta-method interval
of ``judge_corrected`` has no such property that we can prove.

Coverage (:func:`calibration_outside`): the true sensitivity and specificity are unknown;
the registered calibration set estimates them.  A registered calibration is inside the
domain when its sets have exactly the certified size and layout and, for each of the ``r``
estimated rates (2 with one shared set, 4 per arm), the exact (Clopper-Pearson 1934,
Biometrika 26:404-413) lower and upper bounds, each at one-sided level ``1 - alpha / r``
(the two-sided interval at ``1 - 2 alpha / r``), lie inside the certified range; ``alpha``
is the certificate's.  Point estimates inside the box are not enough: a 50-item set
estimating 0.95 is consistent with 0.85.

The guarantee this gives (what a covered, judge-corrected pass rests on).  Whatever the
judge's true rates: if one of them lies outside its certified range -- say ``Se < se_lo`` --
the calibration is found inside only if that rate's lower bound exceeds its true value,
which happens with probability at most ``alpha / r`` (the one-sided Clopper-Pearson
guarantee, conditional on the number of human-labelled passes and so unconditionally); so a
false pass is accepted as covered with probability at most ``alpha / r <= alpha``.  If all
true rates lie inside the box the certificate bounds the false-pass rate by its threshold at
the nodes it evaluated (between nodes: searched, not proved).  Both parts assume the
label-noise model the certificate simulates: the judge's error depends on the arm only, the
calibration set is a representative sample of that arm's outputs labelled by humans whose
labels are the truth, and it is independent of the trials.  The check is of the same kind as
the evidence path's ICC check (``evidence.icc``: an upper bound at one-sided level
``1 - alpha`` against the registered ``rho_max``), with one difference: ``rho_max`` is a
registered assumption the ICC bound screens, whereas here the rule itself keeps the
probability of accepting a judge outside the box at most ``alpha / r``, so the statement
is not conditional on the true rates lying inside it.
"""
from __future__ import annotations

import itertools
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from simlab.models import FrozenModel
from simlab.scenario import JudgeCalibration, LabelNoise

SET_NAMES = {1: ("shared",), 2: ("baseline", "candidate")}
NODE_SETS = ("edges", "corners")
NodeSet = Literal["edges", "corners"]
_NODE_WORDS = {"corners": "its corners and centre", "edges": "its corners, edge midpoints and centre"}


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

    def models(self, nodes: NodeSet) -> tuple[LabelNoise, ...]:
        """The label-noise models of node set ``nodes`` (module docstring): the box's corners,
        then (``edges``) its edge midpoints, then its centre; no repeats (a range with lo = hi
        has one value)."""
        if nodes not in NODE_SETS:
            raise ValueError(f"label-noise nodes must be one of {', '.join(NODE_SETS)}, got {nodes!r}")
        cal = JudgeCalibration(items=self.calibration_items, shared=self.calibration_shared)
        ranges = [self.sensitivity, self.specificity] * (1 if self.calibration_shared else 2)
        ends = [sorted(set(r)) for r in ranges]
        mids = [sum(r) / 2.0 for r in ranges]
        points = list(itertools.product(*ends))                       # corners
        if nodes == "edges":                                          # exactly one coordinate at its midpoint
            for i, mid in enumerate(mids):
                others = [ends[j] for j in range(len(ends)) if j != i]
                points += [(*rest[:i], mid, *rest[i:]) for rest in itertools.product(*others)]
        points.append(tuple(mids))                                    # the centre
        out: list[LabelNoise] = []
        for x in points:
            se_b, sp_b, se_c, sp_c = x * 2 if self.calibration_shared else x
            m = LabelNoise(baseline_sensitivity=se_b, baseline_specificity=sp_b, candidate_sensitivity=se_c,
                           candidate_specificity=sp_c, calibration=cal)
            if m not in out:
                out.append(m)
        return tuple(out)

    def node_set(self, models) -> NodeSet | None:
        """Which named node set ``models`` is (a certificate's recorded search), or None."""
        models = tuple(models)
        return next((n for n in NODE_SETS if models == self.models(n)), None)

    def describe_nodes(self, models) -> str:
        """The searched nodes in words: how many, which, and what is (not) claimed between them."""
        which = _NODE_WORDS.get(self.node_set(models), "its listed nodes")
        return (f"worst case over the {len(tuple(models))} label-noise nodes the certificate lists ({which}), a search, "
                "not a proof between them")

    def describe(self) -> str:
        layout = "one set shared by both arms" if self.calibration_shared else "one set per arm"
        judges = "one judge for both arms" if self.calibration_shared else "each arm's judge independently"
        return (f"judge sensitivity in [{self.sensitivity[0]:g}, {self.sensitivity[1]:g}] and specificity in "
                f"[{self.specificity[0]:g}, {self.specificity[1]:g}] for {judges}, calibration "
                f"sets of {self.calibration_items} human-labelled items ({layout}) drawn with every replication")


def bound_level(alpha: float, rates: int) -> float:
    """The one-sided level ``1 - alpha / rates`` of each Clopper-Pearson bound of the coverage
    check (module docstring)."""
    if not 0.0 < alpha < 0.5 or rates < 1:
        raise ValueError(f"alpha must lie in (0, 0.5) and rates >= 1, got {alpha!r}, {rates!r}")
    return 1.0 - alpha / rates


def rate_intervals(counts: np.ndarray, alpha: float) -> dict[str, np.ndarray]:
    """Per set of ``counts`` (A, 4) (columns ``2 * human_fail + judge_fail``,
    ``methods.judged``): the estimated sensitivity and specificity with their Clopper-Pearson
    bounds (``lo``/``hi``), each at one-sided level ``1 - alpha / r`` for the ``r = 2 A``
    rates (NaN where a set has no human pass, resp. fail); ``level`` is that one-sided level."""
    from simlab.proportions import clopper_pearson

    c = np.asarray(counts, dtype=np.int64)
    level = bound_level(alpha, 2 * c.shape[0])
    out = {}
    for name, x, n in (("sensitivity", c[:, 0], c[:, 0] + c[:, 1]), ("specificity", c[:, 3], c[:, 2] + c[:, 3])):
        lo, hi = clopper_pearson(x, n, level, sided="one")
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(n > 0, x / np.maximum(n, 1), np.nan)
        out[f"{name}_lo"], out[f"{name}_hi"] = lo, hi
    out["items"] = c.sum(axis=1)
    out["level"] = np.float64(level)
    return out


def calibration_outside(domain: LabelNoiseDomain, counts, alpha: float) -> str | None:
    """Why the registered calibration ``counts`` (A, 4) is not inside ``domain`` at the
    certificate's ``alpha`` (see the module docstring), or None when it is."""
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 2 or c.shape[1] != 4 or c.shape[0] not in SET_NAMES:
        return f"calibration counts of shape {c.shape} are neither one shared set nor one set per arm"
    shared = c.shape[0] == 1
    if shared != domain.calibration_shared:
        return (f"the registered calibration has {'one shared set' if shared else 'one set per arm'}, the certificate "
                f"covers {'one shared set' if domain.calibration_shared else 'one set per arm'}")
    est = rate_intervals(c, alpha)
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
                return (f"the {name} set's {rate} {x:.4g} has one-sided {est['level']:.4g} Clopper-Pearson bounds "
                        f"[{lo:.4g}, {hi:.4g}], not inside the certified [{r_lo:g}, {r_hi:g}]")
    return None


__all__ = ["NODE_SETS", "LabelNoiseDomain", "bound_level", "calibration_outside", "rate_intervals"]
