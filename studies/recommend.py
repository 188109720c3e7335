"""``simlab recommend``: which methods may decide at this design, on what guarantee, and how
well.

For a design ``(clusters K, trials per cluster M, margin m, rho_max)`` and an alternative
(true difference ``d``, baseline, discordance, rho -- by default ``rho_max``: power falls as
rho grows, so the conservative end):

1. **The distribution-free floor** (``studies.sizing.analytic.distribution_free_floor``): the
   fewest clusters at which any method valid for every law of cluster differences can pass.
2. **Coverage** of every registered fixed-sample method, by the qualification coverage rule
   (``methods.qualification.find_coverage``): a theorem record (valid at every design its
   assumptions hold for), a certificate at exactly this design, or an on-grid record; a stale
   or tampered one covers nothing and says why.
3. **Certificates on demand**: a method no file covers is certified at the design
   (``studies.qualify.certify``, written to ``certify_dir``) unless its grid record already
   shows it exceeding the level at the nearest grid cells of this design (then calibrating it
   is the way in); within ``max_seconds``, cheapest first.
4. **Calibrated methods**: for each base method in ``calibrate`` (by default the score tests
   that calibrate well and ``dm_likelihood_ratio``), a calibration already stored for this
   design is used; otherwise one is made (``studies.qualify.calibrate``) while the time budget
   allows -- never for ``STORED_ONLY`` methods, whose calibration takes minutes to hours.
5. **Power** at the alternative of every method that may decide (exact where an engine
   applies cheaply, else ``power_reps`` simulated experiments with their MC SE), and of the
   best methods that may not (for reference: what the gate gives up).
6. **Ranking** by power, with the false-pass worst case, the kind of guarantee (theorem,
   exact, model-certified) and its assumptions; for the ``top`` methods valid at every K
   (theorems and grid records), the K at which the target power is reached
   (``studies.sizing.size``, power only: ``simlab size`` also certifies that K).

Everything that takes time reports progress; work beyond the budget is listed as skipped,
never silently dropped.  The sizing searches are kept within the budget step by step
(``studies.sizing.size.StepBudget``: each power evaluation priced from those measured before
it and not started when it does not fit, each run in slices checked against the clock); a
search stopped that way is listed as skipped with the K bracket it had found.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

from methods.qualification import (CERT_SUFFIX, THEOREM_SUFFIX, DesignPoint, RecordError, certificate_covers,
                                   find_coverage, load_certificate, load_record, load_theorem_record, records_dir)
from simlab.scenario import FixedSize, PairedScenario

from studies.engine.frame import PowerFrame, exact_pass_rate

CALIBRATE = ("clustered_score", "dm_score", "dm_likelihood_ratio")   # base methods offered calibrated at the design
# offered only where a calibration is stored: its calibration takes about 25 min at 100 x 3 on 2
# cores, never within a recommendation's budget, and even estimating it builds its mixture
STORED_ONLY = ("dm_likelihood_ratio",)
REFERENCE_ROWS = 3                          # uncovered methods whose power is shown for reference
SIZE_INITIAL_REPS = 2000                    # the sizing search's first step; it escalates x4 up to size_reps
# What the work made on demand (certificates, calibrations, sizing) leaves of the budget for what
# follows it (the powers, the report, the process's exit) and for what preceded the budget's clock
# (the process's start-up): 10% of it, at most 5 s (at 100 x 3 the start-up took 0.8-1 s, the
# report and exit 1-2.6 s on 2 busy cores: with 3 s the default run took 60.5 s).
REPORT_RESERVE, REPORT_RESERVE_MAX = 0.10, 5.0


def _source_worst(coverage) -> dict[str, Any] | None:
    """The false-pass worst case the covering file states (None for a theorem: no rate is
    measured, the bound is alpha itself)."""
    src = coverage.record
    if not src:
        return None
    if src.endswith(THEOREM_SUFFIX):
        return {"kind": "theorem", "guarantee": "theorem", "record": Path(src).name,
                "assumptions": list(load_theorem_record(src).assumptions)}
    if src.endswith(CERT_SUFFIX):
        cert = load_certificate(src)
        w = cert.worst_point
        return {"kind": "certificate", "guarantee": cert.guarantee, "assumptions": cert.assumptions,
                "upper": w.upper, "rate": w.rate, "n_reps": w.n_reps, "baseline": w.baseline,
                "discordance": w.discordance, "rho": w.rho, "verdict": cert.verdict, "threshold": cert.threshold,
                "record": Path(src).name, "engine": cert.engine, "proven_upper": cert.proven_upper}
    rec = load_record(src)
    cmap = rec.cell_map()
    cells = [cmap[c] for c in coverage.cells if c in cmap]
    if not cells:
        return None
    worst = max(cells, key=lambda c: c.upper)
    sc = rec.scenarios
    i = worst.worst
    return {"kind": "grid record", "guarantee": "model-certified",
            "assumptions": "Dirichlet-multinomial clusters on the record's grid; a grid search",
            "upper": worst.upper, "rate": sc.n_pass[i] / sc.n_reps[i] if sc.n_reps[i] else math.nan,
            "n_reps": sc.n_reps[i], "baseline": sc.baseline[i], "discordance": sc.discordance[i], "rho": worst.rho,
            "verdict": worst.verdict, "threshold": rec.threshold, "record": Path(src).name}


# a power's pilot: replication 0 loads the kernel; then 4, 16, 64 ... replications are timed until
# one step takes PILOT_SECONDS or PILOT_REPS are done (a table of 5003 x 11 clusters takes 75 ms
# for betting_ci, so a fixed pilot of 80 tables took 6 s of a 5 s budget)
PILOT_REPS, PILOT_SECONDS = 80, 0.25


def _pilot(f: PowerFrame, clusters: int) -> tuple[int, float]:
    """Run ``f``'s first replications, timed: ``(replications done, seconds per replication)``."""
    f.evaluate([clusters], 1)
    done, per_rep = 1, 0.0
    while done < PILOT_REPS:
        step = min(4 * done, PILOT_REPS)
        t0 = time.perf_counter()
        f.evaluate([clusters], step)
        took = time.perf_counter() - t0
        per_rep, done = took / (step - done), step
        if took >= PILOT_SECONDS:
            break
    return done, per_rep


