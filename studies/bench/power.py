"""Power at the user's design (issue 26): every candidate on the same simulated tables.

Design: K clusters of M trials, margin, one-sided alpha, rho, baseline and true difference as
given (defaults: margin 0.03, alpha 0.025, rho 0.1, baseline 0.9, difference 0, M = 3, K = 30,
100, 150, 300, discordance 0.03 and 0.1).  Methods, each run on the same R tables per (K, q):

* ``cluster_t`` at the nominal level (uncertified);
* ``clustered_score`` at a nominal level calibrated by Monte Carlo on a search stream: the
  largest level whose empirical false-pass is <= alpha at every one of 16 null discordances at
  rho_max (its statistic at the margin once per replication; not a certificate);
* ``dm_score`` with the fixed critical value z, and E+M-calibrated exactly at the design
  (``studies.exact.convolution.calibrate_em``);
* ``betting_ci`` and ``betting_ci_horizon`` (valid by theorem);
* ``dm_likelihood_ratio`` calibrated at the design (``dm_lr_cal``), where a qualified
  ``simlab calibrate`` certificate of it covers the design in the records directory (its
  calibration takes minutes, so the bench reads it instead of making it); "n/a" elsewhere.

Also reported: the exact worst false-pass of both ``dm_score`` variants from their
``exact-convolution`` certificates, the exact power of ``dm_score`` (a check of the simulated
one), the distribution-free floor ``(1 - m)^K <= alpha``, and the wall time of calibrate and
certify at each K.  ``python -m studies.bench.power`` prints the table.
"""
from __future__ import annotations

import math
import time
from typing import Callable

import numba as nb
import numpy as np
from scipy import stats

from methods import registry
from methods.fixed.clustered_score import score
from methods.fixed.dm_score import cluster_sums
from methods.fixed.em_table import design_weight
from methods.protocol import PASS
from simlab.estimands import null_scenario
from simlab.generate import simulate_tables
from simlab.scenario import FixedSize, PairedScenario

SEARCH_DISCORDANCES = 16
COLUMNS = ("cluster_t", "clustered_score_cal", "dm_score_z", "dm_score_em", "betting_ci", "betting_ci_horizon",
           "dm_lr_cal")


def certified_likelihood_ratio(clusters: int, trials: int, margin: float, rho_max: float, alpha: float):
    """The qualified certificate of ``dm_likelihood_ratio@alpha=L`` at threshold alpha itself
    that covers K x M at this margin and rho_max, from the records directory (of several, the
    largest L: the most powerful), or None."""
    from methods.qualification import QUALIFIED, DesignPoint
    from methods.qualification.certificate import certificate_covers, certificate_paths, load_certificate
    from simlab.scenario import FixedSize as Size

    point = DesignPoint(clusters=clusters, cluster_size=Size(trials=trials), margin=margin, rho_max=rho_max)
    found = []
    for path in certificate_paths():     # a calibrated method's file is named by its level too
        if not path.name.startswith("dm_likelihood_ratio-alpha-"):
            continue
        cert = load_certificate(path)
        if (cert.verdict == QUALIFIED and cert.alpha == alpha and cert.allowed_excess == 1.0
                and cert.method.registered_name.startswith("dm_likelihood_ratio@")
                and certificate_covers(cert, point).covered):
            found.append(cert)
    return max(found, key=lambda c: c.method.resolve().nominal_alpha, default=None)


def distribution_free_floor(margin: float, alpha: float) -> int:
    """The least K at which any level-alpha test may pass an all-ties sample: (1 - m)^K <= alpha."""
    return math.ceil(math.log(alpha) / math.log1p(-margin))


@nb.njit(cache=True)
def _margin_scores(tables, margin, floor, out):
    """clustered_score's Z(-margin) of every replication."""
    for r in range(tables.shape[0]):
        N, S, w, l, s2, snd, sn2 = cluster_sums(tables, r)
        out[r] = score(-margin, S, N, w, l, s2, snd, sn2, design_weight(N, sn2, floor)) if N > 0 else -math.inf


