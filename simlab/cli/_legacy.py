"""``simlab`` -- the one front door.  Parse, call a layer, print or serialise; nothing else.

Every command that prints figures accepts ``--json`` and then writes exactly one JSON
object to stdout.  This is the only module allowed to import upward (methods, studies,
evidence).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, Callable

import numpy as np

# Each layer's block below appends a ``register(sub, bench_sub)`` function here; the parser
# calls them in order.  Keep commands thin: parse, call the layer, emit.
_REGISTRARS: list[Callable] = []

# ---------------------------------------------------------------- output helpers


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return x if math.isfinite(x) else None
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def emit(args: argparse.Namespace, payload: dict, render: Callable[[dict], None]) -> None:
    """Print ``payload`` as one JSON object (``--json``) or through ``render``."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(_jsonable(payload), allow_nan=False) + "\n")
    else:
        render(payload)


def print_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="right" if c not in ("method", "name", "field") else "left")
    for row in rows:
        table.add_row(*[_fmt(v) for v in row])
    console = Console()
    if not console.is_terminal:  # piped or captured: never truncate figures to 80 columns
        console = Console(width=240)
    console.print(table)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if not math.isfinite(v) else (f"{v:.6g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.3e}")
    return str(v)


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


# ---------------------------------------------------------------- scenario arguments


def add_scenario_args(p: argparse.ArgumentParser, clusters: int = 30, trials: int = 3, rho: float = 0.1,
                      cells: str = "0.90,0.04,0.03,0.03") -> None:
    g = p.add_argument_group("scenario")
    g.add_argument("--cells", default=cells, help="p11,p10,p01,p00 of a trial pair (default %(default)s)")
    g.add_argument("--baseline", type=float, help="baseline pass rate (with --difference and --discordance)")
    g.add_argument("--difference", type=float, help="true difference candidate - baseline")
    g.add_argument("--discordance", type=float, help="P(outcomes differ) = p10 + p01")
    g.add_argument("--clusters", type=int, default=clusters, help="independent clusters K (default %(default)s)")
    g.add_argument("--trials", type=int, default=trials, help="trials per cluster M (default %(default)s)")
    g.add_argument("--rho", type=float, default=rho, help="intra-cluster correlation (default %(default)s)")


def scenario_from_args(args: argparse.Namespace):
    from simlab.scenario import FixedSize, PairedScenario

    common = dict(clusters=args.clusters, cluster_size=FixedSize(trials=args.trials), rho=args.rho)
    rates = (args.baseline, args.difference, args.discordance)
    if any(v is not None for v in rates):
        if any(v is None for v in rates):
            raise SystemExit("error: --baseline, --difference and --discordance go together")
        return PairedScenario.from_rates(*rates, **common)
    try:
        cells = tuple(float(x) for x in args.cells.split(","))
    except ValueError:
        raise SystemExit(f"error: --cells must be four comma-separated numbers, got {args.cells!r}")
    return PairedScenario(cells=cells, **common)


# ---------------------------------------------------------------- simlab (simulator) commands


def cmd_simulate(args: argparse.Namespace) -> None:
    from simlab.generate import simulate_tables
    from simlab.summary import summarize

    scenario = scenario_from_args(args)
    tables = simulate_tables(scenario, args.seed, args.reps)
    payload = {"scenario": scenario.model_dump(mode="json"), "scenario_key": scenario.key, "seed": args.seed,
               **summarize(scenario, tables)}

    def render(p: dict) -> None:
        print(f"scenario {p['scenario_key'][:12]}  seed {p['seed']}  {p['replications']} replications "
              f"x {p['clusters']} clusters ({p['trial_pairs']} trial pairs)")
        rows = [[c, p["cell_rates"][c], p["expected_cell_rates"][c]] for c in p["cell_rates"]]
        print_table("cell rates of recorded pairs", ["field", "simulated", "expected"], rows)
        rows = [[k, p[k]] for k in ("mean_trial_weighted_difference", "observed_difference_trial",
                                     "true_difference_trial", "true_difference_cluster",
                                     "baseline_icc_anova", "rho", "mean_trials_per_cluster", "empty_cluster_rate")]
        print_table("estimands and dependence", ["field", "value"], rows)

    emit(args, payload, render)


def cmd_bench_simulate(args: argparse.Namespace) -> None:
    from simlab.benchmarks import bench_simulate

    payload = bench_simulate(reps=args.reps, numpy_reps=args.numpy_reps, memory_reps=args.memory_reps,
                             progress=not args.json)

    def render(p: dict) -> None:
        rows = [[r["name"], r["replications"], r["seconds"], r["replications_per_s"], r["draws_per_s"]]
                for r in p["rows"]]
        print_table(f"simulate: K={p['clusters']} M={p['trials']} rho={p['rho']} cells={p['cells']}",
                    ["name", "replications", "seconds", "reps/s", "draws/s"], rows)
        print(f"speed-up over numpy reference (1 thread each): {p['ratio_vs_numpy']:.2f}x")
        if p.get("memory"):
            m = p["memory"]
            print(f"peak RSS while streaming {m['replications']:,} replications: {m['peak_rss_mb']:.0f} MB "
                  f"(before: {m['rss_before_mb']:.0f} MB)")

    emit(args, payload, render)


# ---------------------------------------------------------------- methods commands


def _parse_table(text: str, index: int) -> list[int]:
    parts = text.split(",")
    try:
        row = [int(p) for p in parts]
    except ValueError:
        row = []
    if len(row) != 4 or any(v < 0 for v in row):
        raise ValueError(f"--table #{index + 1} ({text!r}) must be four non-negative integers "
                         "n11,n10,n01,n00 (both pass, baseline only, candidate only, both fail)")
    return row


