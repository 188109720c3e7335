"""The demo's design comparison (issue 26, item 7): what a gate can do at the seed's design
and at 100 customers x 3 trials, and power against K.

For each design (margin 0.03, one-sided alpha 0.025, rho_max 0.1; alternative: baseline 0.9,
discordance 0.1, rho 0.1, true difference 0) it reports, side by side:

* the **distribution-free limit** ``(1 - m)^K <= alpha`` (``studies.sizing.analytic``): below
  it no method valid for every law of cluster differences can pass an all-ties sample;
* the methods **valid by theorem** (``betting_ci``, ``betting_ci_horizon``), with the status of
  their theorem records in the records directory; the best of them by power is marked;
* the **calibrated** ``clustered_score@alpha=L`` and the **model-based** ``dm_score@alpha=L`` and
  ``dm_likelihood_ratio@alpha=L`` (EMW's nearly optimal test): ``L`` is read from a current
  certificate at exactly this design found in the records directory (``methods.qualification``);
  without one the row says "not certified here" and the base method runs at the nominal level,
  labelled uncalibrated;
* ``cluster_t`` at the nominal level, **uncertified**.

Power of every row is simulated on the same tables (MC SE ``sqrt(p (1 - p) / R)``), drawn by the
sampler every study uses (``simlab.sampling.scenario_tables``: the kernels the rest of the demo
compiled already), and also
computed exactly where an engine applies (``studies.exact.fixed``: one trial per cluster).  False
pass: the certificate's certified worst case where one exists (its worst rate and its upper
bound), the theorem's ``<= alpha`` for the theorem rows, and for every row a simulated
false-pass rate at the worst corner the issue names: discordance = margin, the candidate never
wins a discordant pair (``p01 = 0``), rho = rho_max -- a measurement at one point, not a
certificate.  :func:`power_against_k` gives the power curves at M = 3 for the plot
(``studies.plots.power_k``).

A method whose one-off construction at a design (``methods.analysis_cost``: the least-favourable
mixture of ``dm_likelihood_ratio``, about a minute at 100 x 3 unless a store holds it) is
estimated over :data:`BUILD_SECONDS` is not run there: its row, or its point of a curve, says so
and why instead of a figure.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from methods.protocol import PASS
from simlab.sampling import scenario_tables
from simlab.scenario import FixedSize, PairedScenario

MARGIN = 0.03
ALPHA = 0.025
RHO_MAX = 0.1
BASELINE = 0.9
DISCORDANCE = 0.1
DIFFERENCE = 0.0
DESIGNS = ((30, 1, "the seed's design: 30 customers x 1 trial"), (100, 3, "100 customers x 3 trials"))
CURVE_CLUSTERS = (30, 60, 100, 150, 200, 300)
CURVE_TRIALS = 3
THEOREM_METHODS = ("betting_ci", "betting_ci_horizon")
CALIBRATED_METHODS = ("clustered_score", "dm_score", "dm_likelihood_ratio")
UNCERTIFIED_METHOD = "cluster_t"
EXACT_SECONDS = 2.0
BUILD_SECONDS = 30.0     # over it: a minute-long construction (dm_likelihood_ratio off its stored designs)


def too_costly(method, alpha: float, draws) -> str | None:
    """Why ``method`` at ``alpha`` is not run on ``draws`` (:class:`Draws`) in the demo (its
    estimated cost on one table: a one-off construction), or None."""
    from methods.analysis_cost import analysis_cost

    cost = analysis_cost(method.calibrated(alpha) if method.nominal_alpha is None else method, draws.first())
    if cost.seconds <= BUILD_SECONDS:
        return None
    return f"not run in the demo: {cost.driver} takes an estimated {cost.seconds:.0f} s"


def _point(clusters: int, trials: int):
    from methods.qualification import DesignPoint

    return DesignPoint(clusters=clusters, cluster_size=FixedSize(trials=trials), margin=MARGIN, rho_max=RHO_MAX,
                       confidence=1.0 - 2.0 * ALPHA)


def certified_calibration(base: str, clusters: int, trials: int, directory: str | Path | None = None,
                          cache: dict | None = None) -> dict:
    """The current certificate of a calibration of ``base`` at exactly this design in the
    records directory (the latest), or why there is none: ``{"certified": False, "note": ...}``.
    ``cache``: answers of earlier calls of one run (verifying a certificate is the costly part)."""
    from methods.qualification import records_dir

    key = (base, clusters, trials, str(records_dir(directory)))
    if cache is not None and key in cache:
        return dict(cache[key])
    answer = _find_calibration(base, clusters, trials, directory)
    if cache is not None:
        cache[key] = dict(answer)
    return answer


def _find_calibration(base: str, clusters: int, trials: int, directory) -> dict:
    from methods.qualification import (RecordError, certificate_covers, certificate_paths, load_certificate,
                                       records_dir)

    point, found, problems = _point(clusters, trials), [], []
    for path in certificate_paths(None, records_dir(directory)):
        if not path.name.startswith(f"{base}-alpha-"):
            continue
        design = json.loads(path.read_text()).get("design", {})
        if (design.get("clusters"), design.get("trials")) != (clusters, trials):
            continue
        try:
            cert = load_certificate(path)
        except RecordError as exc:  # stale or tampered: it certifies nothing, and says why
            problems.append(f"{path.name}: {exc}")
            continue
        if cert.method.name.startswith(f"{base}@alpha=") and certificate_covers(cert, point).covered:
            found.append((cert.created, path.name, cert))
    if not found:
        return {"certified": False, "note": "not certified here" + (f" ({'; '.join(problems)})" if problems else "")}
    _, name, cert = max(found)
    w = cert.worst_point
    return {"certified": True, "method": cert.method.name, "level": float(cert.method.name.split("@alpha=", 1)[1]),
            "certificate": name, "engine": cert.engine, "verdict": cert.verdict,
            "worst_rate": w.rate, "worst_upper": max(w.upper, cert.proven_upper or 0.0), "threshold": cert.threshold,
            "worst_point": {"baseline": w.baseline, "discordance": w.discordance, "rho": w.rho}, "resolve": cert.method}


def theorem_status(name: str, clusters: int, trials: int, directory: str | Path | None = None) -> dict:
    """Whether a current theorem record of ``name`` covers this design (and why not)."""
    from methods.qualification import RecordError, load_theorem_record, records_dir, theorem_covers, theorem_paths

    paths = theorem_paths(name, records_dir(directory))
    if not paths:
        return {"covered": False, "note": "no theorem record here"}
    try:
        cov = theorem_covers(load_theorem_record(paths[-1]), _point(clusters, trials))
    except RecordError as exc:
        return {"covered": False, "record": paths[-1].name, "note": f"theorem record not usable: {exc}"}
    return {"covered": bool(cov.covered), "record": paths[-1].name, "note": cov.reason}


def _alternative(clusters: int, trials: int) -> PairedScenario:
    return PairedScenario.from_rates(BASELINE, DIFFERENCE, DISCORDANCE, clusters=clusters,
                                     cluster_size=FixedSize(trials=trials), rho=RHO_MAX)


def worst_corner(clusters: int, trials: int) -> PairedScenario:
    """Discordance = margin, the candidate never wins a discordant pair (p10 = m, p01 = 0:
    difference -m, on the null boundary), rho = rho_max."""
    return PairedScenario.from_rates(BASELINE, -MARGIN, MARGIN, clusters=clusters,
                                     cluster_size=FixedSize(trials=trials), rho=RHO_MAX)


# a scenario's tables are decided in slices of at most this many: the demo with --reps 1,000,000
# held 3.2 GB of 100 x 3 tables at once and ran out of memory under a 4 GB limit
DRAW_SLICE = 50_000


class Draws:
    """Replications ``0 .. n-1`` of one scenario's tables (the study sampler), held whole when
    they fit one slice and drawn slice by slice otherwise: the same tables either way."""

    def __init__(self, scenario: PairedScenario, seed: int, n: int):
        self.scenario, self.seed, self.n = scenario, seed, n
        self._whole = scenario_tables(scenario, seed, 0, n) if n <= DRAW_SLICE else None

    def first(self) -> np.ndarray:
        return self._whole[:1] if self._whole is not None else scenario_tables(self.scenario, self.seed, 0, 1)

    def slices(self):
        if self._whole is not None:
            yield self._whole
            return
        for start in range(0, self.n, DRAW_SLICE):
            yield scenario_tables(self.scenario, self.seed, start, min(start + DRAW_SLICE, self.n))


def _rate(method, draws: Draws, alpha: float) -> dict:
    passes = sum(int(np.count_nonzero(method.batch(t, MARGIN, alpha).status == PASS)) for t in draws.slices())
    p = passes / draws.n
    return {"value": p, "mc_se": math.sqrt(p * (1.0 - p) / draws.n), "replications": int(draws.n)}


def _exact(method, scenario: PairedScenario, alpha: float) -> tuple[float | None, str]:
    """The exact pass probability where an engine applies within ``EXACT_SECONDS`` (one trial
    per cluster: the unit engine), else ``(None, why not)``."""
    from simlab.exact import ExactUnsupported
    from studies.exact.fixed import exact_engine, exact_measures

    engine, why = exact_engine(scenario, method, alpha)
    if engine is None:
        return None, why
    try:
        return float(exact_measures(scenario, method, MARGIN, alpha, engine, max_seconds=EXACT_SECONDS).pass_rate), engine
    except ExactUnsupported as exc:
        return None, str(exc)


def _simulated_and_exact(method, draws: Draws, scenario: PairedScenario, alpha: float) -> dict:
    rate = _rate(method, draws, alpha)
    rate["exact"], rate["exact_engine" if rate["exact"] is not None else "why_not_exact"] = _exact(method, scenario,
                                                                                                   alpha)
    return rate


def _candidates(clusters: int, trials: int, directory, cache: dict | None) -> list[dict]:
    """The rows of one design: method object, nominal level it runs at, and its guarantee."""
    from methods import registry

    rows = []
    for name in THEOREM_METHODS:
        st = theorem_status(name, clusters, trials, directory)
        rows.append({"method": name, "kind": "theorem", "level": ALPHA, "theorem_record": st,
                     "guarantee": "theorem" + ("" if st["covered"] else f" (declared; {st['note']})"),
                     "_m": registry.get(name)})
    for base in CALIBRATED_METHODS:
        cal = certified_calibration(base, clusters, trials, directory, cache)
        if cal["certified"]:
            m = cal.pop("resolve").resolve()
            rows.append({"method": cal["method"], "kind": "calibrated", "level": ALPHA, "calibration": cal,
                         "guarantee": f"model-certified ({cal['certificate']})", "_m": m})
        else:
            rows.append({"method": base, "kind": "uncalibrated", "level": ALPHA, "calibration": cal,
                         "guarantee": f"{cal['note']}: nominal level, uncalibrated", "_m": registry.get(base)})
    rows.append({"method": UNCERTIFIED_METHOD, "kind": "uncertified", "level": ALPHA,
                 "guarantee": "uncertified", "_m": registry.get(UNCERTIFIED_METHOD)})
    return rows


def compare_designs(replications: int = 20_000, seed: int = 20261202, directory: str | Path | None = None,
                    cache: dict | None = None) -> dict:
    """Both designs' rows (see the module docstring); every row's power and worst-corner
    false-pass on the same ``replications`` tables per design."""
    from studies.sizing.analytic import distribution_free_floor

    floor = distribution_free_floor(MARGIN, ALPHA)
    out = []
    for i, (K, M, label) in enumerate(DESIGNS):
        alt, corner = _alternative(K, M), worst_corner(K, M)
        power_tables = Draws(alt, seed + 2 * i, replications)
        null_tables = Draws(corner, seed + 2 * i + 1, replications)
        rows = []
        for r in _candidates(K, M, directory, cache):
            m = r.pop("_m")
            r["not_run"] = too_costly(m, r["level"], power_tables)
            r["power"] = None if r["not_run"] else _simulated_and_exact(m, power_tables, alt, r["level"])
            r["false_pass_worst_corner"] = (None if r["not_run"] else
                                            _simulated_and_exact(m, null_tables, corner, r["level"]))
            cal = r.get("calibration") or {}
            r["false_pass_certified"] = ({"worst_rate": cal["worst_rate"], "worst_upper": cal["worst_upper"],
                                          "engine": cal["engine"]} if cal.get("certified") else None)
            rows.append(r)
        theorem_rows = [r for r in rows if r["kind"] == "theorem"]
        best = max(theorem_rows, key=lambda r: r["power"]["value"])
        for r in theorem_rows:
            r["best_by_theorem"] = r is best
        out.append({"label": label, "clusters": K, "trials": M, "distribution_free_limit": floor,
                    "limit_reached": K >= floor, "rows": rows})
    return {"margin": MARGIN, "alpha": ALPHA, "rho_max": RHO_MAX,
            "alternative": {"baseline": BASELINE, "discordance": DISCORDANCE, "rho": RHO_MAX,
                            "difference": DIFFERENCE},
            "worst_corner": {"discordance": MARGIN, "p01": 0.0, "rho": RHO_MAX, "difference": -MARGIN},
            "distribution_free_limit": {"clusters": floor, "rule": "least K with (1 - margin)^K <= alpha"},
            "replications": replications, "seed": seed, "designs": out}


PILOT_TABLES = (100, 400)   # tables per design, method and scenario that price the designs' section


def designs_seconds(replications: int, seed: int = 20261202, directory: str | Path | None = None,
                    cache: dict | None = None) -> float:
    """Estimated seconds of :func:`compare_designs` on ``replications`` tables: each row's kernels
    timed on :data:`PILOT_TABLES` of each of its two scenarios after a one-table warm-up (the
    demo prices it once its kernels are loaded), fitted as a cost per call (a method's
    constants, built per batch) plus a cost per table, and scaled to the slices the section runs."""
    import time

    small, large = PILOT_TABLES
    total = 0.0
    for i, (K, M, _) in enumerate(DESIGNS):
        draws = [(_alternative(K, M), seed + 2 * i), (worst_corner(K, M), seed + 2 * i + 1)]
        for r in _candidates(K, M, directory, cache):
            m = r["_m"]
            if too_costly(m, r["level"], Draws(*draws[0], 1)):
                continue
            for sc, sd in draws:
                took = []
                for n in (1, small, large):
                    d = Draws(sc, sd, n)
                    t0 = time.perf_counter()
                    _rate(m, d, r["level"])
                    took.append(time.perf_counter() - t0)
                per_table = max(took[2] - took[1], 0.0) / (large - small)
                per_call = max(took[1] - small * per_table, 0.0)
                total += per_call * -(-replications // DRAW_SLICE) + per_table * replications
    return total


def power_against_k(replications: int = 3000, seed: int = 20261203, directory: str | Path | None = None,
                    cache: dict | None = None) -> dict:
    """Power at M = 3 for K in ``CURVE_CLUSTERS`` (the same tables for every method at each K).
    Series: the theorem methods, ``cluster_t`` (uncertified), the calibrated methods at their
    nominal level (labelled uncalibrated) and, at each K where a current certificate exists,
    at the certified level."""
    from methods import registry

    series: dict[str, dict] = {}

    def add(key, label, kind, K, rate):
        s = series.setdefault(key, {"label": label, "kind": kind, "clusters": [], "power": [], "mc_se": [],
                                    "methods": []})
        s["clusters"].append(K)
        s["power"].append(rate["value"])
        s["mc_se"].append(rate["mc_se"])
        return s

    fixed = {n: registry.get(n) for n in (*THEOREM_METHODS, UNCERTIFIED_METHOD, *CALIBRATED_METHODS)}
    not_run = []
    for K in CURVE_CLUSTERS:
        tables = Draws(_alternative(K, CURVE_TRIALS), seed + K, replications)
        for n in (*THEOREM_METHODS, UNCERTIFIED_METHOD):
            add(n, n + (" (theorem)" if n in THEOREM_METHODS else " (uncertified)"),
                "theorem" if n in THEOREM_METHODS else "uncertified", K, _rate(fixed[n], tables, ALPHA))
        def measure(key, label, kind, method):
            """Add the method's power at this K to its series, or name it as not run and why."""
            why = too_costly(method, ALPHA, tables)
            if why:
                not_run.append({"series": label, "clusters": K, "why": why})
                return None
            return add(key, label, kind, K, _rate(method, tables, ALPHA))

        for base in CALIBRATED_METHODS:
            measure(base, f"{base} nominal (uncalibrated)", "uncalibrated", fixed[base])
            cal = certified_calibration(base, K, CURVE_TRIALS, directory, cache)
            if cal["certified"]:
                s = measure(f"{base}@cal", f"{base}@alpha=L (calibrated, certificate)", "calibrated",
                            cal["resolve"].resolve())
                if s is not None:
                    s["methods"].append(cal["method"])
    return {"trials": CURVE_TRIALS, "clusters": list(CURVE_CLUSTERS), "replications": replications, "seed": seed,
            "margin": MARGIN, "alpha": ALPHA,
            "alternative": {"baseline": BASELINE, "discordance": DISCORDANCE, "rho": RHO_MAX, "difference": DIFFERENCE},
            "series": list(series.values()), "not_run": not_run}


__all__ = ["compare_designs", "designs_seconds", "power_against_k", "certified_calibration", "theorem_status", "too_costly", "worst_corner"]
