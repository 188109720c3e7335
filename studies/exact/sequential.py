"""Exact sequential operating characteristics of a method: its decision regions, enumerated
by running the method's own per-look evaluation on one representative table per state, fed
to the absorbing-state engine of ``simlab.exact.sequential``.

Data model: clusters of one trial pair, i.i.d. across clusters, no pair loss.  A state at a
look of ``n`` clusters is the number of losses ``x`` (binomial engine: every other cluster a
tie) or ``(losses, wins)`` (trinomial engine).  The representative table of a state lists the
loss clusters ``(0, 1, 0, 0)`` first, then the wins ``(0, 0, 1, 0)``, then the ties.  This is
exact for every method whose decision at a look depends only on the multiset of cluster
tables seen so far (``method.markov``: the fixed-sample wrappers, ``likelihood_ratio``,
``alpha_spending``, ``msprt``); ``betting_cs`` bets in arrival order and is refused.  When
ties come in both kinds (``n11`` and ``n00``) the method must not tell them apart: the regions
are computed with each kind and must agree (else :class:`ExactUnsupported`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numba as nb
import numpy as np

from methods.sequential.base import LookSchedule, SequentialMethod
from simlab.exact import ExactUnsupported
from simlab.exact.sequential import SequentialExact, binomial_paths, trinomial_paths
from simlab.scenario import ExplicitSizes, FixedSize, PairedScenario

TIE_CELLS = {"n11": 0, "n00": 3}  # cell index of a tie cluster
CHUNK_CELLS = 4_000_000  # cluster rows per evaluation chunk (64 MB of int32 tables)

# the seed's Sequential Decisions Lab design (the cx_eval_lab evidence spine)
SEED_LOOKS = tuple(range(50, 501, 50))
SEED_MARGIN = 0.03
SEED_ALPHA = 0.05
SEED_ALTERNATIVE = 0.01
SEED_METHODS = ("repeated_fixed", "likelihood_ratio", "bonferroni", "fixed_final")


def _require_markov(method: SequentialMethod) -> None:
    if not method.markov:
        raise ExactUnsupported(f"{method.label} decides from the order of the clusters, not their counts; "
                               "it has no exact path enumeration (simulate it)")


@nb.njit(cache=True)
def _fill_states(losses, wins, tie, out):
    S, n, _ = out.shape
    for s in range(S):
        a = losses[s]
        b = a + wins[s]
        for k in range(n):
            for c in range(4):
                out[s, k, c] = 0
            if k < a:
                out[s, k, 1] = 1
            elif k < b:
                out[s, k, 2] = 1
            else:
                out[s, k, tie] = 1


def _state_tables(n: int, losses: np.ndarray, wins: np.ndarray, tie: int) -> np.ndarray:
    """Representative tables: losses first, then wins, then ties (cell index ``tie``)."""
    out = np.empty((losses.size, n, 4), np.int32)
    _fill_states(losses, wins, tie, out)
    return out


def _statuses(method, schedule, j, n, losses, wins, tie, margin, alpha) -> np.ndarray:
    out = np.empty(losses.size, np.int8)
    step = max(1, CHUNK_CELLS // max(n, 1))
    for s in range(0, losses.size, step):
        e = min(losses.size, s + step)
        out[s:e] = method.statuses_at(_state_tables(n, losses[s:e], wins[s:e], tie), schedule, j, margin, alpha)
    return out


def binomial_regions(method: SequentialMethod, schedule: LookSchedule, margin: float, alpha: float,
                     tie: str = "n11") -> list[np.ndarray]:
    """int8[n_j + 1] per look: the method's status at look j with x losses among n_j clusters."""
    _require_markov(method)
    regions = []
    for j, n in enumerate(schedule.looks):
        x = np.arange(n + 1, dtype=np.int64)
        regions.append(_statuses(method, schedule, j, n, x, np.zeros_like(x), TIE_CELLS[tie], margin, alpha))
    return regions


def trinomial_regions(method: SequentialMethod, schedule: LookSchedule, margin: float, alpha: float,
                      tie: str = "n11") -> list[np.ndarray]:
    """int8[n_j + 1, n_j + 1] per look over (losses, wins); cells with losses + wins > n_j stay 0."""
    _require_markov(method)
    regions = []
    for j, n in enumerate(schedule.looks):
        # every state (l, w) with l + w <= n
        l_idx = np.repeat(np.arange(n + 1), np.arange(n + 1, 0, -1))
        w_idx = np.concatenate([np.arange(n + 1 - a) for a in range(n + 1)])
        st = _statuses(method, schedule, j, n, l_idx.astype(np.int64), w_idx.astype(np.int64),
                       TIE_CELLS[tie], margin, alpha)
        reg = np.zeros((n + 1, n + 1), np.int8)
        reg[l_idx, w_idx] = st
        regions.append(reg)
    return regions


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def exact_binomial(method: SequentialMethod, schedule: LookSchedule, p_loss: float, margin: float,
                   alpha: float) -> SequentialExact:
    """Seed setting: i.i.d. Bernoulli(p_loss) losses, baseline always passes (ties are n11)."""
    return binomial_paths(p_loss, schedule.looks, binomial_regions(method, schedule, margin, alpha))


def exact_trinomial(method: SequentialMethod, schedule: LookSchedule, p_loss: float, p_win: float,
                    margin: float, alpha: float, tie_kinds: tuple[str, ...] = ("n11",)) -> SequentialExact:
    """I.i.d. paired trials with loss / win / tie probabilities; ``tie_kinds`` lists the tie
    cells that occur (with both, the method must decide the same for either)."""
    regions = trinomial_regions(method, schedule, margin, alpha, tie_kinds[0])
    for other in tie_kinds[1:]:
        if not _same(regions, trinomial_regions(method, schedule, margin, alpha, other)):
            raise ExactUnsupported(f"{method.label} decides differently for n11 and n00 ties; the trinomial "
                                   "engine cannot enumerate it")
    return trinomial_paths(p_loss, p_win, schedule.looks, regions)


