"""Building a record from evaluated scenarios: cell verdicts, worst case, the qualified
sub-domain; and the check that stated bounds and verdicts follow from the counts."""
from __future__ import annotations

import datetime as _dt
import itertools
from typing import Any

import numpy as np

from simlab.scenario import FixedSize

from simlab.clock import format_time, utcnow
from .policy import QualificationPolicy
from .record import (CellVerdict, DatasetRef, RecordedMethod, QualificationRecord, QualifiedRule, QualifiedSubdomain,
                     ScenarioTable, WorstCase)
from .verdicts import (MC_RULE, QUALIFIED, MCRule, TamperedRecordError, combine_verdicts, cp_bounds,
                       stage_confidence, verdict_of)

_REL_TOL = 1e-9


def check_scenarios(policy: QualificationPolicy, scen: ScenarioTable, rule: MCRule) -> None:
    """Every stated bound and verdict must follow from the counts under the Monte Carlo
    ``rule`` (else: tampered)."""
    c = stage_confidence(policy.mc_confidence, len(policy.replication_schedule()), rule)
    thr = policy.threshold
    dom = policy.domain
    n = np.asarray(scen.n_reps, dtype=np.int64)
    x = np.asarray(scen.n_pass, dtype=np.int64)
    inc = np.asarray(scen.n_inconclusive, dtype=np.int64)
    bad = np.flatnonzero((n < 1) | (x < 0) | (x > n) | (inc < 0) | (inc > n - x))
    if bad.size:
        i = int(bad[0])
        raise TamperedRecordError(f"scenario {i}: impossible counts n_reps={n[i]}, n_pass={x[i]}, "
                                  f"n_inconclusive={inc[i]}")
    lo, up = cp_bounds(x, n, c)
    ok = np.isclose(lo, scen.lower, rtol=_REL_TOL, atol=1e-15) & np.isclose(up, scen.upper, rtol=_REL_TOL, atol=1e-15)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise TamperedRecordError(f"scenario {i}: bounds ({scen.lower[i]}, {scen.upper[i]}) do not follow "
                                  f"from {x[i]}/{n[i]} passes (expected ({lo[i]}, {up[i]}))")
    for i in range(len(scen)):
        if verdict_of(scen.lower[i], scen.upper[i], thr) != scen.verdict[i]:
            raise TamperedRecordError(f"scenario {i}: verdict {scen.verdict[i]!r} does not follow from its bounds")
        if not (0 <= scen.size[i] < len(dom.cluster_sizes) and 0 <= scen.noise[i] < len(dom.label_noise)):
            raise TamperedRecordError(f"scenario {i}: size/noise index outside the policy's domain")


def cell_verdicts(policy: QualificationPolicy, scen: ScenarioTable) -> tuple[CellVerdict, ...]:
    """One verdict per discrete cell of the domain, worst over that cell's scenarios."""
    by_cell: dict[tuple, list[int]] = {}
    for i in range(len(scen)):
        by_cell.setdefault(scen.cell_of(i), []).append(i)
    out = []
    for cell in policy.domain.cells():
        idx = by_cell.get(cell)
        if not idx:
            raise ValueError(f"cell {cell} of the domain has no evaluated scenario")
        worst = max(idx, key=lambda i: (scen.upper[i], scen.n_pass[i] / scen.n_reps[i], -i))
        out.append(CellVerdict(clusters=cell[0], size=cell[1], rho=cell[2], margin=cell[3], noise=cell[4],
                               n_scenarios=len(idx), worst=worst, upper=scen.upper[worst],
                               verdict=combine_verdicts([scen.verdict[i] for i in idx]),
                               vacuous=all(scen.n_inconclusive[i] == scen.n_reps[i] for i in idx)))
    return tuple(out)


def worst_case(scen: ScenarioTable) -> WorstCase:
    i = max(range(len(scen)), key=lambda j: (scen.upper[j], scen.n_pass[j] / scen.n_reps[j], -j))
    return WorstCase(scenario=i, clusters=scen.clusters[i], size=scen.size[i], rho=scen.rho[i],
                     margin=scen.margin[i], noise=scen.noise[i], baseline=scen.baseline[i],
                     discordance=scen.discordance[i], stage=scen.stage[i], n_reps=scen.n_reps[i], n_pass=scen.n_pass[i],
                     rate=scen.n_pass[i] / scen.n_reps[i], upper=scen.upper[i], verdict=scen.verdict[i])


def size_label(size: Any) -> str:
    if isinstance(size, FixedSize):
        return f"M={size.trials}"
    return f"{size.kind}(mean {size.mean_trials:g}, min {size.minimum})"