def _power(method, scenario: PairedScenario, margin: float, alpha: float, reps: int, seed: int,
           does_not_fit: Callable[[float, str], str | None] | None = None,
           room: Callable[[], float] | None = None) -> dict[str, Any]:
    """Exact where an engine applies, else simulated on ``reps`` tables.  With ``does_not_fit``
    or ``room`` the simulation is priced first from a timed pilot (the frame keeps the pilot's
    replications, so the figure is the same as without one).  ``does_not_fit``: ``{"not_run":
    why}`` is returned when the rest does not fit.  ``room``: the seconds it may take; the
    replications are cut to what fits (never below the pilot's), and the figure says how many it
    used (its Monte Carlo standard error grows accordingly)."""
    e = exact_pass_rate(method, scenario, margin, alpha)
    if e is not None:
        return {"value": e, "exact": True, "mc_se": 0.0, "n_reps": 0}
    f = PowerFrame(method, scenario, seed, margin, alpha)
    if (does_not_fit is not None or room is not None) and reps > PILOT_REPS:
        done, per_rep = _pilot(f, scenario.clusters)
        rest = per_rep * (reps - done)
        why = does_not_fit and does_not_fit(rest, f"its power on {reps:,} tables takes an estimated {rest:.0f} s more")
        if why:
            return {"not_run": why}
        if room is not None and rest > room():
            reps = done + max(0, int(room() / per_rep))
    f.evaluate([scenario.clusters], reps)
    p = f.power(scenario.clusters)
    return {"value": p, "exact": False, "mc_se": math.sqrt(p * (1 - p) / reps), "n_reps": reps}


