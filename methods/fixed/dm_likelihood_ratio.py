"""``dm_likelihood_ratio`` -- the likelihood-ratio test of a Dirichlet-multinomial alternative
against an approximate least-favourable mixture of null laws, built for the data's design
(``dm_likelihood_ratio@alpha=L``: the mixture built at level ``L``).

Why.  A test that decides on the pooled wins and losses alone gives up the information in how
the discordant pairs fall into clusters.  At one design the most powerful level-``L`` test of a
composite null against a simple alternative is the Neyman-Pearson test against the
least-favourable mixture of null laws (Lehmann & Romano 2005, Testing Statistical Hypotheses,
3rd ed., Theorem 3.8.1); Elliott, Mueller & Watson (2015, Econometrica 83:771-811, "Nearly
optimal tests when a nuisance parameter is present under the null hypothesis", section 3 and
appendix A.2) approximate that mixture numerically, which ``methods.fixed._least_favourable``
does for this model.

Model.  A cluster's ``(wins, losses, ties)`` are Dirichlet-multinomial (Mosimann 1962,
Biometrika 49:65-82) with means ``(p01, p10, 1 - q)`` and intra-cluster correlation ``rho``.
Null: ``Delta = p01 - p10 = -m`` with ``q = p01 + p10`` in ``[m, q_hi]`` on ``n_q`` points
(dense near the margin) and ``rho`` on ``n_rho`` points ending at ``rho_max`` (option, default
0.1; by default ``n_rho = 1``: rho_max alone, where the weight of the least-favourable mixture
lies).  Alternative: ``Delta = 0`` at ``rho = rho_max`` and discordance ``alt_low * m`` (weight
``alt_weight``) or ``alt_high * m`` (weight ``1 - alt_weight``): power is aimed at a true
difference of 0, mostly at low discordance, where a release gate's power is lowest.

Decision: pass iff ``log sum_a w_a f_a(x) - log sum_i lambda_i f_i(x) > c``, or the ``dm_score``
lower bound at the small level ``superiority_level`` (default 1e-4) is at least ``-m``, where ``f(x) =
prod_k P(n_k, w_k, l_k)``, ``lambda`` are the ALFD weights at level ``L`` (the kernel's level:
alpha, or a calibrated method's nominal level) and ``c`` the cutoff that holds every null
point's importance-sampled rejection probability at ``L``, for the data's design: ``K`` its
non-empty clusters and ``M`` the largest cluster size, at most ``MAX_TRIALS`` (an empty cluster
is a missing one; a smaller cluster enters with its own size's law).  The weights and the
cutoff are a deterministic function of the design, the margin, the options and the level
(importance-sampling draws from the counter-based streams, seed ``SEED``), built once per
process and design.

Validity.  The construction does not prove the level: its rejection probabilities are
importance-sampling estimates on its own grid.  ``dm_likelihood_ratio@alpha=L`` is valid at a
design exactly when a certificate says so: ``simlab calibrate`` searches the level ``L`` on a
search stream and certifies the chosen one once on the policy's stream
(``studies.qualify.calibrate``), which neither the search nor the construction saw.
Uncalibrated (``L = alpha``) it is an uncertified rule whose worst case is close to alpha.

Why the second clause.  The likelihood ratio weighs data against a difference of 0 and the null
laws the mixture weights; data that favour the candidate by far (every pair a win) can be
likelier under a null law of high discordance than under the alternative, and the ratio alone
would fail them.  A gate must never turn more wins into a fail, so overwhelming evidence passes
by the score bound at level ``superiority_level``, which adds at most about that level to the
false-pass rate (the certificate measures the union).

Interval: the ``dm_score`` interval at the design variance (``{d : |Z(d)| <= z_{1-L}}``, Tango's
score with the Dirichlet-multinomial design effect at ``rho_max``), its lower bound clamped to
agree with the test (pass: at least ``-m``; fail: just below ``-m``).  Estimate: ``S / N``
(trial-weighted).

Boundaries: no trials -> inconclusive.  All pass, all fail or no discordant pair -> the test
weighs the clusters' tie counts (with ``K`` clusters of only ties the likelihood ratio is a
product of tie probabilities, passing only when ``K`` is large enough).  Every pair a loss ->
fail.  One cluster -> its likelihoods, one term each.  Clusters of more than ``MAX_TRIALS``
pairs -> refused (``ValueError``).
"""
import math
from dataclasses import replace