def calibrate_clustered_score(clusters: int, trials: int, margin: float, rho_max: float, alpha: float,
                              reps: int, seed: int) -> dict:
    """The largest nominal level of clustered_score whose empirical false-pass is <= alpha on each
    of the search scenarios (rho_max; discordances uniform in sqrt(q - m) on [m, 0.5]; the
    baseline that admits them all, which the rate does not depend on)."""
    u = np.linspace(0.0, math.sqrt(0.5 - margin), SEARCH_DISCORDANCES)
    k = int(math.floor(alpha * reps))
    cut, worst = -math.inf, None
    for i, q in enumerate(margin + u * u):
        sc = null_scenario("trial_weighted", 0.5 + margin / 2, float(q), margin, clusters=clusters,
                           cluster_size=FixedSize(trials=trials), rho=rho_max)
        z = np.empty(reps)
        _margin_scores(simulate_tables(sc, seed + i, reps), margin, 0.0, z)
        z_k1 = float(np.sort(z)[::-1][k])            # the (k + 1)-th largest: must fail
        if z_k1 > cut:
            cut, worst = z_k1, float(q)
    level = float(stats.norm.sf(np.nextafter(cut, math.inf))) * (1.0 - 1e-9)
    return {"nominal_level": level, "critical_value": float(stats.norm.isf(level)), "binding_discordance": worst,
            "search_scenarios": SEARCH_DISCORDANCES, "search_replications": reps, "search_seed": seed}


def _power(method, tables, margin: float, alpha: float) -> tuple[float, float]:
    p = float(np.mean(method.batch(tables, margin, alpha).status == PASS))
    return p, math.sqrt(p * (1.0 - p) / tables.shape[0])


def bench_power(clusters=(30, 100, 150, 300), discordances=(0.03, 0.1), trials: int = 3, margin: float = 0.03,
                alpha: float = 0.025, rho: float = 0.1, rho_max: float = 0.1, baseline: float = 0.9,
                difference: float = 0.0, reps: int = 20_000, search_reps: int = 20_000, seed: int = 20260601,
                progress: Callable[[str], None] | None = None) -> dict:
    from studies.exact.convolution import ConvolutionStates, calibrate_em
    from studies.qualify.certify import certify

    say = progress or (lambda s: None)
    dm = registry.get("dm_score").with_options(rho_max=rho_max)
    fixed = {name: registry.get(name) for name in ("cluster_t", "clustered_score", "betting_ci", "betting_ci_horizon")}
    designs = []
    for K in clusters:
        say(f"K = {K}: calibrate dm_score (exact E+M)")
        t0, c0 = time.perf_counter(), time.process_time()
        cal = calibrate_em(dm, K, trials, margin, rho_max, alpha)
        t_cal = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}
        certs = {}
        for label, m in (("dm_score_z", dm), ("dm_score_em", cal.method)):
            t0, c0 = time.perf_counter(), time.process_time()
            c = certify(m, K, trials, margin, rho_max=rho_max, alpha=alpha)
            certs[label] = {"engine": c.engine, "verdict": c.verdict, "worst_rate": c.worst_point.rate,
                            "worst_discordance": c.worst_point.discordance, "worst_rho": c.worst_point.rho,
                            "points": len(c.points),
                            "seconds": {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}}
        say(f"K = {K}: calibrate clustered_score (Monte Carlo search stream)")
        cs = calibrate_clustered_score(K, trials, margin, rho_max, alpha, search_reps, seed + 1000 * K + 500)
        methods = {"cluster_t": (fixed["cluster_t"], alpha),
                   "clustered_score_cal": (fixed["clustered_score"], cs["nominal_level"]),
                   "dm_score_z": (dm, alpha), "dm_score_em": (cal.method, alpha),
                   "betting_ci": (fixed["betting_ci"], alpha),
                   "betting_ci_horizon": (fixed["betting_ci_horizon"], alpha)}
        lr = certified_likelihood_ratio(K, trials, margin, rho_max, alpha)
        if lr is not None:
            methods["dm_lr_cal"] = (registry.get(lr.method.registered_name), alpha)
            certs["dm_lr_cal"] = {"engine": lr.engine, "verdict": lr.verdict, "worst_rate": lr.worst_point.rate,
                                  "worst_upper": lr.worst_point.upper, "method": lr.method.registered_name,
                                  "worst_discordance": lr.worst_point.discordance, "worst_rho": lr.worst_point.rho,
                                  "points": len(lr.points), "certificate_sha256": lr.certificate_sha256}
        exact = {"dm_score_z": ConvolutionStates(dm, K, trials, margin, alpha),
                 "dm_score_em": ConvolutionStates(cal.method, K, trials, margin, alpha)}
        rows = []
        for j, q in enumerate(discordances):
            say(f"K = {K}, discordance {q:g}: {reps:,} tables")
            sc = PairedScenario.from_rates(baseline, difference, q, clusters=K, cluster_size=FixedSize(trials=trials),
                                           rho=rho)
            tables = simulate_tables(sc, seed + 1000 * K + j, reps)
            row = {"discordance": q, "power": {}, "mcse": {}}
            for name, (m, a) in methods.items():
                row["power"][name], row["mcse"][name] = _power(m, tables, margin, a)
            p10, p01 = (q - difference) / 2.0, (q + difference) / 2.0
            row["exact_power"] = {k: float(v.pass_probability(p10, p01, rho)) for k, v in exact.items()}
            rows.append(row)
        designs.append({"clusters": K, "em_level": cal.level, "em_worst_on_grid": cal.worst,
                        "calibrate_seconds": t_cal, "certificates": certs, "clustered_score_calibration": cs,
                        "rows": rows})
    return {"trials": trials, "margin": margin, "alpha": alpha, "rho": rho, "rho_max": rho_max,
            "baseline": baseline, "difference": difference, "replications": reps, "seed": seed,
            "distribution_free_floor": distribution_free_floor(margin, alpha), "designs": designs}


