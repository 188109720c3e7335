"""Judge calibration sets: per replication, the human-label x judge-label counts of the
scenario's calibration set (``simlab.scenario.JudgeCalibration``).

Layout: ``int32[R, A, 4]``, ``A = 2`` (arm 0 the baseline's set, arm 1 the candidate's) or
``A = 1`` (one shared set); the four counts of a set are, like a table's cells, indexed
``2 * human_fail + judge_fail``::

    (human pass & judge pass, human pass & judge fail, human fail & judge pass, human fail & judge fail)

so ``sensitivity = c[0] / (c[0] + c[1])`` and ``specificity = c[3] / (c[2] + c[3])``.

Item ``i`` of set ``a`` in replication ``rep`` takes two uniforms of its own stream,
draw indices ``2 (a * items + i)`` and ``+ 1``: the first makes its human label (pass when
below the arm's true pass rate ``PairedScenario.true_pass_rates``, for a shared set the
mean of the two arms'), the second its judge label (pass when below the arm's sensitivity
for a human pass, below ``1 - specificity`` for a human fail).  The stream key is
``(seed, scenario key | judge-calibration-v1)``: independent of the tables' stream, and
every replication a pure function of its index, so the counts are bitwise the same for
any chunking, worker count or backend.  Only comparisons of uniforms with the scenario's
probabilities are made: the same counts on every CPU.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from simlab.rng import MAX_REPLICATIONS, stream_key, uniform
from simlab.scenario import PairedScenario

CALIBRATION_VERSION = "1"


@nb.njit(cache=True)
def fill_calibration(k1, k2, rep_start, out, human_pass, sens, spec, items):
    """Fill ``out[R, A, 4]`` with the calibration counts of replications ``rep_start ..``;
    ``human_pass[A]``, ``sens[A]``, ``spec[A]``: each set's human pass rate and judge error."""
    R, A, _ = out.shape
    for i in range(R):
        rep = rep_start + i
        for a in range(A):
            c0 = 0
            c1 = 0
            c2 = 0
            c3 = 0
            base = 2 * a * items
            for t in range(items):
                truth = uniform(k1, k2, rep, base + 2 * t) < human_pass[a]
                u = uniform(k1, k2, rep, base + 2 * t + 1)
                if truth:
                    if u < sens[a]:
                        c0 += 1
                    else:
                        c1 += 1
                elif u < 1.0 - spec[a]:
                    c2 += 1
                else:
                    c3 += 1
            out[i, a, 0] = c0
            out[i, a, 1] = c1
            out[i, a, 2] = c2
            out[i, a, 3] = c3


class CalibrationSource:
    """The calibration counts of one scenario (which must declare a calibration set) under one seed."""

    def __init__(self, scenario: PairedScenario, seed: int):
        noise = scenario.label_noise
        cal = noise.calibration
        if cal is None:
            raise ValueError("the scenario declares no judge calibration set (label_noise.calibration)")
        self.items = int(cal.items)
        base, cand = scenario.true_pass_rates()
        if cal.shared:
            self.human_pass = np.array([0.5 * (base + cand)])
            self.sens = np.array([noise.baseline_sensitivity])
            self.spec = np.array([noise.baseline_specificity])
        else:
            self.human_pass = np.array([base, cand])
            self.sens = np.array([noise.baseline_sensitivity, noise.candidate_sensitivity])
            self.spec = np.array([noise.baseline_specificity, noise.candidate_specificity])
        self.arms = self.human_pass.shape[0]
        self.k1, self.k2 = stream_key(int(seed), f"{scenario.key}|judge-calibration-v{CALIBRATION_VERSION}")

    def fill(self, out: np.ndarray, rep_start: int) -> np.ndarray:
        """Write replications ``rep_start .. rep_start + len(out) - 1`` into int32 ``out[R, A, 4]``."""
        R = out.shape[0]
        if out.dtype != np.int32 or out.ndim != 3 or out.shape[1:] != (self.arms, 4):
            raise ValueError(f"out must be int32[R, {self.arms}, 4], got {out.dtype}{out.shape}")
        if rep_start < 0 or rep_start + R > MAX_REPLICATIONS:
            raise ValueError(f"replications must lie in [0, {MAX_REPLICATIONS}), got {rep_start}..{rep_start + R}")
        if R:
            fill_calibration(self.k1, self.k2, np.int64(rep_start), out, self.human_pass, self.sens, self.spec,
                             self.items)
        return out

    def counts(self, start: int, stop: int) -> np.ndarray:
        """Replications ``start .. stop - 1`` as a new ``int32[stop - start, A, 4]`` array."""
        if stop < start:
            raise ValueError(f"stop ({stop}) must be >= start ({start})")
        return self.fill(np.empty((stop - start, self.arms, 4), np.int32), start)


def calibration_source(scenario: PairedScenario, seed: int) -> CalibrationSource | None:
    """The scenario's calibration source, or None when it declares no calibration set."""
    return None if scenario.label_noise.calibration is None else CalibrationSource(scenario, seed)


def scenario_calibration(scenario: PairedScenario, seed: int, start: int, stop: int) -> np.ndarray:
    """Exactly the calibration counts a study gives a judge-corrected method for replications
    ``start .. stop - 1`` (beside ``scenario_tables``)."""
    return CalibrationSource(scenario, seed).counts(start, stop)


__all__ = ["CALIBRATION_VERSION", "CalibrationSource", "calibration_source", "fill_calibration",
           "scenario_calibration"]