def _exceeds_nearby(method, point: DesignPoint, directory: Path, calibrate_flags: str) -> str:
    """Why certifying ``method`` on demand is pointless ('' when it may qualify): its grid
    record exceeds the threshold at the grid K nearest this design, same trials per cluster
    and margin, at the largest grid rho not above rho_max (``calibrate_flags``: the design as
    ``simlab calibrate`` takes it)."""
    from methods.qualification import record_paths

    for p in record_paths(method.identity.name, directory):
        try:
            rec = load_record(p, check_current=False, check_dataset=False)
        except RecordError:
            continue
        dom = rec.policy.domain
        if point.cluster_size not in dom.cluster_sizes or point.margin not in dom.margin.grid:
            continue
        s, m = dom.cluster_sizes.index(point.cluster_size), point.margin
        rhos = [r for r in dom.rho.grid if r <= (point.rho_max or 0.0) + 1e-12]
        if not rhos:
            continue
        k = min(dom.clusters.grid, key=lambda g: abs(math.log(g / point.clusters)))
        c = rec.cell_map().get((k, s, max(rhos), m, 0))
        if c is not None and c.verdict == "exceeds":
            return (f"exceeds at the nearest grid cell (K={k}, rho={max(rhos):g}: false-pass upper bound "
                    f"{c.upper:.3g}); calibrate it for this design: simlab calibrate --method {method.name} "
                    f"{calibrate_flags}")
    return ""


def _same_size(path: Path, point: DesignPoint) -> bool:
    """Whether a certificate file names this design's K and M (read before it is verified,
    which is the costly part; the verified certificate is then checked in full)."""
    import json

    try:
        design = json.loads(path.read_text())["design"]
        return design["clusters"] == point.clusters and FixedSize(trials=design["trials"]) == point.cluster_size
    except (ValueError, KeyError, TypeError):  # unreadable here: let verification say why
        return True


def _calibrated_certificate(base: str, point: DesignPoint, directory: Path) -> Path | None:
    """A stored certificate of a calibration of ``base`` at exactly this design (the latest)."""
    from methods.qualification import certificate_covers, certificate_paths

    found = []
    for p in certificate_paths(None, directory):
        if not p.name.startswith(f"{base}-alpha-") or not _same_size(p, point):
            continue
        try:
            cert = load_certificate(p)
        except RecordError:
            continue
        if cert.method.name.startswith(f"{base}@alpha=") and certificate_covers(cert, point).covered:
            found.append((cert.created, p))
    return max(found)[1] if found else None


