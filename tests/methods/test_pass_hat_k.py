"""``pass_hat_k``: non-inferiority on pass^k (all k trials of a case pass), over per-cluster
tables of cases -- checked against an independent slow implementation of the score
interval, at the edge cases, and by simulating *trials* (not tables) at the null boundary:
its false-pass rate must stay within 4 Monte Carlo standard errors of the level."""
from __future__ import annotations

import numpy as np
import pytest

from methods import registry
from methods.reference import bounded as ref
from methods.identity import reached_modules, reached_names
from methods.protocol import Estimand

M = registry.get("pass_hat_k")


def test_is_a_registered_case_level_method_with_its_own_identity():
    base = registry.get("clustered_score")
    assert M.unit == "case_all_trials" and M.kind == "fixed" and M.estimand is Estimand.TRIAL
    assert "arXiv:2406.12045" in M.citation and "Tango (1998)" in M.citation
    assert M.identity.source_sha256 != base.identity.source_sha256
    # its identity hashes the code its decisions run through: the clustered score kernel it reuses
    assert {"FixedMethod.batch", "kernel", "prepare", "score", "crossing"} <= set(reached_names(M.decision_roots()))
    assert {"methods.fixed.clustered_score", "methods.fixed._common", "methods.protocol"} <= \
        reached_modules(M.decision_roots())


def _case_tables(trials: dict) -> np.ndarray:
    """Slow reduction from the definition: per cluster, cases by (baseline passed all k, candidate passed all k)."""
    out: dict[str, list[int]] = {}
    for (cluster, case), (b, c) in trials.items():
        cell = {(True, True): 0, (True, False): 1, (False, True): 2, (False, False): 3}[(all(b), all(c))]
        out.setdefault(cluster, [0, 0, 0, 0])[cell] += 1
    return np.array(list(out.values()))


def test_worked_example_from_the_definition():
    trials = {("u1", "a"): ([1, 1, 1], [1, 1, 1]), ("u1", "b"): ([1, 1, 1], [1, 0, 1]),
              ("u2", "c"): ([1, 0, 1], [1, 1, 1]), ("u2", "d"): ([0, 0, 0], [0, 1, 0]),
              ("u3", "e"): ([1, 1, 1], [1, 1, 1]), ("u3", "f"): ([1, 1, 1], [1, 1, 1])}
    tables = _case_tables(trials)
    assert tables.tolist() == [[1, 1, 0, 0], [0, 0, 1, 1], [2, 0, 0, 0]]
    # pass^3: baseline 4/6 cases, candidate 4/6: difference 0
    r = M.analyze(tables, 0.1, alpha=0.025)
    assert r.estimate == 0.0 and r.trials == 6 and r.clusters == 3


@pytest.mark.parametrize("seed", range(6))
def test_interval_equals_the_independent_score_implementation(seed):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(5, 60))
    tables = rng.multinomial(3, [0.7, 0.08, 0.07, 0.15], size=K)
    got = M.analyze(tables, 0.1, alpha=0.025)
    lo, hi, est, status = ref.clustered_score(tables, 0.1, confidence=0.95, icc_floor=M.options["icc_floor"])
    assert got.estimate == pytest.approx(est, abs=1e-12) and got.status == status
    assert got.lower == pytest.approx(lo, abs=1e-9) and got.upper == pytest.approx(hi, abs=1e-9)


def test_edge_cases():
    ties = np.array([[3, 0, 0, 0]] * 40)  # zero discordant cases: a positive variance, no zero-variance pass
    r = M.analyze(ties, 0.03, alpha=0.025)
    # Tango's no-discordance bound with the model weight sum n_k (1 + (n_k - 1) rho_0) = 1.2 N: z^2 W / (N^2 + z^2 W)
    z2w = 1.959963984540054 ** 2 * 1.2
    assert M.options["icc_floor"] == 0.1
    assert r.lower == pytest.approx(-z2w / (120 + z2w), rel=1e-6) and r.status == "fail"
    assert M.analyze(ties, 0.05, alpha=0.025).status == "pass"
    losses = np.array([[0, 3, 0, 0]] * 40)  # every case a loss
    r = M.analyze(losses, 0.1, alpha=0.025)
    assert r.lower == -1.0 and r.status == "fail"
    fails = np.array([[0, 0, 0, 3]] * 40)  # nothing passes in either arm: ties again
    assert M.analyze(fails, 0.05, alpha=0.025).status == "pass"
    one = M.analyze(np.array([[5, 1, 1, 3]]), 0.1, alpha=0.025)
    assert one.clusters == 1 and one.lower == -1.0  # one cluster cannot support the margin
    with_empty = np.array([[3, 0, 1, 0], [0, 0, 0, 0], [2, 1, 0, 1]])
    assert M.analyze(with_empty, 0.1).clusters == 2
    assert M.analyze(np.zeros((3, 4), int), 0.1).status == "inconclusive"


def _simulate(R, K, cases, margin, levels, seed):
    """Trials, not tables: each cluster draws a per-trial pass probability q (shared by its
    cases); the candidate's is set so that its pass^3 is the baseline's minus ``margin``
    exactly (the null boundary); each arm runs each case 3 times."""
    rng = np.random.default_rng(seed)
    q = np.repeat(rng.choice(levels, size=(R, K))[:, :, None], cases, axis=2)
    pb = q
    pc = np.cbrt(np.clip(q ** 3 - margin, 0.0, 1.0))
    base_all = (rng.random((3, R, K, cases)) < pb).all(axis=0)
    cand_all = (rng.random((3, R, K, cases)) < pc).all(axis=0)
    cell = (~base_all).astype(np.int64) * 2 + (~cand_all).astype(np.int64)
    return np.stack([(cell == j).sum(axis=2) for j in range(4)], axis=2).astype(np.int32)


@pytest.mark.parametrize("K,margin,levels", [(40, 0.1, (0.8, 0.9, 0.97)), (200, 0.05, (0.8, 0.9, 0.97)),
                                             (100, 0.1, (0.6, 0.99))])
def test_false_pass_rate_at_the_boundary_is_within_4_mc_se_of_the_level(K, margin, levels):
    R, alpha = 20_000, 0.025
    tables = _simulate(R, K, 3, margin, levels, seed=27)
    rate = M.batch(tables, margin, alpha=alpha).pass_count() / R
    assert rate <= alpha + 4 * np.sqrt(alpha * (1 - alpha) / R), rate
    # and it has power where the candidate is as reliable as the baseline
    same = _simulate(2000, K, 3, 0.0, levels, seed=28)
    assert M.batch(same, margin, alpha=alpha).pass_count() / 2000 > 4 * rate
