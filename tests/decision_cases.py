"""A fixed set of tables on which every registered method's complete outputs are pinned to the
bit (``tests/methods/test_decisions_pinned.py``), so that a refactor of shared kernel code
(one Gauss-Kronrod driver, one trial-level loop...) is shown to leave every decision,
bound and estimate unchanged: shipped qualification records are re-stamped only when
re-simulated counts are bitwise equal.

Cases: simulated replications of several designs (``K`` clusters of 1, 3 or 10 trials,
``rho`` 0 or 0.2, unequal explicit sizes with empty clusters, one cluster, rare discordance)
and hand-made edge tables (all pass, all fail, no discordant pairs, no trials, one
non-empty cluster, every pair a loss or a win).  The slow methods take a prefix of each
case (:data:`PREFIX`) plus designs large enough for their other code paths
(``bayes_hierarchical``'s version-3 quadrature needs 2048 pairs or more).  A judge-corrected
method (``methods.judged``) gets the fixed calibration sets :data:`JUDGE_CALIBRATION` with every
replication, and its raw judge-scale figures and reason codes are pinned too.

:func:`outputs` gives every array a method returns on a case; :func:`digest` is the sha256
of an array's dtype, shape and bytes, with every NaN written as the one quiet NaN (kernels
write ``math.nan``; a NaN's payload is not a decision).  The pins (``methods/pinned_decisions.json``)
were recorded from the code before the kernels shared their Gauss-Kronrod driver and batch
loops (commit bc5c6b2); ``python -m tests.decision_cases NAME`` re-pins a method whose
decisions are meant to change (a new version).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from simlab.sampling import scenario_tables
from simlab.scenario import ExplicitSizes, FixedSize, PairedScenario

MARGIN = 0.05
FIXED_ALPHA = 0.025
SEQUENTIAL_ALPHA = 0.05
SEED = 20260


def _scenario(cells, clusters, trials=1, rho=0.0, sizes=None):
    size = ExplicitSizes(sizes=sizes) if sizes is not None else FixedSize(trials=trials)
    return PairedScenario(cells=cells, clusters=clusters if sizes is None else len(sizes), cluster_size=size,
                          rho=rho)


#: name -> (scenario, replications)
SIMULATED = {
    "k40_m1_rho0": (_scenario((0.80, 0.08, 0.06, 0.06), 40), 800),
    "k30_m3_rho0.2": (_scenario((0.70, 0.12, 0.10, 0.08), 30, 3, 0.2), 800),
    "k12_m10_rho0.2": (_scenario((0.60, 0.15, 0.10, 0.15), 12, 10, 0.2), 800),
    "k8_m10_rho0": (_scenario((0.75, 0.09, 0.08, 0.08), 8, 10), 500),
    "k5_m3_rho0.2": (_scenario((0.50, 0.20, 0.15, 0.15), 5, 3, 0.2), 500),
    "explicit_unequal_rho0.2": (_scenario((0.50, 0.20, 0.20, 0.10), 0, rho=0.2,
                                          sizes=(1, 0, 5, 12, 3, 0, 8, 2, 20, 1)), 800),
    "one_cluster_m10": (_scenario((0.60, 0.15, 0.15, 0.10), 1, 10), 300),
    "k3_m1_rare": (_scenario((0.97, 0.01, 0.01, 0.01), 3), 300),
}

#: the replications the slow methods take of each simulated case
PREFIX = {"bayes_paired": 150, "bayes_hierarchical": 25, "hierarchical_v1": 6}

#: designs for the slow methods' other paths: name -> (scenario, reps, sampler); version 3's
#: quadrature (2048 pairs or more) and version 4's group polynomials beyond the float range
#: (few clusters of many trials; the trial-level sampler draws them fast)
LARGE = {
    "k60_m6_rho0.2": (_scenario((0.25, 0.30, 0.25, 0.20), 60, 6, 0.2), 2, "auto"),
    "k20_m200_rho0.05": (_scenario((0.35, 0.15, 0.15, 0.35), 20, 200, 0.05), 1, "trial"),
}
LARGE_METHODS = ("bayes_hierarchical", "bayes_paired")

#: the (human, judge) calibration counts a judge-corrected method gets with every replication:
#: baseline's set, candidate's set (``methods.judged``)
JUDGE_CALIBRATION = ((90, 10, 15, 85), (88, 12, 10, 90))


def edge_tables() -> np.ndarray:
    """int32[R, 4, 4]: hand-made edge cases, one replication each (K = 4 clusters)."""
    cases = [
        [[5, 0, 0, 0], [3, 0, 0, 0], [4, 0, 0, 0], [2, 0, 0, 0]],      # all pass
        [[0, 0, 0, 5], [0, 0, 0, 3], [0, 0, 0, 4], [0, 0, 0, 2]],      # all fail
        [[3, 0, 0, 2], [1, 0, 0, 4], [2, 0, 0, 2], [0, 0, 0, 1]],      # no discordant pairs
        [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],      # no trials
        [[4, 1, 2, 3], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],      # one non-empty cluster
        [[0, 0, 0, 0], [2, 1, 1, 0], [0, 0, 0, 0], [1, 0, 2, 1]],      # empty clusters between
        [[0, 3, 0, 0], [0, 2, 0, 0], [0, 4, 0, 0], [0, 1, 0, 0]],      # every pair a loss
        [[0, 0, 3, 0], [0, 0, 2, 0], [0, 0, 4, 0], [0, 0, 1, 0]],      # every pair a win
        [[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],      # one trial, a pass
        [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],      # one trial, a loss
        [[2, 1, 1, 2], [2, 1, 1, 2], [2, 1, 1, 2], [2, 1, 1, 2]],      # identical clusters
        [[9, 0, 1, 0], [8, 1, 1, 0], [9, 1, 0, 0], [7, 0, 2, 1]],      # a few discordant pairs
    ]
    return np.array(cases, dtype=np.int32)


def cases_for(name: str) -> dict[str, np.ndarray]:
    """case name -> tables for method ``name`` (a registered method or ``hierarchical_v1``)."""
    out = {"edge": edge_tables()}
    for case, (scenario, reps) in SIMULATED.items():
        out[case] = scenario_tables(scenario, SEED, 0, min(reps, PREFIX.get(name, reps)))
    if name in LARGE_METHODS:
        for case, (scenario, reps, sampler) in LARGE.items():
            out[case] = scenario_tables(scenario, SEED, 0, reps, sampler)
    return out


def _schedule(K: int):
    from methods.sequential.base import LookSchedule
    n = min(4, K)
    return LookSchedule(looks=tuple(int(round(K * (i + 1) / n)) for i in range(n)))


def outputs(name: str, tables: np.ndarray) -> dict[str, np.ndarray]:
    """Every array method ``name`` returns on ``tables`` (``hierarchical_v1``: the frozen
    version 1 of ``bayes_hierarchical``, ``methods.reference.hierarchical_v1.intervals_v1``)."""
    if name == "hierarchical_v1":
        from methods.reference.hierarchical_v1 import intervals_v1
        out = intervals_v1(tables, FIXED_ALPHA)
        return {"lower": out[:, 0], "upper": out[:, 1], "estimate": out[:, 2]}
    from methods import registry
    method = registry.get(name)
    if method.sequential:
        r = method.batch(tables, _schedule(tables.shape[1]), MARGIN, SEQUENTIAL_ALPHA)
        return {"decision": r.decision, "stop_look": r.stop_look, "clusters": r.clusters, "trials": r.trials,
                "bound": r.bound, "estimate": r.estimate, "look_status": r.look_status}
    if "judge_calibration" in method.inputs:   # methods.judged: the same calibration sets for every row
        cal = np.tile(np.asarray(JUDGE_CALIBRATION, np.int32), (tables.shape[0], 1, 1))
        r = method.batch(tables, MARGIN, FIXED_ALPHA, calibration=cal)
        return {"status": r.status, "lower": r.lower, "upper": r.upper, "estimate": r.estimate,
                "raw_estimate": r.raw_estimate, "raw_lower": r.raw_lower, "raw_upper": r.raw_upper,
                "reason": r.reason}
    r = method.batch(tables, MARGIN, FIXED_ALPHA)
    return {"status": r.status, "lower": r.lower, "upper": r.upper, "estimate": r.estimate}


def method_names() -> list[str]:
    from methods import registry
    return registry.names(inputs=None) + ["hierarchical_v1"]


def digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "f":
        a = np.where(np.isnan(a), np.nan, a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


PINNED = Path(__file__).resolve().parent / "methods" / "pinned_decisions.json"
DIGEST_CHARS = 32  # 128 bits of each sha256


def pinned_entry(name: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """``(tables, outputs)`` digests of method ``name`` on its cases: ``tables["case|reps"]``,
    ``outputs[case][field]``."""
    tables, pinned = {}, {}
    for case, t in cases_for(name).items():
        tables[f"{case}|{t.shape[0]}"] = digest(t)[:DIGEST_CHARS]
        pinned[case] = {field: digest(a)[:DIGEST_CHARS] for field, a in outputs(name, t).items()}
    return tables, pinned


def main(argv: list[str] | None = None) -> None:
    """``python -m tests.decision_cases [NAME ...]``: (re)pin the named methods (all when none).
    Only for a method whose decisions are meant to change -- a new version -- or a new method."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("names", nargs="*", help="methods to pin (default: every registered method and "
                                                 "hierarchical_v1)")
    args = parser.parse_args(argv)
    pinned = json.loads(PINNED.read_text()) if PINNED.is_file() else {"tables": {}, "outputs": {}}
    for name in args.names or method_names():
        tables, digests = pinned_entry(name)
        pinned["tables"].update(tables)
        pinned["outputs"][name] = digests
    PINNED.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