def _k_ranges(ks: list[int], grid: tuple[int, ...]) -> str:
    """Compress qualified K grid values into runs of consecutive grid points."""
    if not ks:
        return "none"
    pos = [grid.index(k) for k in ks]
    runs, start = [], pos[0]
    for a, b in zip(pos, pos[1:] + [None]):
        if b is None or b != a + 1:
            lo, hi = grid[start], grid[a]
            runs.append(f"K={lo}" if lo == hi else (f"K>={lo}" if hi == grid[-1] else f"K {lo}..{hi}"))
            if b is not None:
                start = b
    return ", ".join(runs)


COVERAGE_RULE = ("A design point is covered by a grid record only when it lies exactly on a grid cell "
                 "(K, cluster size and margin on their grids; rho on its grid, or any rho when every cluster "
                 "has one trial, where rho does not change the data) and that cell is qualified; each cell's "
                 "verdict is the worst over every evaluated baseline and discordance at the null boundary. "
                 "Nothing is interpolated between grid points (the false-pass rate is not monotone in K, "
                 "margin or rho); an off-grid design, or an unknown rho, needs a certificate (simlab certify).")


def qualified_subdomain(policy: QualificationPolicy, cells: tuple[CellVerdict, ...]) -> QualifiedSubdomain:
    dom = policy.domain
    cmap = {c.key: c for c in cells}
    rules = []
    lines = []
    for s, m, n in itertools.product(range(len(dom.cluster_sizes)), dom.margin.grid, range(len(dom.label_noise))):
        per_rho = []
        for r in dom.rho.grid:
            ks = tuple(k for k in dom.clusters.grid if cmap[(k, s, r, m, n)].verdict == QUALIFIED)
            rules.append(QualifiedRule(size=s, rho=r, margin=m, noise=n, clusters=ks))
            per_rho.append((r, _k_ranges(list(ks), dom.clusters.grid)))
        # merge consecutive rho values with the same K description
        parts, i = [], 0
        while i < len(per_rho):
            j = i
            while j + 1 < len(per_rho) and per_rho[j + 1][1] == per_rho[i][1]:
                j += 1
            r_lo, r_hi = per_rho[i][0], per_rho[j][0]
            rho_txt = f"rho={r_lo:g}" if r_lo == r_hi else f"rho {r_lo:g}..{r_hi:g}"
            parts.append(f"{per_rho[i][1]} at {rho_txt}")
            i = j + 1
        noise_txt = "" if len(dom.label_noise) == 1 else f", noise #{n}"
        lines.append(f"{size_label(dom.cluster_sizes[s])}, margin {m:g}{noise_txt}: " + "; ".join(parts))
    n_ok = sum(c.verdict == QUALIFIED for c in cells)
    n_vac = sum(c.verdict == QUALIFIED and c.vacuous for c in cells)
    head = f"qualified in {n_ok} of {len(cells)} cells (threshold {policy.threshold:.4g})"
    if n_vac:
        head += (f"; {n_vac} of them vacuously: the method was inconclusive in every replication there "
                 "(it never passes, so it cannot false-pass)")
    return QualifiedSubdomain(cells_qualified=n_ok, cells_total=len(cells), rules=tuple(rules),
                              summary="\n".join([head] + lines), coverage_rule=COVERAGE_RULE)


def build_record(method_identity: dict, kind: str, estimand: str, policy: QualificationPolicy,
                 scenarios: ScenarioTable, dataset_file: str, dataset_sha256: str, software: dict[str, str],
                 created: _dt.datetime | None = None, method_key: tuple | None = None) -> QualificationRecord:
    """Assemble and seal a record from evaluated scenarios (verdicts recomputed here).
    ``method_key`` = (registry name, options items, wrapped method name or None)."""
    check_scenarios(policy, scenarios, MC_RULE)
    cells = cell_verdicts(policy, scenarios)
    created = created or utcnow()
    reg_name, options, inner = method_key or (method_identity["name"], (), None)
    rec = QualificationRecord(
        mc_rule=MC_RULE, method=RecordedMethod(kind=kind, estimand=estimand, registered_name=reg_name, options=dict(options), inner=inner,
                         **method_identity),
        policy=policy, policy_sha256=policy.sha256, threshold=policy.threshold, confidence=policy.confidence,
        scenarios=scenarios, cells=cells, worst_case=worst_case(scenarios),
        qualified=qualified_subdomain(policy, cells),
        dataset=DatasetRef(file=dataset_file, sha256=dataset_sha256),
        created=format_time(created), valid_until=format_time(created + _dt.timedelta(days=policy.validity_days)),
        software=dict(software))
    return rec.sealed()


