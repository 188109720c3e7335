"""Integer tallies of per-replication method outputs.

Every performance measure of a study is a function of these integers, so chunks can be
added in any order and any grouping with bitwise-identical totals (the runner's
guarantee for any ``n_jobs`` and chunk size).  Counts are plain int64.  Sums of real
values (estimate, its square, interval width and its square) are kept in exact
fixed point: each value ``x`` with ``|x| < 2^15`` is rounded once to ``round(x 2^32)``
(resolution 2.3e-10) and accumulated in a two-word integer ``hi 2^32 + lo`` with
``0 <= lo < 2^32``, which cannot overflow for fewer than ``2^32`` replications.  Values
with ``|x| >= 2^15`` (an effectively unbounded interval) are left out of the sums and
counts of that quantity.

Field layout (last axis of a tally array):
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

FIELDS = (
    "n_reps",          # replications
    "n_pass",          # status PASS
    "n_fail",          # status FAIL
    "n_inconclusive",  # status INCONCLUSIVE
    "n_estimate",      # finite estimate (|x| < 2^15)
    "est_hi", "est_lo",        # sum of estimates (fixed point)
    "est2_hi", "est2_lo",      # sum of squared estimates
    "n_interval",      # both bounds not NaN
    "n_cover",         # lower <= theta <= upper
    "n_lower_above",   # lower > theta: the one-sided miss that a false pass needs
    "n_width",         # finite width (|w| < 2^15)
    "wid_hi", "wid_lo",        # sum of widths
    "wid2_hi", "wid2_lo",      # sum of squared widths
)
NF = len(FIELDS)
F = {name: i for i, name in enumerate(FIELDS)}
__doc__ += "\n".join(f"    {i:2d} {name}" for i, name in enumerate(FIELDS)) + "\n"

SCALE_BITS = 32
SCALE = float(2 ** SCALE_BITS)
LIMIT = float(2 ** 15)
_LO_MASK = (1 << SCALE_BITS) - 1


@nb.njit(inline="always", cache=True)
def _acc(out, hi, lo, x):
    q = np.int64(math.floor(x * 4294967296.0 + 0.5))
    t = out[lo] + q
    carry = t >> 32
    out[hi] += carry
    out[lo] = t - (carry << 32)


@nb.njit(cache=True)
def tally_batch(status, estimate, lower, upper, theta, out):
    """Add one batch's outputs to ``out`` (int64[NF]); ``theta`` is the targeted true value."""
    n = status.shape[0]
    for r in range(n):
        out[0] += 1
        s = status[r]
        if s == 1:
            out[1] += 1
        elif s == 0:
            out[2] += 1
        else:
            out[3] += 1
        e = estimate[r]
        if abs(e) < 32768.0:  # False for NaN and inf
            out[4] += 1
            _acc(out, 5, 6, e)
            _acc(out, 7, 8, e * e)
        lo = lower[r]
        up = upper[r]
        if not (math.isnan(lo) or math.isnan(up)):
            out[9] += 1
            if lo <= theta and theta <= up:
                out[10] += 1
            if lo > theta:
                out[11] += 1
            w = up - lo
            if abs(w) < 32768.0:
                out[12] += 1
                _acc(out, 13, 14, w)
                _acc(out, 15, 16, w * w)


_PAIRS = ((F["est_hi"], F["est_lo"]), (F["est2_hi"], F["est2_lo"]),
          (F["wid_hi"], F["wid_lo"]), (F["wid2_hi"], F["wid2_lo"]))


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sum of two tally arrays (any shape ``[..., NF]``), carries normalised."""
    out = a.astype(np.int64) + b.astype(np.int64)
    for hi, lo in _PAIRS:
        carry = out[..., lo] >> SCALE_BITS
        out[..., hi] += carry
        out[..., lo] -= carry << SCALE_BITS
    return out


def fixed_sum(t: np.ndarray, name: str) -> np.ndarray:
    """The exact scaled sum ``round(x 2^32)`` summed, as Python ints (object array)."""
    hi, lo = F[f"{name}_hi"], F[f"{name}_lo"]
    his = np.asarray(t[..., hi], dtype=object)
    los = np.asarray(t[..., lo], dtype=object)
    return his * (1 << SCALE_BITS) + los
