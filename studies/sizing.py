"""Sample sizing: the fewest independent clusters that give the target power (and keep the
false-pass rate within policy) for a paired, clustered non-inferiority design.

Analytic start.  For one trial pair the difference ``D = 1{01} - 1{10}`` has mean
``delta = p01 - p10`` and variance ``sigma1^2 = q - delta^2`` (``q = p10 + p01``, the
discordance).  The score test of ``H0: delta <= -m`` (Nam 1997, Biometrics 53:1422-1430;
Tango 1998, Stat Med 17:891-908) standardises by the variance at the restricted MLE under
``delta0 = -m``, whose large-sample limit solves Tango's quadratic with the expected cell
probabilities in place of the counts:

    p~10 = (sqrt(B^2 - 8 C) - B) / 4,   B = -q + (2 - p01 + p10) delta0,   C = -p10 delta0 (1 - delta0),
    sigma0^2 = 2 p~10 + delta0 (1 - delta0),

and the number of independent pairs for power ``1 - beta`` at one-sided level ``alpha`` is

    n = ((z_alpha sigma0 + z_beta sigma1) / (delta + m))^2

(Nam 1997's score-test sample size; the same construction as Farrington & Manning 1990,
Stat Med 9:1447-1454, for two independent proportions.  Wald-type tests use
``sigma0 = sigma1``: ``n = (z_alpha + z_beta)^2 sigma1^2 / (delta + m)^2``).  The equation
numbers of the papers could not be checked here; the formula is validated in
tests/test_sizing.py by inverting the normal power function, by a numerical maximisation
of the constrained likelihood, and against simulation and exact enumeration.
Clustering: ``M`` trials per cluster with intra-cluster correlation ``rho`` inflate the
variance of the mean difference by the design effect ``1 + (M - 1) rho`` (Kish 1965,
*Survey Sampling*, sec. 5.4; Donner & Klar 2000, ch. 5) -- exact for any linear function of
the cell indicators under the Dirichlet-multinomial DGM -- so ``K = n (1 + (M - 1) rho) / M``.

Simulation.  Power is estimated on a *frame* of ``K_frame`` clusters: experiments with
``K <= K_frame`` clusters are the prefixes ``tables[:, :K]`` (clusters are i.i.d., so a
prefix has exactly the K-cluster law), which gives common random numbers across K and a
power curve that is smooth in K.  The root search brackets the answer on a grid, narrows it
to consecutive integers, then multiplies the replications (x4) until the Clopper-Pearson
interval of power at the returned K lies above the target and at K - 1 below it (or the
replication cap is reached: ``resolved = False``).  Finally the false-pass rate at the null
boundary of the same design (difference = -margin, same baseline, discordance clipped to
feasibility) is checked against the qualification policy's threshold with adaptive
replications; if it is not within policy, K grows (doubling, then bisection) until it is.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy import stats

from methods.protocol import PASS
from methods.qualification import (EXCEEDS, UNDETERMINED, clip_discordance, cp_lower, cp_upper,
                                   verdict_of)
from simlab.scenario import FixedSize, PairedScenario

MAX_CLUSTERS = 200_000
_MAX_CELLS_PER_CHUNK = 1 << 22


# ---------------------------------------------------------------- analytic approximation


def restricted_p10(p10: float, p01: float, delta0: float) -> float:
    """Large-sample limit of the restricted MLE of p10 under ``p01 - p10 = delta0``: Tango's
    (1998) closed-form quadratic (as in methods/fixed/tango_score.py) with the expected cell
    probabilities in place of the counts (n = 1)."""
    B = -(p01 + p10) + (2.0 - p01 + p10) * delta0
    C = -p10 * delta0 * (1.0 - delta0)
    return (math.sqrt(max(B * B - 8.0 * C, 0.0)) - B) / 4.0


def analytic_pairs(margin: float, difference: float, discordance: float, alpha: float, power: float,
                   variance: str = "score") -> dict[str, float]:
    """Independent trial pairs needed (real-valued) and the variances used."""
    if not 0.0 < margin < 1.0:
        raise ValueError(f"margin must lie in (0, 1), got {margin!r}")
    if difference <= -margin:
        raise ValueError(f"true difference {difference!r} must exceed -margin ({-margin}): power is only "
                         "defined under the alternative")
    if abs(difference) > discordance + 1e-12:
        raise ValueError(f"|difference| ({abs(difference)}) cannot exceed the discordance ({discordance})")
    if not 0.0 < alpha < 0.5 or not 0.0 < power < 1.0:
        raise ValueError(f"need 0 < alpha < 0.5 and 0 < power < 1, got alpha={alpha!r}, power={power!r}")
    if variance not in ("score", "wald"):
        raise ValueError(f"variance must be 'score' or 'wald', got {variance!r}")
    p10 = (discordance - difference) / 2.0
    p01 = (discordance + difference) / 2.0
    d0 = -margin
    s1 = discordance - difference ** 2
    if variance == "score":
        pt = restricted_p10(p10, p01, d0)
        s0 = 2.0 * pt + d0 * (1.0 - d0)
    else:
        pt, s0 = p10, s1
    za, zb = stats.norm.ppf(1.0 - alpha), stats.norm.ppf(power)
    n = ((za * math.sqrt(max(s0, 0.0)) + zb * math.sqrt(max(s1, 0.0))) / (difference + margin)) ** 2
    return {"pairs": n, "sigma0_sq": s0, "sigma1_sq": s1, "restricted_p10": pt, "z_alpha": za, "z_beta": zb}


def design_effect(trials: float, rho: float) -> float:
    return 1.0 + (trials - 1.0) * rho


def analytic_clusters(margin: float, difference: float, discordance: float, alpha: float, power: float,
                      trials: int = 1, rho: float = 0.0, variance: str = "score") -> dict[str, float]:
    a = analytic_pairs(margin, difference, discordance, alpha, power, variance)
    deff = design_effect(trials, rho)
    k = a["pairs"] * deff / trials
    return {**a, "design_effect": deff, "clusters_real": k, "clusters": max(2, int(math.ceil(k - 1e-9))),
            "trials": trials, "variance": variance}


def variance_kind(method) -> str:
    """Score variance for score / likelihood-type methods, Wald otherwise."""
    name = getattr(method, "name", "")
    return "score" if name in ("tango_score", "newcombe_hybrid", "exact_discordant") else "wald"


# ---------------------------------------------------------------- simulation on a frame


def _ci(x: int, n: int, level: float) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval at ``level``."""
    c = 1.0 - (1.0 - level) / 2.0
    return cp_lower(x, n, c), cp_upper(x, n, c)