def recommend(*, clusters: int, trials: int, margin: float, rho_max: float, difference: float = 0.0,
              power: float = 0.8, alpha: float = 0.025, baseline: float = 0.9, discordance: float | None = None,
              rho: float | None = None, methods: list[str] | None = None, top: int = 3,
              directory: str | Path | None = None, certify_dir: str | Path | None = None, seed: int = 20261129,
              power_reps: int = 4000, size_reps: int = 8000, certify_missing: bool = True,
              calibrate: tuple[str, ...] | None = None, calibrate_missing: bool = True,
              max_seconds: float = 60.0, n_jobs: int = 1,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The recommendation payload (see the module docstring)."""
    import numpy as np

    from methods import registry
    from methods.analysis_cost import analysis_cost
    from studies.qualify.calibrate import calibrate as run_calibration
    from studies.qualify.calibrate import manifest_name
    from studies.qualify.certify import certify, write_certificate
    from studies.qualify.estimate import calibrate_estimate, certify_estimate
    from studies.sizing.analytic import distribution_free_floor
    from studies.engine.cost import TimeEstimate
    from studies.sizing.size import SizingStopped, StepBudget, size, size_estimate

    t0 = time.perf_counter()
    say = progress or (lambda s: None)
    if not isinstance(clusters, int) or clusters < 2:
        raise ValueError(f"clusters must be an integer >= 2, got {clusters!r}")
    if not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials per cluster must be a positive integer, got {trials!r}")
    if not 0.0 <= rho_max < 1.0:
        raise ValueError(f"rho_max must lie in [0, 1), got {rho_max!r}")
    rho = rho_max if rho is None else rho
    if not 0.0 <= rho <= rho_max:
        raise ValueError(f"rho must lie in [0, rho_max] = [0, {rho_max}], got {rho!r}")
    if difference <= -margin:
        raise ValueError(f"true difference {difference!r} must exceed -margin ({-margin}): power is only defined "
                         "under the alternative")
    if top < 0:
        raise ValueError(f"top must be >= 0, got {top!r}")
    directory = records_dir(directory)
    certify_dir = Path(certify_dir) if certify_dir is not None else directory
    if discordance is None:
        discordance = max(2.0 * abs(difference), margin, 0.1)
    alt = PairedScenario.from_rates(baseline, difference, discordance, clusters=clusters,
                                    cluster_size=FixedSize(trials=trials), rho=rho)
    # rho_max 0 registers independent trials: rho is known, as the evidence path's design point says
    point = DesignPoint(clusters=clusters, cluster_size=FixedSize(trials=trials), margin=margin, rho_max=rho_max,
                        rho=0.0 if rho_max == 0.0 else None, confidence=1.0 - 2.0 * alpha)
    floor = distribution_free_floor(margin, alpha)
    names = methods or registry.names("fixed")
    skipped: list[dict[str, str]] = []
    rows: list[dict[str, Any]] = []

    # the design as the commands a skipped step names take it, each runnable as printed (size searches K: no
    # --clusters; it sizes the alternative priced here, not its own defaults)
    flags = f"--clusters {clusters} --trials {trials} --margin {_arg(margin)} --rho-max {_arg(rho_max)}"
    calibrate_flags = f"{flags} --alpha {_arg(alpha)}"

    def left() -> float:
        return max_seconds - (time.perf_counter() - t0)

    reserve = min(REPORT_RESERVE * max_seconds, REPORT_RESERVE_MAX)
    # by default the score tests of CALIBRATE, or of them those a caller who names the methods named
    bases = calibrate if calibrate is not None else tuple(b for b in CALIBRATE if methods is None or b in methods)
    one = np.zeros((1, clusters, 4), np.int32)       # one experiment of this design: what a construction costs
    one[:, :, 0] = trials

    def over_budget() -> bool:
        return left() < 0.0

    def does_not_fit(seconds: float, described: str) -> str | None:
        """Why work whose cost is ``seconds`` is not started (None: it fits beside the reserve)."""
        room = left() - reserve
        return None if seconds <= room else \
            f"{described}, over the {max(room, 0.0):.0f} s left of the {max_seconds:g} s budget"

    def row_of(m, cov=None, made: str = "", refused: str = "") -> dict[str, Any]:
        fp = _source_worst(cov) if cov is not None and cov.covered else None
        covered = bool(cov is not None and cov.covered)
        return {"method": m.label, "base": m.name, "estimand": m.estimand.value, "covered": covered,
                "coverage": refused or cov.reason, "record": Path(cov.record).name if cov and cov.record else "",
                "guarantee": (fp or {}).get("guarantee", "model-certified") if covered else "not covered",
                "false_pass": fp, "power": None, "made": made}

    say(f"checking the qualification files of {len(names)} methods at this design (each is verified)")
    for i, name in enumerate(names, 1):
        m = registry.get(name)
        try:
            rows.append(row_of(m, find_coverage(m.identity.name, point, directory)))
        except RecordError as exc:  # stale or tampered: it covers nothing, and says why
            rows.append(row_of(m, refused=f"record not usable: {exc}"))
        say(f"{i}/{len(names)} {m.label}: {'covered' if rows[-1]['covered'] else 'not covered'}")
    # certificates on demand
    if certify_missing:
        for r in [r for r in rows if not r["covered"]]:
            m = registry.get(r["base"])
            why = _exceeds_nearby(m, point, directory, calibrate_flags)
            if why:
                r["coverage"] = why
                continue
            if m.cost is not None:   # costs that grow with the counts: not on demand
                skipped.append({"method": m.label, "what": "certificate", "why": "its analysis cost grows with the "
                                f"counts; certify it explicitly: simlab certify --method {m.label} {flags}"})
                continue
            earlier = _earlier_certificate(m, clusters, trials, margin, rho_max, alpha, certify_dir)
            if earlier is not None:   # made by an earlier run (any verdict): not made again
                path, cert = earlier
                cov = certificate_covers(cert, point)
                r.update(row_of(m, type(cov)(cov.covered, cov.reason, cov.cells, str(path)), made="certified earlier"))
                continue
            if over_budget():
                skipped.append({"method": m.label, "what": "certificate", "why": f"time budget {max_seconds:g} s spent"})
                continue
            est = certify_estimate(m, clusters, trials, margin, rho_max, alpha=alpha, seed=seed, workers=n_jobs)
            # a certificate cannot be stopped part-way: started only when its largest estimate fits
            why = does_not_fit(est.high, f"estimated {est.describe()}")
            if why:
                skipped.append({"method": m.label, "what": "certificate",
                                "why": f"{why}; certify it explicitly: simlab certify --method {m.label} {flags}"})
                continue
            say(f"{m.label}: no file covers K={clusters}, M={trials}; certifying it at this design "
                f"(estimated {est.describe()})")
            cert = certify(m, clusters, trials, margin, rho_max, alpha=alpha, seed=seed, n_jobs=n_jobs)
            path = write_certificate(cert, certify_dir)
            try:
                cov = find_coverage(m.identity.name, point, directory, certificates=[path] if certify_dir != directory
                                    else ())
            except RecordError as exc:  # a stale file of this method in the records directory: the fresh
                # certificate, of the current code, is the only statement about it
                cov = certificate_covers(load_certificate(path), point)
                cov = type(cov)(cov.covered, f"{cov.reason}; other files ignored: {exc}", cov.cells, str(path))
            r.update(row_of(m, cov, made="certified now"))
    # calibrated methods: the certified method objects by label (a label carries no options)
    calibrated: dict[str, Any] = {}
    for base in bases:
        if base not in registry.names("fixed"):
            raise ValueError(f"calibrate: {base!r} is not a registered fixed-sample method")
        # a calibration shipped in the records directory, else one made earlier in certify_dir
        stored = _calibrated_certificate(base, point, directory) or (
            _calibrated_certificate(base, point, certify_dir) if certify_dir != directory else None)
        if stored is None and (not calibrate_missing or over_budget() or base in STORED_ONLY):
            why = ("not asked for" if not calibrate_missing else
                   "calibrated only ahead of time (minutes to hours)" if base in STORED_ONLY else
                   f"time budget {max_seconds:g} s spent")
            skipped.append({"method": f"{base}@alpha=...", "what": "calibration",
                            "why": f"{why}; run: simlab calibrate --method {base} {calibrate_flags}"})
            continue
        made = ""
        if stored is None:
            est = calibrate_estimate(base, clusters, trials, margin, rho_max, alpha=alpha, seed=seed, workers=n_jobs)
            why = does_not_fit(est.high, f"estimated {est.describe()}")   # nor can a calibration
            if why:
                skipped.append({"method": f"{base}@alpha=...", "what": "calibration",
                                "why": f"{why}; run: simlab calibrate --method {base} {calibrate_flags}"})
                continue
            say(f"{base}: calibrating its nominal level at this design (estimated {est.describe()})")
            try:
                cal = run_calibration(base, clusters, trials, margin, rho_max, alpha=alpha, seed=seed, n_jobs=n_jobs,
                                      progress=say)
            except ValueError as exc:
                skipped.append({"method": f"{base}@alpha=...", "what": "calibration", "why": str(exc)})
                continue
            stored, made = write_certificate(cal.certificate, certify_dir), "calibrated now"
        cert = load_certificate(stored)
        m = cert.method.resolve()      # with the options it was calibrated with (dm_score: the table's rho_max)
        calibrated[m.label] = m
        cov = find_coverage(m.identity.name, point, directory,
                            certificates=[stored] if stored.resolve().parent != directory.resolve() else ())
        rows.append({**row_of(m, cov, made=made), "statistical_method": manifest_name(m)})
    # power
    covered = [r for r in rows if r["covered"]]
    for r in list(covered):
        if r["base"] in STORED_ONLY:   # its power needs its construction at this design: only if that fits
            need = analysis_cost(calibrated.get(r["method"]) or registry.get(_reference(r)), one).seconds
            why = does_not_fit(need, f"its construction at this design takes about {need:.0f} s")
            if why:
                skipped.append({"method": r["method"], "what": "power", "why": f"covered ({r['record']}), but "
                                f"{why}; its measured power is in the README's tables"})
                covered.remove(r)
                rows.remove(r)
                continue
        # a ranked method's power is always given: within the budget left, shared by the methods still to
        # price, on fewer tables when the full count does not fit (its standard error says so)
        share = (lambda n=len(covered) - covered.index(r): max(left() - reserve, 0.0) / n)
        r["power"] = _power(calibrated.get(r["method"]) or registry.get(_reference(r)), alt, margin, alpha,
                            power_reps, seed, room=share)
        pw = r["power"]
        cut = f" on {pw['n_reps']:,} tables (the budget; {power_reps:,} asked)" if 0 < pw["n_reps"] < power_reps else ""
        say(f"{r['method']}: {r['guarantee']}; power {pw['value']:.4f}{cut}")
    covered.sort(key=lambda r: (-r["power"]["value"], (r["false_pass"] or {}).get("upper", 0.0)))
    for rank, r in enumerate(covered, 1):
        r["rank"] = rank
    reference = []
    for r in [r for r in rows if not r["covered"]]:
        m = registry.get(r["base"])
        if m.cost is None and left() > reserve:   # not in the reserve kept for the report and exit (63 s of 60)
            power_or_not = _power(m, alt, margin, alpha, power_reps, seed, does_not_fit)
            if "not_run" in power_or_not:        # a slow kernel (trial_bootstrap at 300 x 3: 12.6 s) waits
                skipped.append({"method": r["method"], "what": "reference power", "why": power_or_not["not_run"]})
                continue
            r["power"] = power_or_not
            reference.append(r)
            say(f"{r['method']}: not covered; power {r['power']['value']:.4f} (for reference)")
    reference.sort(key=lambda r: -r["power"]["value"])
    # K for the target power where the guarantee holds at every K
    sized = 0
    for r in covered:
        if sized >= top:
            break
        if r["guarantee"] not in ("theorem",) and (r["false_pass"] or {}).get("kind") != "grid record":
            r["size"] = {"note": "covered at this design only (a certificate or calibration): sizing needs its own "
                                 "certificate at each K -- simlab size"}
            continue
        args = dict(margin=margin, difference=difference, power=power, alpha=alpha, trials=trials, baseline=baseline,
                    discordance=discordance, rho=rho, seed=seed)
        run = size_command(_reference(r), **args, rho_max=rho_max)   # the same search, without the budget
        if left() <= reserve:
            skipped.append({"method": r["method"], "what": "sizing", "command": run,
                            "why": f"time budget {max_seconds:g} s spent; run: {run}"})
            continue
        target = registry.get(_reference(r))
        # the estimate prices the first step only, and a later step can take many times it (betting_ci_horizon
        # at 100 x 3: estimated 0.3 s, steps of 1.6, 9, 3.6 and 29 s), so the search is started when its first
        # step fits and then kept within the budget step by step: each priced from the steps measured before
        # it and not started when it does not fit, each run in slices checked against the clock
        first = size_estimate(target, **args)
        need = first.low if first is not None else 0.0
        why = does_not_fit(need, f"its first step estimated {TimeEstimate(need, need, 1).describe()}")
        if why:
            skipped.append({"method": r["method"], "what": "sizing", "command": run, "why": f"{why}; run: {run}"})
            continue
        sized += 1
        try:
            s = size(target, **args, rho_max=rho_max, initial_reps=SIZE_INITIAL_REPS, max_reps=size_reps,
                     check_false_pass=False, progress=say, budget=StepBudget(left() - reserve, clock=time.perf_counter))
            r["size"] = {"clusters": s.clusters, "power_at_k": s.power_at_k["power"],
                         "power_bound": s.power_at_k["ci_lower"], "exact": s.power_at_k["exact"],
                         "binding": s.binding, "false_pass_checked": False}
        except SizingStopped as stop:
            found = _bracket_text(stop.bracket)
            say(f"{r['method']}: sizing stopped: {stop.why}" + (f"; {found}" if found else ""))
            skipped.append({"method": r["method"], "what": "sizing", "bracket": stop.bracket, "command": run,
                            "why": f"stopped within the {max_seconds:g} s budget: {stop.why}"
                                   f"{f'; so far {found}' if found else ''}; run: {run}"})
        except ValueError as exc:
            r["size"] = {"refused": str(exc)}
    return {"design": {"clusters": clusters, "trials_per_cluster": trials, "margin": margin, "rho_max": rho_max,
                       "alpha": alpha},
            "alternative": {"difference": difference, "baseline": baseline, "discordance": discordance, "rho": rho,
                            "target_power": power},
            "distribution_free_floor": {"clusters": floor, "reached": clusters >= floor,
                                        "rule": "(1 - margin)^K <= alpha: below it no method valid for every law of "
                                                "cluster differences can pass an all-ties sample"},
            "ranked": covered, "reference": reference[:REFERENCE_ROWS],
            "not_covered": [r for r in rows if not r["covered"]], "skipped": skipped, "top": top,
            "directory": str(directory), "certify_dir": str(certify_dir), "max_seconds": max_seconds,
            "power_reps": power_reps, "seconds": time.perf_counter() - t0}


def _earlier_certificate(method, clusters: int, trials: int, margin: float, rho_max: float, alpha: float,
                         directory: Path):
    """(path, certificate) of a certificate of ``method``'s current code at exactly this design (the defaults of an
    on-demand certificate) that an earlier run wrote to ``directory``, whatever its verdict."""
    from methods.qualification import CertifiedDesign, certificate_paths, same_digest

    default = CertifiedDesign(clusters=clusters, trials=trials, margin=margin, rho_max=rho_max, looks=None)
    for path in reversed(certificate_paths(method.identity.name, directory)):
        try:
            cert = load_certificate(path)
        except RecordError:   # stale or tampered: not this code's statement
            continue
        if cert.design == default and cert.alpha == alpha and same_digest(cert.method.source_sha256,
                                                                          method.identity.source_sha256):
            return path, cert
    return None


def _bracket_text(b: dict[str, Any]) -> str:
    """A stopped sizing search's findings (``studies.sizing.size``: ``_Search.bracket``) in words."""
    parts = []
    if "answer" in b:
        parts.append(f"K={b['answer']} reaches the target power (bound {b['power_bound']:.4f} at {b['n_reps']:,} "
                     "replications, its stretch verified: an answer, not yet refined -- it may be smaller)")
    elif "reaches" in b:
        parts.append(f"the power bound reaches the target from K={b['reaches']} on the K evaluated ({b['n_reps']:,} "
                     "replications, not verified)")
    if "below" in b:
        parts.append(f"power is below the target at K={b['below']} (its interval's upper end below it)")
    return "; ".join(parts)