def observed_step_law(scenario: PairedScenario) -> dict[str, float]:
    """``(p_loss, p_win, p_n11, p_n00)`` of one recorded cluster of a scenario the engines
    cover: one trial pair per cluster, no loss of pairs, the same cells for every cluster
    (rho is irrelevant with one trial; judge noise enters through the recorded cells)."""
    size = scenario.cluster_size
    ones = (isinstance(size, FixedSize) and size.trials == 1) or \
           (isinstance(size, ExplicitSizes) and all(s == 1 for s in size.sizes))
    if not ones:
        raise ExactUnsupported("the sequential exact engines need clusters of exactly one trial pair")
    if scenario.cluster_cells is not None and len({tuple(c) for c in scenario.cluster_cells}) > 1:
        raise ExactUnsupported("the sequential exact engines need the same cells for every cluster")
    if np.any(scenario.retention_rate() < 1.0):
        raise ExactUnsupported("the sequential exact engines do not cover lost pairs (empty clusters)")
    c = scenario.observed_cell_matrix()[0]
    return {"p_loss": float(c[1]), "p_win": float(c[2]), "p_n11": float(c[0]), "p_n00": float(c[3])}


def exact_for_scenario(method: SequentialMethod, scenario: PairedScenario, schedule: LookSchedule,
                       margin: float, alpha: float) -> SequentialExact:
    """The exact engine that fits ``scenario`` (binomial when no wins and one tie kind)."""
    law = observed_step_law(scenario)
    if schedule.last > scenario.clusters:
        raise ValueError(f"the schedule's last look ({schedule.last}) exceeds the scenario's "
                         f"{scenario.clusters} clusters")
    kinds = tuple(k for k in ("n11", "n00") if law[f"p_{k}"] > 0.0) or ("n11",)
    if law["p_win"] == 0.0 and len(kinds) == 1:
        return binomial_paths(law["p_loss"], schedule.looks,
                              binomial_regions(method, schedule, margin, alpha, kinds[0]))
    return exact_trinomial(method, schedule, law["p_loss"], law["p_win"], margin, alpha, kinds)


def seed_method(name: str) -> SequentialMethod:
    """One of the seed's four rules, configured as the seed registered it."""
    from methods import registry

    m = registry.get(name)
    if name == "likelihood_ratio":
        m = m.with_options(alternative=SEED_ALTERNATIVE)
    return m


@dataclass(frozen=True)
class SeedCase:
    label: str
    true_loss: float
    recorded_loss: float


SEED_CASES = (
    SeedCase("boundary (true loss 0.03)", 0.03, 0.03),
    SeedCase("power (true loss 0.01)", 0.01, 0.01),
    SeedCase("deep null (true loss 0.04)", 0.04, 0.04),
    SeedCase("biased labels (true loss 0.10, every loss recorded as a pass)", 0.10, 0.0),
)


def seed_scenario(case: SeedCase) -> PairedScenario:
    """The case as a simulator scenario: cells (1 - q, q, 0, 0), one trial per cluster; the
    biased-label case records every candidate failure as a pass (candidate specificity 0)."""
    from simlab.scenario import LabelNoise

    q = case.true_loss
    noise = LabelNoise() if case.recorded_loss == case.true_loss else LabelNoise(candidate_specificity=0.0)
    return PairedScenario(cells=(1.0 - q, q, 0.0, 0.0), clusters=SEED_LOOKS[-1], label_noise=noise)


def seed_table(methods=SEED_METHODS, cases=SEED_CASES) -> dict:
    """Exact promotion probabilities of the seed's four rules in the seed's design."""
    schedule = LookSchedule(looks=SEED_LOOKS)
    rows = []
    for case in cases:
        scenario = seed_scenario(case)
        for name in methods:
            res = exact_for_scenario(seed_method(name), scenario, schedule, SEED_MARGIN, SEED_ALPHA)
            rows.append({"case": case.label, "true_loss": case.true_loss, "recorded_loss": case.recorded_loss,
                         "method": name, **res.as_dict()})
    return {"looks": list(SEED_LOOKS), "margin": SEED_MARGIN, "alpha": SEED_ALPHA,
            "alternative": SEED_ALTERNATIVE, "rows": rows}


def is_exact_enumerable(method: SequentialMethod, scenario: PairedScenario) -> bool:
    if not method.markov:
        return False
    try:
        observed_step_law(scenario)
    except ExactUnsupported:
        return False
    return True


def exact_table(methods, schedule: LookSchedule, margin: float, alpha: float,
                laws: Sequence[tuple[float, float]]) -> dict:
    """Exact results of ``methods`` (SequentialMethod objects) under i.i.d. paired trials
    with ``(p_loss, p_win)`` per law (ties are n11)."""
    rows = []
    for p_loss, p_win in laws:
        for m in methods:
            if p_win == 0.0:
                res = exact_binomial(m, schedule, p_loss, margin, alpha)
            else:
                res = exact_trinomial(m, schedule, p_loss, p_win, margin, alpha)
            rows.append({"p_loss": p_loss, "p_win": p_win, "true_difference": p_win - p_loss,
                         "method": m.label, **res.as_dict()})
    return {"looks": list(schedule.looks), "unit": schedule.unit, "margin": margin, "alpha": alpha, "rows": rows}