class PowerFrame:
    """Pass counts of a method on prefixes of one K_frame-cluster scenario."""

    def __init__(self, method, scenario: PairedScenario, seed: int, margin: float, alpha: float,
                 looks: int | None = None, sampler: str = "auto"):
        from studies.sampling import table_source

        self.method, self.scenario, self.seed = method, scenario, seed
        self.margin, self.alpha, self.looks = margin, alpha, looks
        self.source = table_source(scenario, seed, sampler)
        self.sampler = self.source.name
        self.k_frame = scenario.clusters
        self.counts: dict[int, list[int]] = {}  # K -> [n_reps, n_pass]
        self.replications_generated = 0

    def _passes(self, tables: np.ndarray, k: int) -> int:
        sub = tables[:, :k, :]
        if self.method.sequential:
            from methods.sequential.base import PROMOTE
            sched = look_schedule(k, self.looks)
            r = self.method.batch(np.ascontiguousarray(sub), sched, self.margin, self.alpha)
            return int(np.count_nonzero(r.decision == PROMOTE))
        r = self.method.batch(np.ascontiguousarray(sub), self.margin, self.alpha)
        return int(np.count_nonzero(r.status == PASS))

    def evaluate(self, ks: list[int], n_reps: int) -> None:
        """Bring every K in ``ks`` to ``n_reps`` replications (one pass over the frame)."""
        ks = sorted({int(k) for k in ks})
        for k in ks:
            if not 1 <= k <= self.k_frame:
                raise ValueError(f"K={k} outside the frame 1..{self.k_frame}")
            self.counts.setdefault(k, [0, 0])
        start = min(self.counts[k][0] for k in ks)
        if start >= n_reps:
            return
        chunk = max(1, _MAX_CELLS_PER_CHUNK // self.k_frame)
        buf = np.empty((min(chunk, n_reps - start), self.k_frame, 4), np.int32)
        for s in range(start, n_reps, chunk):
            e = min(s + chunk, n_reps)
            tables = self.source.fill(buf[:e - s], s)
            self.replications_generated += e - s
            for k in ks:
                c = self.counts[k]
                if c[0] >= e:
                    continue
                lo = max(c[0], s) - s
                c[1] += self._passes(tables[lo:], k)
                c[0] = e

    def power(self, k: int) -> float:
        n, x = self.counts[k]
        return x / n


def look_schedule(k: int, looks: int | None):
    from methods.sequential.base import LookSchedule
    n = looks or 1
    if n > k:
        raise ValueError(f"{n} looks need at least {n} clusters, got K={k}")
    return LookSchedule(looks=tuple(int(math.ceil(j * k / n)) for j in range(1, n + 1)))


@dataclass
class SizingResult:
    inputs: dict[str, Any]
    analytic: dict[str, float]
    clusters: int
    power_clusters: int
    trials_total: int
    power_at_k: dict[str, float]
    power_at_k_minus_1: dict[str, float]
    resolved: bool
    binding: str
    false_pass: dict[str, Any]
    search_log: list[dict[str, Any]]
    curve: Any
    seconds: float
    replications_generated: int
    method_identity: dict[str, str]
    qualification: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "analytic": self.analytic, "clusters": self.clusters,
                "power_clusters": self.power_clusters, "trials_total": self.trials_total, "power_at_k": self.power_at_k,
                "power_at_k_minus_1": self.power_at_k_minus_1, "resolved": self.resolved,
                "binding_constraint": self.binding, "false_pass": self.false_pass,
                "search": self.search_log, "seconds": self.seconds,
                "replications_generated": self.replications_generated, "method": self.method_identity,
                "qualification": self.qualification, "files": self.files,
                "curve": {"clusters": [int(k) for k in self.curve["clusters"].values],
                          "power": [float(p) for p in self.curve["power"].values],
                          "power_mcse": [float(p) for p in self.curve["power_mcse"].values]}}