def _arg(x: float | int) -> str:
    """A number as a command-line value that reads back as the same number (``:g`` kept six digits:
    a calibrated alpha or a sizing's baseline would have been rounded)."""
    return str(x) if isinstance(x, int) else repr(float(x))


def size_command(method: str, *, margin: float, difference: float, power: float, alpha: float, trials: int,
                 baseline: float, discordance: float, rho: float, rho_max: float, seed: int) -> str:
    """The ``simlab size`` command line that sizes ``method`` for the alternative a recommendation priced (its
    difference, baseline, discordance, rho, alpha, target power and seed; the false-pass certificate up to
    ``rho_max``): runnable as printed -- ``--true-difference`` is required there, and size's own defaults
    (rho 0, trials per cluster 1) are not this design."""
    import shlex

    return (f"simlab size --method {shlex.quote(method)} --margin {_arg(margin)} --true-difference {_arg(difference)} "
            f"--power {_arg(power)} --alpha {_arg(alpha)} --trials-per-cluster {trials} --baseline {_arg(baseline)} "
            f"--discordance {_arg(discordance)} --rho {_arg(rho)} --rho-max {_arg(rho_max)} --seed {seed}")


def _reference(row: dict) -> str:
    """The registry name that finds a row's method (a calibrated one by its label)."""
    return row["method"] if "@alpha=" in row["method"] else row["base"]


__all__ = ["CALIBRATE", "recommend", "size_command"]
