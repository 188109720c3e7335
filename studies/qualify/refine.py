"""Refinement of the qualifier: in every cell not already rejected whose worst upper bound
is at least ``refine_fraction * threshold``, a golden-section search (Kiefer 1953, Proc AMS
4:502-506; the bracketing form of Press et al., *Numerical Recipes* 3rd ed., sec. 10.2)
maximises the estimated false-pass rate first over baseline (discordance held, clipped to
feasibility), then over discordance, ``refine_evaluations`` new scenarios per axis, within
the grid neighbours of the cell's worst scenario."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from methods.qualification import QualificationPolicy, ScenarioPoint, clip_discordance, discordance_limits

GOLDEN = 0.3819660112501051  # 2 - golden ratio: golden-section step fraction


@dataclass
class LineSearch:
    """Golden-section search for the maximum of the false-pass rate along one axis of one
    (method, cell): ``x`` is baseline (axis 0) or discordance (axis 1)."""
    method: tuple
    cell: tuple
    axis: int
    lo: float
    hi: float
    fixed: float              # discordance held (axis 0) or baseline held (axis 1)
    budget: int
    points: dict[float, float] = field(default_factory=dict)
    min_step: float = 1e-4

    def spec(self, x: float, policy: QualificationPolicy, estimand: str) -> ScenarioPoint | None:
        k, s, r, m, n = self.cell
        if self.axis == 0:
            d = policy.domain.discordance
            q = clip_discordance(self.fixed, x, m, d.lo, d.hi, estimand)
            if q is None:  # no feasible discordance at this baseline
                return None
            return ScenarioPoint(k, s, r, m, n, round(x, 12), round(q, 12), "refine")
        return ScenarioPoint(k, s, r, m, n, round(self.fixed, 12), round(x, 12), "refine")

    def propose(self) -> float | None:
        if self.budget <= 0 or not self.points or max(self.points.values()) <= 0.0:
            return None
        best = max(sorted(self.points), key=lambda x: self.points[x])
        xs = sorted(set(self.points) | {self.lo, self.hi})
        j = xs.index(best)
        left = best - xs[j - 1] if j > 0 else 0.0
        right = xs[j + 1] - best if j + 1 < len(xs) else 0.0
        if max(left, right) < self.min_step:
            return None
        x = best + GOLDEN * right if right >= left else best - GOLDEN * left
        return round(x, 12)


def _neighbours(grid: list[float], x: float, lo: float, hi: float) -> tuple[float, float]:
    below = [g for g in grid if g < x - 1e-12]
    above = [g for g in grid if g > x + 1e-12]
    return (max(below) if below else lo, min(above) if above else hi)


def _searches(escalation: "Escalation", axis: int) -> list[LineSearch]:
    policy, est = escalation.policy, escalation.estimand
    dom, thr = policy.domain, policy.threshold
    out = []
    for key, rows in escalation.rows.items():
        cells: dict[tuple, list[tuple[ScenarioPoint, Any]]] = {}
        for spec, c in rows.values():
            cells.setdefault(spec.cell, []).append((spec, c))
        for cell, members in cells.items():
            if cell in escalation.rejected[key] or (escalation.one_verdict and escalation.rejected[key]):
                continue
            worst_spec, worst_c = max(members, key=lambda sc: (escalation.upper(sc[1]), sc[1].rate))
            if worst_c.n_pass == 0 or escalation.upper(worst_c) < policy.refine_fraction * thr:
                continue
            margin = cell[3]
            if axis == 0:
                lo, hi = _neighbours(list(dom.baseline.grid), worst_spec.baseline, dom.baseline.lo, dom.baseline.hi)
                ls = LineSearch(key, cell, 0, lo, hi, worst_spec.discordance, policy.refine_evaluations)
                for spec, c in members:
                    q = clip_discordance(worst_spec.discordance, spec.baseline, margin, dom.discordance.lo,
                                         dom.discordance.hi, est)
                    if lo - 1e-12 <= spec.baseline <= hi + 1e-12 and q is not None \
                            and abs(q - spec.discordance) <= 1e-9:
                        ls.points[round(spec.baseline, 12)] = c.rate
            else:
                b = worst_spec.baseline
                lim = discordance_limits(b, margin, dom.discordance.lo, dom.discordance.hi, est)
                if lim is None or lim[1] - lim[0] < 1e-9:
                    continue
                grid_q = sorted({clip_discordance(q, b, margin, dom.discordance.lo, dom.discordance.hi, est)
                                 for q in dom.discordance.grid})
                lo, hi = _neighbours(grid_q, worst_spec.discordance, lim[0], lim[1])
                ls = LineSearch(key, cell, 1, lo, hi, b, policy.refine_evaluations)
                for spec, c in members:
                    if abs(spec.baseline - b) <= 1e-12 and lo - 1e-12 <= spec.discordance <= hi + 1e-12:
                        ls.points[round(spec.discordance, 12)] = c.rate
            out.append(ls)
    return out


def refine(escalation: "Escalation", runner, estimands: tuple[str, ...], progress: Callable[[str], None] | None = None) -> int:
    """Golden-section refinement around each refinable cell's worst scenario: baseline
    first, then discordance.  Returns the number of new scenarios evaluated."""
    policy = escalation.policy
    new_points: set[tuple] = set()
    for axis in (0, 1):
        searches = _searches(escalation, axis)
        step = 0
        while True:
            proposals: dict[tuple, tuple[ScenarioPoint, list[tuple]]] = {}
            owners: list[tuple[LineSearch, float, ScenarioPoint]] = []
            for ls in searches:
                while True:  # skip points that are infeasible or already evaluated
                    x = ls.propose()
                    if x is None:
                        break
                    spec = ls.spec(x, policy, escalation.estimand)
                    ls.budget -= 1
                    if spec is None:
                        ls.points[x] = 0.0
                        continue
                    row = escalation.rows[ls.method].get(spec.point)
                    if row is not None:
                        ls.points[x] = row[1].rate
                        continue
                    _, keys = proposals.setdefault(spec.point, (spec, []))
                    if ls.method not in keys:
                        keys.append(ls.method)
                    owners.append((ls, x, spec))
                    break
            if not proposals:
                break
            step += 1
            escalation.escalate(list(proposals.values()), runner, estimands, progress,
                          f"refine {'baseline' if axis == 0 else 'discordance'} step {step}, ")
            new_points.update(proposals)
            for ls, x, spec in owners:
                ls.points[x] = escalation.rows[ls.method][spec.point][1].rate
    return len(new_points)


# ---------------------------------------------------------------- provenance and output