def _point(frame: PowerFrame, k: int, level: float) -> dict[str, float]:
    n, x = frame.counts[k]
    p = x / n
    lo, hi = _ci(x, n, level)
    return {"clusters": k, "power": p, "mcse": math.sqrt(p * (1 - p) / n), "n_reps": n, "n_pass": x,
            "ci_lower": lo, "ci_upper": hi}


def _grid(lo: int, hi: int, n: int) -> list[int]:
    if hi - lo + 1 <= n:
        return list(range(lo, hi + 1))
    g = np.unique(np.round(np.geomspace(max(lo, 1), hi, n)).astype(int))
    return sorted(set(int(x) for x in g) | {lo, hi})


def _scenario(baseline: float, difference: float, discordance: float, clusters: int, trials: int,
              rho: float) -> PairedScenario:
    return PairedScenario.from_rates(baseline, difference, discordance, clusters=clusters,
                                     cluster_size=FixedSize(trials=trials), rho=rho)


def false_pass_at(method, baseline: float, margin: float, discordance: float, clusters: int, trials: int,
                  rho: float, alpha: float, seed: int, policy, looks: int | None = None,
                  sampler: str = "auto") -> dict[str, Any]:
    """False-pass rate at the null boundary of this design with the policy's adaptive
    replications: verdict ``qualified`` / ``exceeds`` / ``undetermined``."""
    q = clip_discordance(discordance, baseline, margin, 0.0, 1.0)
    if q is None:
        raise ValueError(f"baseline {baseline} admits no discordance at difference -{margin}")
    sc = _scenario(baseline, -margin, q, clusters, trials, rho)
    frame = PowerFrame(method, sc, seed, margin, alpha, looks, sampler)
    thr, mcc = policy.allowed_excess * alpha, policy.mc_confidence
    verdict = UNDETERMINED
    for n in policy.replication_schedule():
        frame.evaluate([clusters], n)
        nn, x = frame.counts[clusters]
        lo, up = cp_lower(x, nn, mcc), cp_upper(x, nn, mcc)
        verdict = verdict_of(lo, up, thr)
        if verdict != UNDETERMINED:
            break
    return {"clusters": clusters, "baseline": baseline, "discordance": q, "difference": -margin,
            "n_reps": nn, "n_pass": x, "rate": x / nn, "cp_lower": lo, "cp_upper": up, "threshold": thr,
            "verdict": verdict, "replications_generated": frame.replications_generated}


