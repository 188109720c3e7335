"""What a decision method estimates, and its true value in a scenario.

Three estimands (tables as in ``simlab.scenario``), all reported on the decision scale of
non-inferiority (null: value <= -margin):

* ``trial_weighted``: ``E sum (n01 - n10) / E sum n``, the candidate rate minus the baseline
  rate over trial pairs;
* ``cluster_weighted``: the mean over clusters of each cluster's difference;
* ``loss_rate``: the share ``p`` of pairs the baseline passes and the candidate fails,
  reported as ``-p``: a loss-rate method's estimate is ``-x / n`` and its bounds ``-p``, so
  "pass iff lower >= -margin" reads "pass iff the upper bound of the loss rate <= margin".

True values use the true outcomes, not the recorded ones (label noise and missingness
change what is observed, not what is estimated).  This is the truth every study scores a
method against; it lives beside the scenario model because it depends on nothing else.
"""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a method module imports the estimands without the pydantic scenario models
    from .scenario import PairedScenario


class Estimand(str, Enum):
    """What a method's estimate targets."""
    TRIAL = "trial_weighted"      # sum(n01 - n10) / sum(n)
    CLUSTER = "cluster_weighted"  # mean over clusters of (n01 - n10) / n
    LOSS_RATE = "loss_rate"       # sum(n10) / sum(n): the candidate's loss rate


def true_value(scenario: PairedScenario, estimand: Estimand | str) -> float:
    """True value of ``estimand`` in ``scenario`` on the decision scale (module docstring)."""
    est = getattr(estimand, "value", estimand)
    if est == Estimand.TRIAL.value:
        return scenario.true_difference_trial()
    if est == Estimand.CLUSTER.value:
        return scenario.true_difference_cluster()
    if est == Estimand.LOSS_RATE.value:
        return -scenario.true_loss_rate()
    raise ValueError(f"unknown estimand {est!r}; known: {', '.join(e.value for e in Estimand)}")




# ---------------------------------------------------------------- the null boundary
# Non-inferiority's null is ``true value <= -margin``; the least favourable laws sit on the
# boundary ``true value = -margin``.  One builder for every estimand, so qualification,
# certification, sizing and the exact engines all evaluate the same scenarios.
#
# * a difference (trial- or cluster-weighted: equal when every cluster has the same cells):
#   ``p01 - p10 = -m``, so ``p10 = (q + m) / 2``, ``p01 = (q - m) / 2`` at discordance ``q``;
#   feasible when ``q >= m`` (p01 >= 0), ``q <= 2 b - m`` (p11 >= 0), ``q <= 2 (1 - b) + m`` (p00 >= 0);
# * the loss rate: ``p10 = m``, ``p01 = q - m`` (the difference is then ``q - 2 m``, not ``-m``:
#   a loss-rate method's null is about its own estimand); feasible when ``q >= m``, ``b >= m``
#   (p11 >= 0) and ``q <= 1 - b + m`` (p00 >= 0).

def is_difference(estimand: Estimand | str) -> bool:
    """Trial- and cluster-weighted differences share one null boundary (identical clusters)."""
    return Estimand(getattr(estimand, "value", estimand)) is not Estimand.LOSS_RATE


def null_pair_rates(estimand: Estimand | str, discordance, margin: float):
    """``(p10, p01)`` of a trial pair on the null boundary at discordance ``q`` (floats or arrays)."""
    if is_difference(estimand):
        return (discordance + margin) / 2.0, (discordance - margin) / 2.0
    return discordance * 0.0 + margin, discordance - margin


def null_discordance_range(estimand: Estimand | str, baseline: float, margin: float, lo: float = 0.0,
                           hi: float = 1.0) -> tuple[float, float] | None:
    """The discordances in ``[lo, hi]`` that put a law with this baseline on the null
    boundary (comment above), or None when there are none."""
    q_lo = max(lo, margin)
    if is_difference(estimand):
        q_hi = min(hi, 2.0 * baseline - margin, 2.0 * (1.0 - baseline) + margin)
    else:
        if baseline < margin - 1e-12:
            return None
        q_hi = min(hi, 1.0 - baseline + margin)
    if q_hi < q_lo - 1e-12:
        return None
    return q_lo, max(q_lo, q_hi)


def null_scenario(estimand: Estimand | str, baseline: float, discordance: float, margin: float,
                  **scenario: object) -> PairedScenario:
    """The scenario on the null boundary of ``estimand`` at this baseline and discordance
    (any other ``PairedScenario`` field in ``scenario``); its true value is ``-margin``."""
    lim = null_discordance_range(estimand, baseline, margin)
    if lim is None or not lim[0] - 1e-12 <= discordance <= lim[1] + 1e-12:
        raise ValueError(f"baseline {baseline:g}, discordance {discordance:g}: no law on the null boundary "
                         f"(margin {margin:g}) of the {getattr(estimand, 'value', estimand)} estimand")
    from simlab.scenario import PairedScenario  # pydantic: only where a scenario is built

    difference = -margin if is_difference(estimand) else discordance - 2.0 * margin
    return PairedScenario.from_rates(baseline, difference, discordance, **scenario)


__all__ = ["Estimand", "is_difference", "null_discordance_range", "null_pair_rates", "null_scenario", "true_value"]