import numba as nb
import numpy as np

from methods.analysis_cost import AnalysisCost
from methods.fixed._common import decide, write_inconclusive
from methods.fixed._least_favourable import (ITERATIONS, MAX_TRIALS, hypothesis_table, log_mixture, stored_alfd_weights,
                                             stored_arguments)
from methods.fixed.dm_score import cluster_sums, designs_of, score_bounds
from methods.fixed.em_table import design_weight
from methods.protocol import Estimand, FixedMethod, OptionRange, z_value

SEED = 20261206
# the ALFD's cost: its draws (8.4e7 simulated clusters at 100 x 3) and its iteration (600 steps over
# about 8e5 distinct draws by 60 points), about 17 s + 40 s on 2 busy cores at 100 x 3 with the
# default options
SECONDS_PER_DRAW_CLUSTER = 2.0e-7
SECONDS_PER_STEP = 1.3e-9
HEAD = 4        # consts: [rho_max, z, designs, z strict], then (K, M, offset) per design, then the blocks


def _positive(method, name, ok, what) -> float:
    v = method.options[name]
    if not ok(v):
        raise ValueError(f"method {method.label!r}: option {name} must be {what}, got {v!r}")
    return float(v)


def alternative(method, margin: float) -> tuple[tuple, tuple]:
    """The alternative mixture ``(points (p01, p10, rho), weights)``: difference 0 at rho_max and
    discordances ``alt_low m`` and ``alt_high m``, weights ``alt_weight`` and ``1 - alt_weight``."""
    o = method.options
    rho = o["rho_max"]
    points = ((0.5 * o["alt_low"] * margin, 0.5 * o["alt_low"] * margin, rho),
              (0.5 * o["alt_high"] * margin, 0.5 * o["alt_high"] * margin, rho))
    return points, (o["alt_weight"], 1.0 - o["alt_weight"])


def design_block(method, K: int, M: int, margin: float, level: float) -> np.ndarray:
    """``[G, A, M, cutoff, log weights (G + A), lp (G + A) x (M + 1)^3]`` for one design."""
    o = method.options
    alt, wts = alternative(method, margin)
    base = replace(method, nominal_alpha=None).identity.source_sha256    # the code and options, not the label's level
    points, log_lam, cutoff = stored_alfd_weights(base, int(K), int(M), float(margin), float(o["rho_max"]),
                                                  float(level), alt, wts, float(o["q_hi"]), int(o["n_q"]),
                                                  int(o["n_rho"]), int(o["draws"]), SEED)
    lp = np.concatenate([hypothesis_table(M, points), hypothesis_table(M, np.array(alt))])
    head = [float(len(points)), float(len(alt)), float(M), cutoff]
    return np.concatenate([head, log_lam, np.log(wts), lp.ravel()])