def _parse_options(items: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            raise ValueError(f"--option {item!r} must be key=number")
    return out


def cmd_interval(args: argparse.Namespace) -> None:
    from methods.registry import get

    method = get(args.method)
    if method.kind != "fixed":
        raise ValueError(f"method {args.method!r} is {method.kind}; simlab interval runs fixed-sample methods")
    if not args.table:
        raise ValueError("give at least one --table n11,n10,n01,n00 (one per cluster)")
    table = np.array([_parse_table(t, i) for i, t in enumerate(args.table)])
    options = _parse_options(args.option)
    if options:
        method = method.with_options(**options)
    result = method.analyze(table, args.margin, args.alpha)
    payload = {**result.as_dict(), "options": dict(method.options), "version": method.version,
               "source_sha256": method.identity.source_sha256, "citation": method.citation}

    def render(p: dict) -> None:
        lo = "nan" if p["lower"] is None else f"{p['lower']:.6f}"
        hi = "nan" if p["upper"] is None else f"{p['upper']:.6f}"
        est = "nan" if p["estimate"] is None else f"{p['estimate']:.6f}"
        print(f"{p['method']} v{p['version']} ({p['estimand']}), {p['clusters']} clusters, {p['trials']} trials")
        print(f"estimate {est}   {100 * (1 - 2 * p['alpha']):g}% interval [{lo}, {hi}] (one-sided alpha {p['alpha']:g})")
        print(f"decision: {p['status']}  (pass iff lower >= -{p['margin']:g})")

    emit(args, payload, render)


def cmd_methods(args: argparse.Namespace) -> None:
    from methods.registry import get, names

    rows = []
    for name in names():
        m = get(name)
        rows.append({"name": name, "kind": m.kind, "estimand": m.estimand.value, "version": m.version,
                     "options": dict(m.options), "citation": m.citation})

    def render(p: dict) -> None:
        width = max((len(r["name"]) for r in p["methods"]), default=4)
        print(f"{'name':<{width}}  {'kind':<10}  {'estimand':<16}  version")
        for r in p["methods"]:
            print(f"{r['name']:<{width}}  {r['kind']:<10}  {r['estimand']:<16}  {r['version']}")
            print(f"{'':<{width}}  {r['citation']}")

    emit(args, {"methods": rows}, render)


def cmd_bench_methods(args: argparse.Namespace) -> None:
    from methods.bench import bench_methods

    names = [n.strip() for n in args.methods.split(",") if n.strip()] if args.methods else None
    progress = None if args.json else (lambda name: print(f"benchmarking {name} ...", file=sys.stderr))
    payload = bench_methods(reps=args.reps, bootstrap_reps=args.bootstrap_reps,
                            reference_reps=args.reference_reps, names=names, seed=args.seed,
                            max_seconds=args.max_seconds, reference_seconds=args.reference_seconds,
                            progress=progress)

    def render(p: dict) -> None:
        print(f"simlab bench methods: K={p['clusters']} clusters x {p['trials']} trials, rho={p['rho']}, "
              f"cells={p['cells']}, margin={p['margin']}, {p['numba_threads']} numba thread")
        head = (f"{'method':<18} {'class':<11} {'replications':>14} {'decisions/s':>12} {'target/core':>15} "
                f"{'reference/s':>12} {'ref reps':>8} {'speed-up':>9}  check vs reference")
        print(head)
        for r in p["rows"]:
            if "error" in r:
                print(f"{r['method']:<18} {r['class']:<11} {r['error']}")
                continue
            reps = f"{r['replications']:,}" + ("*" if r["replications_note"] else "")
            target = r["target_decisions_per_s"]
            tgt = "-" if target is None else f"{target:.0e} {'met' if r['meets_target'] else 'MISSED'}"
            if "reference_decisions_per_s" in r:
                dl = r["max_abs_lower_difference"]
                ref = (f"{r['reference_decisions_per_s']:>12.4g} {r['reference_replications']:>8} "
                       f"{r['speedup_vs_reference']:>8.0f}x  max|dL|={'-' if dl is None else f'{dl:.1e}'}, "
                       f"status differs {r['status_mismatches']}x")
            else:
                ref = f"{'-':>12} {'-':>8} {'-':>9}  reference: {r['reference']}"
            print(f"{r['method']:<18} {r['class']:<11} {reps:>14} {r['decisions_per_s']:>12.4g} {tgt:>15} {ref}")
        print(f"timing: {p['timing']}.")
        for r in p["rows"]:
            if r.get("replications_note"):
                print(f"* {r['method']}: {r['replications_note']}")

    emit(args, payload, render)


def _register_methods(sub, bench_sub) -> None:
    p = sub.add_parser("interval", help="one experiment's non-inferiority interval and decision")
    p.add_argument("--method", required=True, help="registered method name (see `simlab methods`)")
    p.add_argument("--table", action="append", default=[], metavar="n11,n10,n01,n00",
                   help="one cluster's paired counts; repeat once per cluster")
    p.add_argument("--alpha", type=float, default=0.025,
                   help="one-sided level of the non-inferiority test; the interval is 1 - 2 alpha (default %(default)s)")
    p.add_argument("--margin", type=float, default=0.03, help="non-inferiority margin m > 0 (default %(default)s)")
    p.add_argument("--option", action="append", default=[], metavar="key=value",
                   help="method option, e.g. min_clusters=2 (repeatable)")
    _add_json(p)
    p.set_defaults(func=cmd_interval)

    p = sub.add_parser("methods", help="list registered methods")
    _add_json(p)
    p.set_defaults(func=cmd_methods)

    p = bench_sub.add_parser("methods", help="decisions/s of every fixed method vs its slow reference")
    p.add_argument("--reps", type=int, default=1_000_000, help="replications per method (default %(default)s)")
    p.add_argument("--bootstrap-reps", type=int, default=20_000,
                   help="replications for bootstrap methods (default %(default)s)")
    p.add_argument("--reference-reps", type=int, default=2_000,
                   help="replications for the per-replication reference (default %(default)s)")
    p.add_argument("--max-seconds", type=float, default=60.0,
                   help="reduce a method's replications when a pilot predicts more kernel time (default %(default)s)")
    p.add_argument("--reference-seconds", type=float, default=10.0,
                   help="time budget of each reference run (default %(default)s)")
    p.add_argument("--methods", default="", help="comma-separated subset (default: every fixed method)")
    p.add_argument("--seed", type=int, default=1)
    _add_json(p)
    p.set_defaults(func=cmd_bench_methods)


_REGISTRARS.append(_register_methods)

# ---------------------------------------------------------------- studies commands


def _study_rows_table(rows: list[dict], title: str, grid: list[str]) -> None:
    if not rows:
        print("(no rows)")
        return
    has_exact = "exact_pass_rate" in rows[0]

    def pm(r, k):
        v, s = r.get(k), r.get(f"{k}_mcse")
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "-"
        return f"{v:.4f}" if s is None or not math.isfinite(s) else f"{v:.4f}±{s:.4f}"

    cols = grid + ["method", "estimand", "true", "reps", "pass rate"] + (["exact"] if has_exact else []) + \
        ["inconcl.", "coverage", "bias", "emp SE", "width"]
    table = []
    for r in rows:
        line = [r[g] for g in grid] + [r["method"], r["estimand"][:7], f"{r['true_value']:.4f}", r["n_reps"],
                                       pm(r, "pass_rate")]
        if has_exact:
            v = r.get("exact_pass_rate")
            line.append("-" if v is None or not math.isfinite(v) else f"{v:.4f}")
        line += [pm(r, "inconclusive_rate"), pm(r, "coverage"), pm(r, "bias"), pm(r, "empirical_se"),
                 pm(r, "mean_width")]
        table.append(line)
    print_table(title, cols, table)


def cmd_study_run(args: argparse.Namespace) -> None:
    from pathlib import Path

    from studies.results import save_dataset, summary_rows
    from studies.runner import run_study
    from studies.spec import load_spec

    spec = load_spec(args.spec)
    ds = run_study(spec, n_jobs=args.n_jobs, chunk_size=args.chunk_size,
                   work_dir=None if args.no_checkpoint else args.work_dir, resume=not args.restart,
                   progress=False if args.json else None, exact=True if args.exact else None)
    out = Path(args.out) if args.out else Path("results") / f"{spec.name}-{spec.hash[:12]}.nc"
    save_dataset(ds, out)
    payload = {"dataset": str(out), "spec_hash": spec.hash, "replications": spec.n_replications,
               "scenarios": int(np.prod(spec.shape)) if spec.shape else 1, "methods": list(spec.method_keys),
               "seconds": ds.attrs["run_seconds"], "tasks": ds.attrs["run_tasks"],
               "tasks_resumed": ds.attrs["run_tasks_resumed"], "dims": list(spec.dims), "rows": summary_rows(ds)}

    def render(p: dict) -> None:
        _study_rows_table(p["rows"], f"study {spec.name} ({p['replications']:,} replications per scenario)",
                          p["dims"])
        print(f"wrote {p['dataset']}  ({p['tasks']} tasks, {p['tasks_resumed']} resumed, {p['seconds']:.1f} s)")

    emit(args, payload, render)


def cmd_study_show(args: argparse.Namespace) -> None:
    from studies.results import grid_dims, open_dataset, summary_rows

    ds = open_dataset(args.file)
    rows = summary_rows(ds, args.margin, args.alpha)
    payload = {"dataset": args.file, "spec_hash": ds.attrs.get("spec_hash"), "spec_name": ds.attrs.get("spec_name"),
               "code_revision": ds.attrs.get("code_revision"), "seed": ds.attrs.get("seed"),
               "dims": grid_dims(ds), "rows": rows}

    def render(p: dict) -> None:
        _study_rows_table(p["rows"], f"{p['spec_name']}  spec {str(p['spec_hash'])[:12]}  seed {p['seed']}  "
                                     f"rev {str(p['code_revision'])[:12]}", p["dims"])

    emit(args, payload, render)


def cmd_study_plot(args: argparse.Namespace) -> None:
    from pathlib import Path

    from studies.plot import plot_dataset
    from studies.results import open_dataset

    ds = open_dataset(args.file)
    out = Path(args.out) if args.out else Path(args.file).with_suffix(".png")
    plot_dataset(ds, out, args.margin, args.alpha)
    emit(args, {"plot": str(out)}, lambda p: print(f"wrote {p['plot']}"))


def cmd_false_pass(args: argparse.Namespace) -> None:
    from studies.single import false_pass
    from studies.spec import MethodRef

    scenario = scenario_from_args(args)
    ref = MethodRef(name=args.method, options=_parse_options(args.option))
    payload = false_pass(scenario, ref, args.margin, args.alpha, args.reps, args.seed,
                         exact="never" if args.simulate else "auto", max_exact_seconds=args.exact_seconds)

    def render(p: dict) -> None:
        what = "false-pass rate" if p["is_null"] else "pass rate (power: the scenario is not a null)"
        how = (f"exact ({p['engine']} engine, {p['states']:,} states)" if p["exact"]
               else f"simulated, {p['replications']:,} replications, MC SE {p['mc_se']:.2g}, "
                    f"95% CP [{p['cp_lower']:.5f}, {p['cp_upper']:.5f}]")
        print(f"{p['method']} ({p['estimand']}; true value {p['true_value']:.5g}, margin {p['margin']:g}, "
              f"alpha {p['alpha']:g})")
        print(f"{what}: {p['value']:.5f}   {how}")
        if not p["exact"]:
            print(f"not exact: {p['why_not_exact']}")

    emit(args, payload, render)


def cmd_demo(args: argparse.Namespace) -> None:
    from studies.demo import run_demo

    payload = run_demo(out_dir=args.out, replications=args.reps, seed=args.seed)

    def render(p: dict) -> None:
        h = p["headline"]
        print("1. The seed's headline: " + h["scenario"])
        print(f"   clustered_normal false-pass: exact {h['exact']:.5f} ({h['exact_engine']} engine)   "
              f"0.96^30 = {h['formula']:.5f}   simulated {h['simulated']:.5f} ± {h['mc_se']:.5f} "
              f"({h['replications']:,} replications, z = {h['z']:+.2f})")
        u = p["unequal"]
        print(f"\n2. Unequal clusters: {u['scenario']}: trial-weighted difference "
              f"{u['true_difference_trial']:+.3f}, cluster-weighted {u['true_difference_cluster']:+.3f}")
        print_table("estimate vs the estimand each method targets",
                    ["method", "estimand", "target", "estimate", "lower", "upper", "decision"],
                    [[r["method"], r["estimand"], r["target"], r["estimate"], r["lower"], r["upper"], r["status"]]
                     for r in u["rows"]])
        c = p["comparison"]
        print(f"\n3. Method library at the seed's design point: {c['design']}; nominal one-sided level "
              f"{c['alpha']:g}")

        def f(d):
            if d["value"] is None or not math.isfinite(d["value"]):
                return "-"
            return f"{d['value']:.4f}" + ("" if d.get("exact") is True else f"±{d['mc_se']:.4f}")

        rows = []
        for r in c["rows"]:
            sfp = r["seed_false_pass"]
            ex = r["false_pass_boundary"].get("exact")
            rows.append([r["method"], r["estimand"][:7], r["replications"],
                         f(sfp) + (" (exact)" if sfp["exact"] else ""),
                         f(r["false_pass_boundary"]), "-" if ex is None or not math.isfinite(ex) else f"{ex:.4f}",
                         f(r["false_pass_-0.04"]), f(r["power_0"]), f(r["coverage_boundary"]),
                         r["mean_width_boundary"]])
        print_table("pass rates (±MC SE); seed scenario = 30 customers x 1 trial, loss 0.04",
                    ["method", "estimand", "reps", "seed false pass", "FP at Δ=-0.03", "exact",
                     "FP at Δ=-0.04", "power at Δ=0", "coverage Δ=-0.03", "width"], rows)
        print(f"\nwrote {p['files']['dataset']} and {p['files']['plot']}  ({p['seconds']:.1f} s)")

    emit(args, payload, render)


def cmd_bench_study(args: argparse.Namespace) -> None:
    from studies.bench import bench_study

    payload = bench_study(reps=args.reps, numpy_reps=args.numpy_reps, limit_kernel=args.limit_kernel,
                          n_jobs=args.n_jobs, seed=args.seed, repeat=args.repeat)

    def render(p: dict) -> None:
        w = p["workload"]
        print(f"bench study: K={w['clusters']} x M={w['trials']}, baseline {w['baseline']}, candidate "
              f"{w['candidate']}, rho 0, {w['method']}, margin {w['margin']}  (sampler: {p['sampler']}, "
              f"runner path: {p['path']}; exact pass rate {p['exact_pass_rate']:.6f})")
        print(f"moment path and table path give identical datasets: {p['same_results_both_paths']}")
        print_table(f"replications per second ({p['timing']})",
                    ["name", "threads", "replications", "seconds", "reps/s", "pass rate"],
                    [[r["name"], r["threads"], r["replications"], r["seconds"], r["replications_per_s"],
                      r["pass_rate"]] for r in p["rows"]])
        for k, v in p["ratios"].items():
            t = p["targets"].get(k)
            print(f"{k:30s} {v:8.2f}x" + (f"   (target >= {t:g}: {'met' if v >= t else 'NOT met'})" if t else ""))

    emit(args, payload, render)


def _register_studies(sub, bench_sub) -> None:
    p = sub.add_parser("study", help="operating-characteristics studies (spec -> dataset)")
    ssub = p.add_subparsers(dest="study_command", required=True)
    q = ssub.add_parser("run", help="run a study spec (.toml / .json) and save its dataset")
    q.add_argument("spec", help="study spec file")
    q.add_argument("--out", help="netCDF output (default results/NAME-HASH.nc)")
    q.add_argument("--n-jobs", type=int, default=1, help="joblib workers, -1 = all cores (default %(default)s)")
    q.add_argument("--chunk-size", type=int, help="replications per task (default: the spec's)")
    q.add_argument("--work-dir", default="results/.runs", help="finished chunks of running studies (%(default)s)")
    q.add_argument("--no-checkpoint", action="store_true", help="keep no chunks on disk")
    q.add_argument("--restart", action="store_true", help="ignore chunks of an interrupted earlier run")
    q.add_argument("--exact", action="store_true", help="add exact results where an engine applies")
    _add_json(q)
    q.set_defaults(func=cmd_study_run)
    q = ssub.add_parser("show", help="print a study dataset as a table")
    q.add_argument("file")
    q.add_argument("--margin", type=float)
    q.add_argument("--alpha", type=float, help="one-sided level (default: the dataset's first)")
    _add_json(q)
    q.set_defaults(func=cmd_study_show)
    q = ssub.add_parser("plot", help="pass rate vs true difference per method, to PNG")
    q.add_argument("file")
    q.add_argument("--out", help="PNG path (default: the dataset path with .png)")
    q.add_argument("--margin", type=float)
    q.add_argument("--alpha", type=float, help="one-sided level (default: the dataset's first)")
    _add_json(q)
    q.set_defaults(func=cmd_study_plot)

    p = sub.add_parser("false-pass", help="pass probability of one method on one scenario (exact when possible)")
    p.add_argument("--method", required=True, help="registered fixed-sample method")
    p.add_argument("--option", action="append", default=[], metavar="key=value", help="method option (repeatable)")
    add_scenario_args(p, clusters=30, trials=1, rho=0.0, cells="0.96,0.04,0,0")
    p.add_argument("--margin", type=float, default=0.03)
    p.add_argument("--alpha", type=float, default=0.025, help="one-sided level (default %(default)s)")
    p.add_argument("--reps", type=int, default=200_000, help="replications when simulating (default %(default)s)")
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument("--simulate", action="store_true", help="simulate even when an exact engine applies")
    p.add_argument("--exact-seconds", type=float, default=60.0,
                   help="simulate instead when the exact evaluation would take longer (default %(default)s)")
    _add_json(p)
    p.set_defaults(func=cmd_false_pass)

    p = sub.add_parser("demo", help="the seed's findings, exactly and by simulation; the method library compared")
    p.add_argument("--out", default="results/demo", help="folder for the dataset and plot (default %(default)s)")
    p.add_argument("--reps", type=int, default=20_000, help="replications per scenario (default %(default)s)")
    p.add_argument("--seed", type=int, default=20261129)
    _add_json(p)
    p.set_defaults(func=cmd_demo)

    p = bench_sub.add_parser("study", help="study runner vs numpy and the fused limit kernel")
    p.add_argument("--reps", type=int, default=32_000_000,
                   help="replications of the runner and fused-kernel rows (default %(default)s)")
    p.add_argument("--numpy-reps", type=int, default=400_000,
                   help="replications of the numpy row (default %(default)s)")
    p.add_argument("--limit-kernel", help="path of limit_bench.py (its cpu_ser / cpu_par are timed too)")
    p.add_argument("--n-jobs", type=int, help="cores for the all-cores run (default: all available)")
    p.add_argument("--repeat", type=int, default=3, help="time each row this often, keep the fastest (%(default)s)")
    p.add_argument("--seed", type=int, default=1)
    _add_json(p)
    p.set_defaults(func=cmd_bench_study)


_REGISTRARS.append(_register_studies)

# ---------------------------------------------------------------- sequential commands


def _seq_methods(text: str, inner: str | None = None, alternative: float | None = None) -> list:
    from studies.sequential import SequentialMethodRef

    refs = []
    for name in [n.strip() for n in text.split(",") if n.strip()]:
        opts = {"alternative": alternative} if (name == "likelihood_ratio" and alternative is not None) else {}
        wraps = inner if name in ("fixed_final", "repeated_fixed", "bonferroni") else None
        refs.append(SequentialMethodRef(name=name, options=opts, inner=wraps))
    if not refs:
        raise ValueError("--methods lists no method")
    return refs


def _seq_schedule(args: argparse.Namespace):
    from methods.sequential.base import LookSchedule

    return LookSchedule.parse(args.looks, unit=args.unit)


def _print_looks(label: str, values: list) -> None:
    print(f"  {label:<24}" + " ".join(f"{v:8.5f}" if v is not None else "     nan" for v in values))


def cmd_sequential_exact(args: argparse.Namespace) -> None:
    import time

    from studies import sequential_exact as se

    t0 = time.perf_counter()
    if args.loss is None:
        payload = se.seed_table()
        payload["source"] = "the seed's Sequential Decisions Lab design (DESIGN.md reference numbers)"
    else:
        schedule = _seq_schedule(args)
        methods = [r.resolve() for r in _seq_methods(args.methods, args.inner, args.alternative)]
        laws = [(float(q), float(args.win)) for q in args.loss.split(",")]
        payload = se.exact_table(methods, schedule, args.margin, args.alpha, laws)
    payload["seconds"] = time.perf_counter() - t0

    def render(p: dict) -> None:
        print(f"exact sequential enumeration: looks {p['looks']}, margin {p['margin']}, alpha {p['alpha']} "
              f"({p['seconds']:.3f} s)")
        rows = [[r.get("case", f"loss {r.get('p_loss')}, win {r.get('p_win')}"), r["method"], f"{r['promote']:.5f}",
                 f"{r['harm']:.5f}", f"{r['expected_observations']:.2f}"] for r in p["rows"]]
        _plain_table(["case", "method", "P(promote)", "P(harm)", "E[N]"], rows)

    emit(args, payload, render)


def _scenario_template(args: argparse.Namespace) -> dict:
    t: dict = {"clusters": args.clusters, "trials": args.trials, "rho": args.rho}
    rates = (args.baseline, args.difference, args.discordance)
    if any(v is not None for v in rates):
        if any(v is None for v in rates):
            raise ValueError("--baseline, --difference and --discordance go together")
        t.update(baseline=args.baseline, difference=args.difference, discordance=args.discordance)
    else:
        try:
            t["cells"] = [float(x) for x in args.cells.split(",")]
        except ValueError:
            raise ValueError(f"--cells must be four comma-separated numbers, got {args.cells!r}") from None
    for k in ("candidate_sensitivity", "candidate_specificity", "baseline_sensitivity", "baseline_specificity"):
        if getattr(args, k) is not None:
            t[k] = getattr(args, k)
    if args.loss_rate:
        t["loss_rate"] = args.loss_rate
    return t


def cmd_sequential_simulate(args: argparse.Namespace) -> None:
    from studies.sequential import parse_sequential_spec, run_sequential_study, summary_rows

    spec = parse_sequential_spec({
        "name": "simulate", "methods": [r.model_dump() for r in _seq_methods(args.methods, args.inner,
                                                                            args.alternative)],
        "schedule": {"looks": list(_seq_schedule(args).looks), "unit": args.unit},
        "scenario": _scenario_template(args), "margins": [args.margin], "alpha": args.alpha,
        "replications": args.reps, "seed": args.seed, "exact": not args.no_exact}, source="arguments")
    ds = run_sequential_study(spec, n_jobs=args.jobs)
    payload = {"spec": json.loads(spec.to_json()), "spec_hash": spec.hash, "looks": list(spec.schedule.looks),
               "unit": spec.schedule.unit, "scenario": json.loads(str(ds.scenario_json.values.item())),
               "rows": summary_rows(ds), "seconds": float(ds.attrs["run_seconds"])}

    def render(p: dict) -> None:
        print(f"{args.reps} replications, looks {p['looks']} ({p['unit']}), margin {args.margin}, alpha {args.alpha} "
              f"({p['seconds']:.1f} s)")
        rows = []
        for r in p["rows"]:
            rows.append([r["method"], f"{r['true_value']:.4g}", r["promote_rate"], r["promote_rate_mcse"],
                         r.get("exact_promote_rate"), r["harm_rate"], r["expected_trials"],
                         r.get("exact_expected_trials")])
        _plain_table(["method", "true value", "P(promote)", "MC SE", "exact", "P(harm)", "E[trials]",
                      "exact E[trials]"], rows)

    emit(args, payload, render)


def cmd_sequential_run(args: argparse.Namespace) -> None:
    from studies.results import save_dataset
    from studies.sequential import load_sequential_spec, run_sequential_study, summary_rows

    spec = load_sequential_spec(args.spec)
    ds = run_sequential_study(spec, n_jobs=args.jobs, progress=not args.json)
    out = save_dataset(ds, args.out) if args.out else None
    payload = {"spec_hash": spec.hash, "out": None if out is None else str(out), "rows": summary_rows(ds),
               "seconds": float(ds.attrs["run_seconds"])}

    def render(p: dict) -> None:
        _render_sequential_rows(p["rows"])
        if p["out"]:
            print(f"wrote {p['out']}")

    emit(args, payload, render)


def _plain_table(columns: list[str], rows: list[list[Any]]) -> None:
    """Aligned plain-text columns (long method labels stay readable in any terminal width)."""
    cells = [[c if isinstance(c, str) else ("-" if c is None else _fmt(c)) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(columns)]
    print("  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(columns, widths))))
    for r in cells:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


def _render_sequential_rows(rows: list[dict]) -> None:
    table = []
    for r in rows:
        point = ", ".join(f"{k}={v}" for k, v in r.items() if k not in _SEQ_ROW_KEYS) or "-"
        table.append([point, r["method"], r["true_value"], r["promote_rate"], r["promote_rate_mcse"],
                      r.get("exact_promote_rate"), r["harm_rate"], r["expected_clusters"], r["expected_trials"]])
    _plain_table(["point", "method", "true value", "P(promote)", "MC SE", "exact", "P(harm)", "E[clusters]",
                  "E[trials]"], table)


_SEQ_ROW_KEYS = {"method", "margin", "true_value", "is_null", "n_reps", "promote_rate", "promote_rate_mcse",
                 "harm_rate", "harm_rate_mcse", "expected_clusters", "expected_clusters_mcse", "expected_trials",
                 "expected_trials_mcse", "bound_miss_rate", "bound_miss_rate_mcse", "cumulative_promotion_rate",
                 "stop_look_rate", "exact_promote_rate", "exact_expected_trials", "exact_cumulative_promotion_rate"}


def cmd_sequential_show(args: argparse.Namespace) -> None:
    from studies.results import open_dataset
    from studies.sequential import summary_rows

    ds = open_dataset(args.path)
    payload = {"path": args.path, "spec_hash": ds.attrs.get("spec_hash"), "looks": ds.look_count.values.tolist(),
               "rows": summary_rows(ds, args.margin)}
    emit(args, payload, lambda p: _render_sequential_rows(p["rows"]))


def cmd_sequential_plot(args: argparse.Namespace) -> None:
    from studies.results import open_dataset
    from studies.sequential_plot import plot_sequential

    out = plot_sequential(open_dataset(args.path), args.out, args.margin)
    emit(args, {"path": args.path, "out": str(out)}, lambda p: print(f"wrote {p['out']}"))


def cmd_sequential_analyze(args: argparse.Namespace) -> None:
    from studies.sequential import SequentialMethodRef

    if not args.table:
        raise ValueError("give at least one --table n11,n10,n01,n00 (one per cluster, in arrival order)")
    table = np.array([_parse_table(t, i) for i, t in enumerate(args.table)])
    opts = _parse_options(args.option)
    method = SequentialMethodRef(name=args.method, options=opts, inner=args.inner).resolve()
    result = method.analyze(table, _seq_schedule(args), args.margin, args.alpha)
    payload = {**result.as_dict(), "version": method.version, "source_sha256": method.identity.source_sha256,
               "citation": method.citation}

    def render(p: dict) -> None:
        print(f"{p['method']} ({p['estimand']}): looks {p['looks']} ({p['unit']}), reached {p['looks_reached']}")
        for j, (s, b) in enumerate(zip(p["look_status"], p["look_bound"])):
            print(f"  look {j + 1} at {p['looks'][j]}: {s:<14} bound {'nan' if b is None else f'{b:.6f}'}")
        print(f"decision: {p['decision']}  ({p['clusters']} clusters, {p['trials']} trials used; "
              f"promote iff bound >= -{p['margin']:g})")

    emit(args, payload, render)


def cmd_bench_sequential(args: argparse.Namespace) -> None:
    from studies.sequential_bench import bench_sequential

    payload = bench_sequential(reps=args.reps, repeats=args.repeats)

    def render(p: dict) -> None:
        e = p["exact"]
        print(f"exact enumeration, seed design (looks {e['design']['looks'][0]}..{e['design']['looks'][-1]}, "
              f"4 rules): warm {e['warm_seconds_best']:.3f} s (first run {e['first_run_seconds']:.3f} s); "
              f"target < {e['target_seconds']:g} s: {'met' if e['meets_target'] else 'MISSED'}")
        s = p["simulated"]
        sc = s["scenario"]
        print(f"simulated clustered study: K={sc['clusters']} x {sc['trials_per_cluster']} trials, rho={sc['rho']}, "
              f"looks {sc['looks']}, 1 thread")
        for r in s["rows"]:
            print(f"  {r['method']:<34} {r['sampler']:<12} {r['replication_looks_per_s']:>11.4g} replication-looks/s "
                  f"(method only {r['replication_looks_per_s_method_only']:.4g}); target >= "
                  f"{s['target_replication_looks_per_s']:.0e}: {'met' if r['meets_target'] else 'MISSED'}")
        print(f"  (1-minute load average during the run: {s['load_average_1min']:.2f} on {s['cpu_count']} cores)")

    emit(args, payload, render)


def _register_sequential(sub, bench_sub) -> None:
    seq = sub.add_parser("sequential", help="sequential designs: exact paths, simulation, studies, plots")
    ssub = seq.add_subparsers(dest="sequential_command", required=True)

    def design(p, looks="50:500:50"):
        p.add_argument("--looks", default=looks, help="cumulative look counts: a,b,c or start:stop:step "
                                                      "(default %(default)s)")
        p.add_argument("--unit", choices=("clusters", "trials"), default="clusters")
        p.add_argument("--margin", type=float, default=0.03, help="non-inferiority margin (default %(default)s)")
        p.add_argument("--alpha", type=float, default=0.05, help="one-sided overall level (default %(default)s)")

    def methods(p):
        p.add_argument("--methods", default="repeated_fixed,likelihood_ratio,bonferroni,fixed_final",
                       help="comma-separated sequential methods (default %(default)s)")
        p.add_argument("--inner", default=None, help="fixed-sample method the wrappers run (default binomial_loss)")
        p.add_argument("--alternative", type=float, default=None, help="likelihood_ratio's alternative loss rate")

    p = ssub.add_parser("exact", help="exact operating characteristics by path enumeration (default: the seed's table)")
    design(p)
    methods(p)
    p.add_argument("--loss", default=None, help="comma-separated per-trial loss probabilities (default: seed cases)")
    p.add_argument("--win", type=float, default=0.0, help="per-trial win probability (trinomial engine when > 0)")
    _add_json(p)
    p.set_defaults(func=cmd_sequential_exact)

    p = ssub.add_parser("simulate", help="Monte Carlo sequential operating characteristics (+ exact where possible)")
    design(p)
    methods(p)
    add_scenario_args(p, clusters=500, trials=1, rho=0.0, cells="0.97,0.03,0,0")
    g = p.add_argument_group("measurement")
    for k in ("candidate_sensitivity", "candidate_specificity", "baseline_sensitivity", "baseline_specificity"):
        g.add_argument(f"--{k.replace('_', '-')}", dest=k, type=float, default=None)
    g.add_argument("--loss-rate", type=float, default=0.0, help="probability a trial pair is lost")
    p.add_argument("--reps", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--no-exact", action="store_true", help="skip the exact engines")
    _add_json(p)
    p.set_defaults(func=cmd_sequential_simulate)

    p = ssub.add_parser("run", help="run a sequential study spec (TOML/JSON) and save it as netCDF")
    p.add_argument("spec")
    p.add_argument("--out", default=None, help="netCDF path (e.g. results/peeking.nc)")
    p.add_argument("--jobs", type=int, default=1)
    _add_json(p)
    p.set_defaults(func=cmd_sequential_run)

    p = ssub.add_parser("show", help="summarise a saved sequential study")
    p.add_argument("path")
    p.add_argument("--margin", type=float, default=None)
    _add_json(p)
    p.set_defaults(func=cmd_sequential_show)

    p = ssub.add_parser("plot", help="cumulative promotion probability across looks, per method (PNG)")
    p.add_argument("path")
    p.add_argument("--out", required=True)
    p.add_argument("--margin", type=float, default=None)
    _add_json(p)
    p.set_defaults(func=cmd_sequential_plot)

    p = ssub.add_parser("analyze", help="one experiment's sequential analysis (clusters in arrival order)")
    design(p, looks="10,20,30")
    p.add_argument("--method", required=True)
    p.add_argument("--inner", default=None)
    p.add_argument("--option", action="append", default=[], metavar="key=value")
    p.add_argument("--table", action="append", default=[], metavar="n11,n10,n01,n00")
    _add_json(p)
    p.set_defaults(func=cmd_sequential_analyze)

    p = bench_sub.add_parser("sequential", help="exact enumeration time and simulated replication-looks/s")
    p.add_argument("--reps", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=5)
    _add_json(p)
    p.set_defaults(func=cmd_bench_sequential)


_REGISTRARS.append(_register_sequential)

# ---------------------------------------------------------------- qualification / sizing commands


def _methods_arg(text: str, kind: str = "fixed") -> list:
    from methods.registry import get, names

    chosen = names(kind) if text == "all" else [t.strip() for t in text.split(",") if t.strip()]
    if not chosen:
        raise ValueError("--method needs a registered method name, a comma-separated list, or 'all'")
    return [get(n) for n in chosen]


def cmd_qualify(args: argparse.Namespace) -> None:
    from pathlib import Path

    from methods.qualification import RESULTS_DIR, QualificationPolicy, named_policy
    from studies.qualify import qualify, summary_payload

    if not args.method:
        raise ValueError("give --method NAME (or 'all'), or use `simlab qualify show RECORD`")
    pol = args.policy or "standard"
    policy = QualificationPolicy.load(pol) if Path(pol).suffix.lower() in (".json", ".toml") else named_policy(pol)
    progress = None if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    kind = "fixed" if policy.domain.looks is None else "sequential"
    run = qualify(_methods_arg(args.method, kind), policy, n_jobs=args.n_jobs, out_dir=args.out or RESULTS_DIR,
                  progress=progress)
    payload = {"policy_sha256": policy.sha256, **run.stats(),
               "records": [summary_payload(o.record, o.record_path) for o in run.outcomes]}

    def render(p: dict) -> None:
        from rich.markup import escape

        rows = [[escape(r["method"]["name"]), f"{r['cells_qualified']}/{r['cells_total']}", r["worst_case"]["upper"],
                 r["worst_case"]["rate"], r["record"]] for r in p["records"]]
        print_table(f"qualification (policy {p['policy_sha256'][:10]}, threshold {p['records'][0]['threshold']:.4g})",
                    ["method", "cells qualified", "worst upper", "worst rate", "record"], rows)
        for r in p["records"]:
            print(f"\n{r['method']['name']}: {r['summary']}")
        print(f"\n{p['scenarios']} scenarios ({p['grid_scenarios']} grid + {p['refine_scenarios']} refined), "
              f"{p['replications']:,} replications in {p['seconds']:.1f} s: {p['scenarios_per_s']:.2f} scenarios/s, "
              f"{p['replications_per_s']:,.0f} replications/s")

    emit(args, payload, render)


def cmd_qualify_show(args: argparse.Namespace) -> None:
    from pathlib import Path

    from methods.qualification import StaleRecordError, load_record
    from studies.qualify import summary_payload
    from studies.qualify_show import cell_rows, heatmap

    stale = None
    try:
        record = load_record(args.record)
    except StaleRecordError as exc:
        if not args.allow_stale:
            raise
        stale = str(exc)
        record = load_record(args.record, check_current=False)
    png = Path(args.png) if args.png else Path(args.record).with_suffix(".png")
    heatmap(record, png)
    cols, rows = cell_rows(record)
    payload = {**summary_payload(record, Path(args.record)), "stale": stale, "png": str(png),
               "cells": [dict(zip(cols, r)) for r in rows]}

    def render(p: dict) -> None:
        from rich.markup import escape

        if p["stale"]:
            print(f"WARNING: {p['stale']}")
        print_table(f"{escape(p['method']['name'])} v{p['method']['version']}: worst false-pass upper bound per cell "
                    f"(ok qualified, ok* vacuous, X exceeds, ? undetermined)", cols, rows)
        w = p["worst_case"]
        print(p["summary"])
        print(f"worst case: K={w['clusters']} trials={w['trials']} rho={w['rho']:g} margin={w['margin']:g} "
              f"baseline={w['baseline']:g} discordance={w['discordance']:g}: {w['n_pass']}/{w['n_reps']} = "
              f"{w['rate']:.4g} (upper {w['upper']:.4g}, {w['verdict']})")
        print(f"record {p['record_sha256'][:16]}, policy {p['policy_sha256'][:16]}, dataset {p['dataset']['file']}, "
              f"created {p['created']}, valid until {p['valid_until']}; heat map: {p['png']}")

    emit(args, payload, render)


def cmd_size(args: argparse.Namespace) -> None:
    from pathlib import Path

    from methods.registry import get
    from studies.sizing import plot_curve, size

    method = get(args.method)
    progress = None if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    res = size(method, margin=args.margin, difference=args.true_difference, power=args.power, alpha=args.alpha,
               trials=args.trials_per_cluster, baseline=args.baseline, discordance=args.discordance, rho=args.rho,
               looks=args.looks, seed=args.seed, max_reps=args.max_reps, progress=progress)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stem = out / (f"size-{method.name}-m{args.margin:g}-d{args.true_difference:g}-M{args.trials_per_cluster}"
                      f"-rho{args.rho:g}-seed{args.seed}")
        res.curve.to_netcdf(f"{stem}.nc", engine="h5netcdf")
        plot_curve(res, f"{stem}.png")
        res.files = {"curve": f"{stem}.nc", "png": f"{stem}.png"}
    payload = res.payload()

    def render(p: dict) -> None:
        a = p["analytic"]
        print(f"analytic start ({a['variance']} variance): {a['pairs']:.1f} independent pairs x design effect "
              f"{a['design_effect']:.4g} / {a['trials']} trials = {a['clusters_real']:.1f} -> K = {a['clusters']}")
        k, km1 = p["power_at_k"], p["power_at_k_minus_1"]
        print(f"chosen K = {p['clusters']} clusters ({p['trials_total']} trial pairs); binding: {p['binding_constraint']}")
        print(f"power at K   = {k['power']:.4f} (MC SE {k['mcse']:.4f}, CI {k['ci_lower']:.4f}..{k['ci_upper']:.4f}, "
              f"{k['n_reps']} reps)")
        if km1:
            print(f"power at K-1 = {km1['power']:.4f} (MC SE {km1['mcse']:.4f}, CI {km1['ci_lower']:.4f}.."
                  f"{km1['ci_upper']:.4f}, {km1['n_reps']} reps)")
        where = f"at the power root K = {p['power_clusters']}"
        print(f"power search resolved {where}: the power CIs exclude the target on both sides" if p["resolved"] else
              f"power search NOT resolved {where}: the replication cap was reached before both CIs excluded "
              "the target")
        if p["clusters"] != p["power_clusters"]:
            print(f"K raised from {p['power_clusters']} to {p['clusters']} by the false-pass constraint")
        fp = p["false_pass"]
        if fp.get("checked"):
            print(f"false-pass at the null boundary (K={fp['clusters']}): {fp['rate']:.4g} (upper {fp['cp_upper']:.4g} "
                  f"vs {fp['threshold']:.4g}): {fp['verdict']}")
        if p["files"]:
            print(f"power curve: {p['files']['curve']}, {p['files']['png']}")

    emit(args, payload, render)


def cmd_bench_qualify(args: argparse.Namespace) -> None:
    import tempfile

    from methods.qualification import standard_policy
    from methods.registry import get
    from studies.qualify import qualify

    progress = None if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    with tempfile.TemporaryDirectory() as tmp:
        run = qualify([get(args.method)], standard_policy(), n_jobs=args.n_jobs, out_dir=tmp, progress=progress)
    rec = run.outcomes[0].record
    payload = {"method": args.method, "n_jobs": args.n_jobs, **run.stats(), "target_seconds": 600.0,
               "within_target": run.seconds < 600.0, "cells_qualified": rec.qualified.cells_qualified,
               "cells_total": rec.qualified.cells_total}

    def render(p: dict) -> None:
        print(f"qualify {p['method']} over the standard domain, default policy, n_jobs={p['n_jobs']}: "
              f"{p['scenarios']} scenarios ({p['grid_scenarios']} grid + {p['refine_scenarios']} refined), "
              f"{p['replications']:,} replications in {p['seconds']:.1f} s")
        print(f"{p['scenarios_per_s']:.2f} scenarios/s, {p['replications_per_s']:,.0f} replications/s; "
              f"target < 600 s: {'met' if p['within_target'] else 'NOT met'}; "
              f"{p['cells_qualified']}/{p['cells_total']} cells qualified")

    emit(args, payload, render)


def _register_qualify(sub, bench_sub) -> None:
    p = sub.add_parser("qualify", help="qualify methods over a policy's domain; `qualify show RECORD`")
    p.add_argument("--method", help="registered method, comma-separated list, or 'all' (fixed-sample methods; "
                                    "sequential ones under a policy that declares looks)")
    p.add_argument("--policy", help="policy file (JSON or TOML) or a built-in name: standard (default), "
                                    "standard-coarse, reduced, reduced-small, sequential, sequential-standard, "
                                    "sequential-standard-lr")
    p.add_argument("--n-jobs", type=int, default=1, help="worker processes (default %(default)s)")
    p.add_argument("--out", default=None, help="output directory (default: the project's results/qualification)")
    _add_json(p)
    p.set_defaults(func=cmd_qualify)
    qsub = p.add_subparsers(dest="qualify_command")
    s = qsub.add_parser("show", help="table and heat map of a qualification record")
    s.add_argument("record", help="record JSON file")
    s.add_argument("--png", help="heat-map path (default: beside the record)")
    s.add_argument("--allow-stale", action="store_true", help="show a record whose method has changed")
    _add_json(s)
    s.set_defaults(func=cmd_qualify_show)

    p = sub.add_parser("size", help="clusters needed for a target power (simulation, analytic start)")
    p.add_argument("--method", required=True)
    p.add_argument("--margin", type=float, required=True)
    p.add_argument("--true-difference", type=float, required=True, help="candidate - baseline under the alternative")
    p.add_argument("--power", type=float, default=0.8)
    p.add_argument("--alpha", type=float, default=0.025, help="one-sided level (default %(default)s)")
    p.add_argument("--trials-per-cluster", type=int, default=1)
    p.add_argument("--baseline", type=float, default=0.9)
    p.add_argument("--discordance", type=float, default=None,
                   help="P(outcomes differ) (default max(2|difference|, margin, 0.1))")
    p.add_argument("--rho", type=float, default=0.0)
    p.add_argument("--looks", type=int, default=None, help="sequential methods: number of equally spaced looks")
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument("--max-reps", type=int, default=1 << 20, help="replication cap of the root search")
    p.add_argument("--out", default="results/sizing", help="where the power curve (.nc, .png) goes; '' for none")
    _add_json(p)
    p.set_defaults(func=cmd_size)

    p = bench_sub.add_parser("qualify", help="qualify one closed-form method over the standard domain")
    p.add_argument("--method", default="clustered_normal")
    p.add_argument("--n-jobs", type=int, default=2)
    _add_json(p)
    p.set_defaults(func=cmd_bench_qualify)


_REGISTRARS.append(_register_qualify)


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="simlab",
        description="Measure, size and qualify non-inferiority decision methods for paired, clustered "
                    "binary outcomes.  Every command that prints figures takes --json.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("simulate", help="draw tables for a scenario and summarise them")
    add_scenario_args(p)
    p.add_argument("--reps", type=int, default=10_000, help="replications (default %(default)s)")
    p.add_argument("--seed", type=int, default=20261129)
    _add_json(p)
    p.set_defaults(func=cmd_simulate)

    bench = sub.add_parser("bench", help="speed benchmarks against references measured in the same run")
    bsub = bench.add_subparsers(dest="bench_command", required=True)
    p = bsub.add_parser("simulate", help="generator speed vs a numpy-vectorised DGM")
    p.add_argument("--reps", type=int, default=2_000_000)
    p.add_argument("--numpy-reps", type=int, default=200_000)
    p.add_argument("--memory-reps", type=int, default=0,
                   help="also stream this many replications and report peak memory (e.g. 100000000)")
    _add_json(p)
    p.set_defaults(func=cmd_bench_simulate)

    # registered by later layers (kept in this one file: the one front door)
    for register in _REGISTRARS:
        register(sub, bsub)
    return parser, sub, bsub


def dispatch(args: argparse.Namespace) -> int:
    try:
        args.func(args)
    except (ValueError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        if getattr(args, "json", False):
            sys.stdout.write(json.dumps({"error": str(msg)}) + "\n")
        else:
            print(f"error: {msg}", file=sys.stderr)
        return 2
    return 0