def size(method, *, margin: float, difference: float, power: float = 0.8, alpha: float = 0.025,
         trials: int = 1, baseline: float = 0.9, discordance: float | None = None, rho: float = 0.0,
         looks: int | None = None, seed: int = 20261129, ci_level: float = 0.95, initial_reps: int = 2000,
         max_reps: int = 1 << 20, max_clusters: int = MAX_CLUSTERS, policy=None, check_false_pass: bool = True,
         sampler: str = "auto", progress: Callable[[str], None] | None = None) -> SizingResult:
    """Minimum K (clusters of ``trials`` trial pairs) with power >= ``power`` at ``difference``
    and false-pass within ``policy`` at the null boundary.  See the module docstring."""
    from methods.qualification import QualificationPolicy, standard_domain

    t0 = time.perf_counter()
    if policy is None:
        policy = QualificationPolicy(domain=standard_domain(), alpha=alpha)
    if discordance is None:
        discordance = max(2.0 * abs(difference), margin, 0.1)
    if not 0.0 < discordance <= 1.0:
        raise ValueError(f"discordance must lie in (0, 1], got {discordance!r}: with no discordant pairs every "
                         "experiment shows a zero difference with zero variance, a degenerate design")
    if not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials per cluster must be a positive integer, got {trials!r}")
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho must lie in [0, 1), got {rho!r}")
    if initial_reps < 100 or max_reps < initial_reps:
        raise ValueError(f"need 100 <= initial_reps <= max_reps, got {initial_reps}, {max_reps}")
    is_seq = method.sequential
    if looks is not None and not is_seq:
        raise ValueError(f"looks applies to sequential methods; {method.name!r} is fixed-sample")
    _scenario(baseline, difference, discordance, 2, trials, rho)  # validates the alternative
    an = analytic_clusters(margin, difference, discordance, alpha, power, trials, rho, variance_kind(method))
    k0 = max(an["clusters"], looks or 2)
    log: list[dict[str, Any]] = []

    def say(msg: str) -> None:
        if progress:
            progress(msg)

    # 1. a frame large enough that power at K_frame reaches the target
    k_frame = min(max(2 * k0, k0 + 20, 30), max_clusters)
    reps = initial_reps
    while True:
        frame = PowerFrame(method, _scenario(baseline, difference, discordance, k_frame, trials, rho), seed,
                           margin, alpha, looks, sampler)
        lo_k = max(2, looks or 2)
        ks = _grid(lo_k, k_frame, 24) + [min(k0, k_frame)]
        frame.evaluate(ks, reps)
        log.append({"stage": "bracket", "k_frame": k_frame, "n_reps": reps, "ks": len(set(ks))})
        say(f"frame K={k_frame}: power at K_frame {frame.power(k_frame):.4f} ({reps} reps)")
        if frame.power(k_frame) >= power or k_frame >= max_clusters:
            break
        k_frame = min(4 * k_frame, max_clusters)
    if frame.power(k_frame) < power:
        raise ValueError(f"power {frame.power(k_frame):.4f} < {power} even at K={k_frame} (max_clusters); "
                         "the design cannot reach the target")

    def p(k: int) -> float:
        return frame.power(k) if k >= lo_k else -1.0  # K below the smallest design: no power

    def root(lo: int, hi: int, reps: int) -> int:
        """Smallest K in (lo, hi] with estimated power >= target, given p(lo) < target <= p(hi)."""
        while hi - lo > 1:
            ks = _grid(lo + 1, hi - 1, 40)
            frame.evaluate(ks, reps)
            above = [k for k in ks if p(k) >= power]
            new_hi = min(above) if above else hi
            below = [k for k in ks if k < new_hi and p(k) < power]
            lo, hi = (max(below) if below else lo), new_hi
        return hi

    # 2. narrow the bracket to one step, then grow replications until resolved
    evaluated = sorted(frame.counts)
    hi = min(k for k in evaluated if p(k) >= power)
    lo = max([k for k in evaluated if k < hi and p(k) < power], default=lo_k - 1)
    resolved = False
    while True:
        k_star = root(lo, hi, reps)
        frame.evaluate([k for k in (k_star - 1, k_star) if k >= lo_k], reps)
        at = _point(frame, k_star, ci_level)
        below_pt = _point(frame, k_star - 1, ci_level) if k_star - 1 >= lo_k else None
        log.append({"stage": "resolve", "k": k_star, "n_reps": reps, "power": at["power"],
                    "ci": [at["ci_lower"], at["ci_upper"]],
                    "power_k_minus_1": None if below_pt is None else below_pt["power"]})
        say(f"K={k_star}: power {at['power']:.4f} [{at['ci_lower']:.4f}, {at['ci_upper']:.4f}] at {reps} reps")
        if at["ci_lower"] > power and (below_pt is None or below_pt["ci_upper"] < power):
            resolved = True
            break
        if reps >= max_reps:
            break
        reps = min(reps * 4, max_reps)
        # a bracket around the previous answer at the new replication count (widening as needed)
        w = 4
        while True:
            lo_c, hi_c = max(lo_k - 1, k_star - w), min(k_frame, k_star + w)
            frame.evaluate([k for k in (lo_c, hi_c) if k >= lo_k], reps)
            if p(hi_c) < power and hi_c < k_frame:
                w *= 2
                continue
            if p(lo_c) >= power and lo_c >= lo_k:
                w *= 2
                continue
            break
        if p(hi_c) < power:  # the frame's last K fell below the target at more replications
            break
        lo, hi = lo_c, hi_c
    k_power = k_star
    power_at = _point(frame, k_power, ci_level)
    power_below = _point(frame, k_power - 1, ci_level) if k_power - 1 >= lo_k else None

    # 3. false-pass within policy at the chosen design: K grows while it demonstrably
    #    exceeds the threshold; an undetermined verdict (the replication cap could not
    #    decide) is reported, not acted on -- more clusters would not settle MC error.
    binding = "power"
    fp: dict[str, Any] = {"checked": False}
    k_final = k_power
    extra_generated = 0
    final_frame = frame
    if check_false_pass:
        fp = false_pass_at(method, baseline, margin, discordance, k_power, trials, rho, alpha, seed, policy, looks,
                           sampler)
        extra_generated += fp["replications_generated"]
        fp["checked"] = True
        if fp["verdict"] == EXCEEDS:
            good, bad = None, k_power
            k = k_power
            while k < max_clusters:
                k = min(2 * k, max_clusters)
                r = false_pass_at(method, baseline, margin, discordance, k, trials, rho, alpha, seed, policy,
                                  looks, sampler)
                extra_generated += r["replications_generated"]
                if r["verdict"] != EXCEEDS:
                    good = (k, r)
                    break
                bad = k
            if good is None:
                fp = {**fp, "achievable": False}
                binding = "false_pass (not achievable within max_clusters)"
            else:
                gk, gr = good
                while gk - bad > 1:
                    mid = (gk + bad) // 2
                    r = false_pass_at(method, baseline, margin, discordance, mid, trials, rho, alpha, seed, policy,
                                      looks, sampler)
                    extra_generated += r["replications_generated"]
                    if r["verdict"] != EXCEEDS:
                        gk, gr = mid, r
                    else:
                        bad = mid
                k_final, fp = gk, {**gr, "checked": True, "at_power_k": fp}
                binding = "false_pass"
                if k_final > k_frame:
                    final_frame = PowerFrame(method, _scenario(baseline, difference, discordance, k_final, trials,
                                                               rho), seed, margin, alpha, looks, sampler)
                final_frame.evaluate([k for k in (k_final - 1, k_final) if k >= lo_k], reps)
                power_at = _point(final_frame, k_final, ci_level)
                power_below = _point(final_frame, k_final - 1, ci_level) if k_final - 1 >= lo_k else None

    # 4. the power curve (common random numbers on the frame)
    curve_ks = sorted(set(_grid(lo_k, k_frame, 30)) | {k_power, max(lo_k, k_power - 1), min(k0, k_frame)})
    curve_reps = min(reps, max(initial_reps, 4000))
    frame.evaluate(curve_ks, curve_reps)
    curve = curve_dataset(frame, curve_ks, ci_level)
    inputs = {"method": method.name, "margin": margin, "difference": difference, "power": power, "alpha": alpha,
              "trials_per_cluster": trials, "baseline": baseline, "discordance": discordance, "rho": rho,
              "looks": looks, "seed": seed, "ci_level": ci_level, "initial_reps": initial_reps,
              "max_reps": max_reps, "sampler": frame.sampler}
    curve.attrs.update({"inputs": _json(inputs), "analytic": _json(an), "chosen_clusters": k_final,
                        "power_clusters": k_power, "method_identity": _json(method.identity.as_dict()),
                        "k_frame": k_frame})
    generated = sum(f.replications_generated for f in {id(frame): frame, id(final_frame): final_frame}.values())
    return SizingResult(inputs=inputs, analytic=an, clusters=k_final, power_clusters=k_power,
                        trials_total=k_final * trials, power_at_k=power_at, power_at_k_minus_1=power_below or {},
                        resolved=resolved, binding=binding, false_pass=fp, search_log=log, curve=curve,
                        seconds=time.perf_counter() - t0, replications_generated=generated + extra_generated,
                        method_identity=method.identity.as_dict())