def prepare(method, alpha, margin, tables):
    """``[rho_max, z_{1-L}, D, z_{1-s}, (K_i, M_i, offset_i).., blocks..]``: one ALFD block per design
    ``K_i x M_i`` in the batch (module docstring)."""
    _positive(method, "rho_max", lambda v: 0.0 <= v < 1.0, "in [0, 1)")
    _positive(method, "alt_weight", lambda v: 0.0 < v < 1.0, "in (0, 1)")
    strict = _positive(method, "superiority_level", lambda v: 0.0 < v < 0.5, "in (0, 0.5)")
    _positive(method, "alt_low", lambda v: 0.0 <= v, ">= 0")
    _positive(method, "alt_high", lambda v: v > 0.0, "> 0")
    q_hi = _positive(method, "q_hi", lambda v: 0.0 < v <= 1.0, "in (0, 1]")
    for name in ("n_q", "draws"):
        _positive(method, name, lambda v: v >= 2 and v == int(v), "an integer >= 2")
    _positive(method, "n_rho", lambda v: v >= 1 and v == int(v), "an integer >= 1")
    if not margin < q_hi:
        raise ValueError(f"method {method.label!r}: its null grid spans discordances [margin, q_hi]; option q_hi = "
                         f"{q_hi:g} must exceed the margin {margin:g}")
    if max(method.options["alt_low"], method.options["alt_high"]) * margin > 1.0:
        raise ValueError(f"method {method.label!r}: an alternative discordance (alt_low, alt_high x margin) exceeds 1")
    designs = designs_of(tables)
    if len(designs) and designs[:, 1].max() > MAX_TRIALS:
        raise ValueError(f"method {method.label!r} models clusters of at most {MAX_TRIALS} pairs; these tables have a "
                         f"cluster of {int(designs[:, 1].max())}")
    blocks = [design_block(method, K, M, margin, alpha) for K, M in designs.tolist()]
    head = [method.options["rho_max"], z_value(alpha), float(len(blocks)), z_value(strict)]
    offset = HEAD + 3 * len(blocks)
    index = []
    for (K, M), b in zip(designs.tolist(), blocks):
        index += [float(K), float(M), float(offset)]
        offset += len(b)
    return np.concatenate([head, index, *blocks]) if blocks else np.array(head)


@nb.njit(cache=True)
def block_at(tables, r, consts):
    """Where replication r's design block starts in ``consts``."""
    k = 0
    m = 0
    for c in range(tables.shape[1]):
        n = tables[r, c, 0] + tables[r, c, 1] + tables[r, c, 2] + tables[r, c, 3]
        if n > 0:
            k += 1
            m = max(m, n)
    for i in range(int(consts[2])):
        if consts[HEAD + 3 * i] == k and consts[HEAD + 3 * i + 1] == m:
            return int(consts[HEAD + 3 * i + 2])
    raise ValueError("dm_likelihood_ratio: no ALFD block for a replication's design; prepare the constants from "
                     "the same tables")


@nb.njit(cache=True)
def statistic(tables, r, consts, at):
    """``log f_A(x) - log f_Lambda(x)`` for replication r from the block at ``consts[at]``."""
    G = int(consts[at])
    A = int(consts[at + 1])
    M1 = int(consts[at + 2]) + 1
    w = consts[at + 4:at + 4 + G + A]
    lp = consts[at + 4 + G + A:at + 4 + (G + A) * (1 + M1 * M1 * M1)].reshape(G + A, M1, M1, M1)
    alt = log_mixture(tables, r, lp[G:], w[G:])
    null = log_mixture(tables, r, lp[:G], w[:G])
    if null == -math.inf:
        return math.inf if alt > -math.inf else -math.inf
    return alt - null


@nb.njit(cache=True)
def kernel(tables, margin, consts, lower, upper, estimate, status):
    rho = consts[0]
    c = consts[1]
    for r in range(tables.shape[0]):
        N, S, w, l, _, _, sn2 = cluster_sums(tables, r)
        if N == 0.0:
            write_inconclusive(r, lower, upper, estimate, status)
            continue
        estimate[r] = S / N
        weight = design_weight(N, sn2, rho)
        lo, hi = score_bounds(S, N, w, l, 0.0, 0.0, 0.0, weight, c)
        at = block_at(tables, r, consts)
        strict, _ = score_bounds(S, N, w, l, 0.0, 0.0, 0.0, weight, consts[3])
        if statistic(tables, r, consts, at) > consts[at + 3] or strict >= -margin:
            lo = max(lo, -margin)
        elif lo >= -margin:
            lo = np.nextafter(-margin, -math.inf)
        lower[r] = lo
        upper[r] = hi
        status[r] = decide(lo, margin)


COMMON_LEVEL = 0.025  # the level a base method is costed at: the commands' default alpha


