"""Scenario verdicts from Monte Carlo counts, with error control valid under adaptive
replication.

A scenario's false-pass rate ``p`` is estimated from ``x`` passes in ``n`` replications and
judged against the policy's threshold ``t``: *qualified* when the one-sided Clopper-Pearson
upper bound is ``<= t``, *exceeds* when the lower bound is ``> t``, else *undetermined*
(Clopper & Pearson 1934, Biometrika 26:404-413; ``simlab.proportions.clopper_pearson``).

Adaptive replication.  The qualifier looks at a scenario after each stage of the policy's
replication schedule (e.g. 2000, 8000, 32000, 128000) and stops as soon as the verdict is
decided.  Testing an unadjusted level-``a`` bound at each of ``S`` stages lets a scenario
whose true rate equals the threshold be accepted with probability well above ``a`` (about
0.14 for ``a = 0.05`` over those four stages; ``tests/methods/test_mc_error_control.py``
computes it exactly).  Rule ``bonferroni-stages`` spends ``a / S`` at each stage: every
stage's bound is a one-sided Clopper-Pearson bound at confidence ``1 - a / S``, so by the
union bound (Bonferroni; for repeated looks at accumulating data see Jennison & Turnbull
2000, *Group Sequential Methods with Applications to Clinical Trials*, sec. 1.3 and 2.1)

    P(accepted | p >= t) <= sum_s P(upper_s <= t | p >= t) <= S * (a / S) = a,

whatever the stopping rule, because each stage's sample size is fixed in advance by the
schedule.  The same holds for *exceeds* when ``p <= t``.  Rule ``unadjusted`` (schema-1
records) is only read, never produced.
"""
from __future__ import annotations

from typing import Literal

import numpy as np

from simlab.proportions import clopper_pearson

QUALIFIED, EXCEEDS, UNDETERMINED = "qualified", "exceeds", "undetermined"
VERDICTS = (QUALIFIED, EXCEEDS, UNDETERMINED)

MCRule = Literal["unadjusted", "bonferroni-stages"]
MC_RULE: MCRule = "bonferroni-stages"  # the rule new records are made under


class RecordError(ValueError):
    """A qualification record or certificate cannot be used."""


class TamperedRecordError(RecordError):
    """The record, its policy or its dataset does not match its stated hashes or counts."""


class StaleRecordError(RecordError):
    """The method changed (version or source hash) since the record was made."""


def stage_confidence(mc_confidence: float, stages: int, rule: MCRule = MC_RULE) -> float:
    """Confidence of each stage's one-sided bound so that the whole staged procedure holds
    at ``mc_confidence`` (rule ``bonferroni-stages``: ``1 - (1 - c) / stages``)."""
    if stages < 1:
        raise ValueError(f"stages must be >= 1, got {stages}")
    if rule == "unadjusted":
        return mc_confidence
    if rule == "bonferroni-stages":
        return 1.0 - (1.0 - mc_confidence) / stages
    raise ValueError(f"unknown Monte Carlo rule {rule!r}")


def _check(n_pass: int, n: int) -> None:
    if n <= 0 or not 0 <= n_pass <= n:
        raise ValueError(f"need 0 <= n_pass <= n and n > 0, got n_pass={n_pass}, n={n}")


def cp_upper(n_pass: int, n: int, confidence: float) -> float:
    """One-sided Clopper-Pearson upper bound at ``confidence``."""
    _check(n_pass, n)
    return float(clopper_pearson(n_pass, n, confidence, sided="one")[1])


def cp_lower(n_pass: int, n: int, confidence: float) -> float:
    """One-sided Clopper-Pearson lower bound at ``confidence``."""
    _check(n_pass, n)
    return float(clopper_pearson(n_pass, n, confidence, sided="one")[0])


def cp_bounds(n_pass, n, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised one-sided Clopper-Pearson (lower, upper) at ``confidence``."""
    return clopper_pearson(n_pass, n, confidence, sided="one")


def verdict_of(lower: float, upper: float, threshold: float) -> str:
    """``qualified`` when the upper bound is within the threshold, ``exceeds`` when even the
    lower bound is above it, else ``undetermined`` (more replications could decide)."""
    if upper <= threshold:
        return QUALIFIED
    if lower > threshold:
        return EXCEEDS
    return UNDETERMINED


def combine_verdicts(verdicts: list[str] | tuple[str, ...]) -> str:
    """A cell is qualified only if every scenario in it is; one exceedance rejects it."""
    if any(v == EXCEEDS for v in verdicts):
        return EXCEEDS
    if any(v == UNDETERMINED for v in verdicts):
        return UNDETERMINED
    return QUALIFIED