def _json(x) -> str:
    import json
    return json.dumps(x, default=float)


def curve_dataset(frame: PowerFrame, ks: list[int], ci_level: float):
    import xarray as xr

    pts = [_point(frame, k, ci_level) for k in ks]
    return xr.Dataset(
        {"power": ("clusters", [p["power"] for p in pts]), "power_mcse": ("clusters", [p["mcse"] for p in pts]),
         "n_reps": ("clusters", np.array([p["n_reps"] for p in pts], np.int64)),
         "n_pass": ("clusters", np.array([p["n_pass"] for p in pts], np.int64)),
         "ci_lower": ("clusters", [p["ci_lower"] for p in pts]), "ci_upper": ("clusters", [p["ci_upper"] for p in pts])},
        coords={"clusters": np.asarray(ks, np.int64)},
        attrs={"title": "power curve (common random numbers: prefixes of one frame)", "ci_level": ci_level})


def plot_curve(result: SizingResult, path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds = result.curve
    k = ds["clusters"].values
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.fill_between(k, ds["ci_lower"].values, ds["ci_upper"].values, alpha=0.25, label=f"{ds.attrs['ci_level']:.0%} CI")
    ax.plot(k, ds["power"].values, marker=".", label="simulated power")
    ax.axhline(result.inputs["power"], color="k", lw=0.8, ls="--", label=f"target {result.inputs['power']}")
    ax.axvline(result.clusters, color="tab:red", lw=1.0, label=f"chosen K = {result.clusters}")
    ax.axvline(result.analytic["clusters"], color="tab:green", lw=1.0, ls=":",
               label=f"analytic K = {result.analytic['clusters']}")
    inp = result.inputs
    ax.set_xscale("log")
    ax.set_xlabel("independent clusters K")
    ax.set_ylabel("P(pass)")
    ax.set_title(f"{inp['method']}: margin {inp['margin']}, difference {inp['difference']}, M={inp['trials_per_cluster']}, "
                 f"rho={inp['rho']}", fontsize=9)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["analytic_pairs", "analytic_clusters", "restricted_p10", "design_effect", "size", "SizingResult",
           "PowerFrame", "false_pass_at", "plot_curve", "EXCEEDS"]


def save_sizing(result: SizingResult, out_dir) -> dict[str, str]:
    """Write the power curve (netCDF) and its plot (PNG) into ``out_dir``, each atomically
    (a temporary file renamed into place), named after the inputs; sets and returns
    ``result.files``."""
    import os
    from pathlib import Path

    from .results import save_dataset

    inp = result.inputs
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / (f"size-{inp['method']}-m{inp['margin']:g}-d{inp['difference']:g}-M{inp['trials_per_cluster']}"
                  f"-rho{inp['rho']:g}-seed{inp['seed']}")
    nc, png = Path(f"{stem}.nc"), Path(f"{stem}.png")
    save_dataset(result.curve, nc)
    tmp = png.with_name(f".{png.name}.{os.getpid()}.tmp.png")
    try:
        plot_curve(result, tmp)
        os.replace(tmp, png)
    finally:
        tmp.unlink(missing_ok=True)
    result.files = {"curve": str(nc), "png": str(png)}
    return result.files