def construction_stored(method, K: int, M: int) -> bool:
    """Is this method's mixture for ``K x M`` in a store (:func:`stored_alfd_weights`)?  A cost
    estimate knows the level only of a calibrated method and never the margin: it counts a
    stored construction at that level for any margin (a base method's at ``COMMON_LEVEL``, the
    level it is most often run at: a stored mixture at 0.025 was counted as unbuilt, and a rerun
    of a 4 s command refused as a 50 s one)."""
    level = COMMON_LEVEL if method.nominal_alpha is None else method.nominal_alpha
    base = replace(method, nominal_alpha=None).identity.source_sha256
    return any(a.get("identity") == base and a.get("K") == K and a.get("M") == M and a.get("level") == level
               for a in stored_arguments())


def _comb_at_most(cap: float, n: int, k: int) -> float:
    """``min(cap, C(n, k))`` without building a huge ``C(n, k)`` (it has millions of digits at 10^6
    clusters of 10^5 trials: 93 s to compute)."""
    k = min(k, n - k)
    if math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) > math.log(cap) + 1.0:
        return cap
    return min(cap, math.comb(n, k))


def analysis_cost(method, t, linear):
    """Linear in the cells times the hypotheses, plus one ALFD per design in the batch that no
    store holds (:func:`construction_stored`; cached in the process once built):
    its simulated clusters, and the iteration over its distinct draws (at most G draws rows, and
    at most the count vectors K clusters can have) by G null points, 600 steps."""
    o = method.options
    G = o["n_q"] * o["n_rho"]
    designs = [d for d in designs_of(t).tolist() if not construction_stored(method, *d)]
    if any(M > MAX_TRIALS for _, M in designs):  # prepare refuses these at once: nothing is built
        return linear
    if not designs:
        return AnalysisCost(method.name, linear.bytes, linear.seconds * (G + 2), "the clusters (its least-favourable "
                            "mixture is stored)")
    draws = sum(K * G * o["draws"] for K, _ in designs)
    rows = [_comb_at_most(G * o["draws"], K + T - 1, T - 1) for K, T in
            ((K, (M + 1) * (M + 2) // 2) for K, M in designs)]
    steps = sum(ITERATIONS) * G * sum(rows)
    what = f"the least-favourable mixture of {len(designs)} design(s) ({int(draws):,} simulated clusters)"
    return AnalysisCost(method.name, linear.bytes + 16.0 * G * G * o["draws"],
                        linear.seconds * (G + 2) + SECONDS_PER_DRAW_CLUSTER * draws + SECONDS_PER_STEP * steps, what)


METHOD = FixedMethod(
    name="dm_likelihood_ratio",
    version="1",
    estimand=Estimand.TRIAL,
    citation="Elliott, Mueller & Watson (2015) Econometrica 83:771-811 (approximate least-favourable distribution, "
             "appendix A.2; Lemma 1 power bound); Lehmann & Romano (2005) Testing Statistical Hypotheses, Thm 3.8.1; "
             "Dirichlet-multinomial clusters (Mosimann 1962, Biometrika 49:65-82)",
    summary="likelihood ratio of a Dirichlet-multinomial alternative (difference 0) against an approximate "
            "least-favourable mixture of null laws built at the data's K x M design; dm_likelihood_ratio@alpha=L "
            "builds it at level L (certified at a design by simlab calibrate)",
    kernel=kernel,
    prepare=prepare,
    options={"rho_max": 0.1, "alt_low": 1.0, "alt_high": 10.0 / 3.0, "alt_weight": 0.95, "q_hi": 0.5,
             "n_q": 60.0, "n_rho": 1.0, "draws": 14000.0, "superiority_level": 1.0e-4},
    # the catalogue's closed check; the code refuses the open ends
    ranges={"rho_max": OptionRange(0.0, 1.0), "alt_low": OptionRange(0.0), "alt_high": OptionRange(0.0),
            "alt_weight": OptionRange(0.0, 1.0), "q_hi": OptionRange(0.0, 1.0), "n_q": OptionRange(2.0, integer=True),
            "n_rho": OptionRange(1.0, integer=True), "draws": OptionRange(2.0, integer=True),
            "superiority_level": OptionRange(0.0, 0.5)},
    cost=analysis_cost,
    calibration="least-favourable",
)