def render_power(result: dict) -> str:
    head = (f"M = {result['trials']}, margin {result['margin']:g}, alpha {result['alpha']:g}, rho {result['rho']:g} "
            f"(rho_max {result['rho_max']:g}), baseline {result['baseline']:g}, true difference "
            f"{result['difference']:g}; {result['replications']:,} tables per row, the same for every method. "
            f"Distribution-free floor: K >= {result['distribution_free_floor']}.")
    lines = [head, "K     q     " + "  ".join(f"{c:>19}" for c in COLUMNS) + "   exact dm_z / dm_em"]
    for d in result["designs"]:
        for row in d["rows"]:
            cells = "  ".join(f"{row['power'][c]:.4f} +- {row['mcse'][c]:.4f}" if c in row["power"] else
                              f"{'n/a':>19}" for c in COLUMNS)
            ex = row["exact_power"]
            lines.append(f"{d['clusters']:<5} {row['discordance']:<5g} {cells}   {ex['dm_score_z']:.4f} / "
                         f"{ex['dm_score_em']:.4f}")
    lines.append("")
    for d in result["designs"]:
        z, em = d["certificates"]["dm_score_z"], d["certificates"]["dm_score_em"]
        cs = d["clustered_score_calibration"]
        t = d["calibrate_seconds"]
        lines.append(f"K = {d['clusters']}: dm_score E+M level {d['em_level']:g}, calibrate {t['wall']:.1f} s wall "
                     f"({t['cpu']:.1f} s CPU); certified worst (exact, {em['points']} nodes): z {z['worst_rate']:.5f} "
                     f"({z['verdict']}), E+M {em['worst_rate']:.5f} ({em['verdict']}) at q = "
                     f"{em['worst_discordance']:.4f}, rho = {em['worst_rho']:g}; certify z / E+M "
                     f"{z['seconds']['wall']:.1f} / {em['seconds']['wall']:.1f} s wall ({z['seconds']['cpu']:.1f} / "
                     f"{em['seconds']['cpu']:.1f} s CPU); clustered_score calibrated nominal level "
                     f"{cs['nominal_level']:.5f}")
        lr = d["certificates"].get("dm_lr_cal")
        lines.append(f"K = {d['clusters']}: " + (
            f"{lr['method']} certified ({lr['engine']}, {lr['points']} scenarios): worst {lr['worst_rate']:.5f} "
            f"(upper {lr['worst_upper']:.5f}) at q = {lr['worst_discordance']:.4f}, rho = {lr['worst_rho']:g}"
            if lr else "no calibrate certificate of dm_likelihood_ratio in the records directory (dm_lr_cal n/a)"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m studies.bench.power [--clusters 30,100] [--reps N] [--json]``."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", default="30,100,150,300", help="the K values, comma-separated (default "
                                                                      "%(default)s)")
    parser.add_argument("--reps", type=int, default=20_000, help="tables per (K, discordance) (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="also print the result as one JSON object")
    args = parser.parse_args(argv)
    result = bench_power(clusters=tuple(int(k) for k in args.clusters.split(",")), reps=args.reps,
                         progress=lambda s: print(s, file=sys.stderr, flush=True))
    print(render_power(result))
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
