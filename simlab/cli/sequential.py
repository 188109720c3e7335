"""``simlab sequential exact|simulate|run|show|plot|analyze``: sequential designs."""
from __future__ import annotations

import argparse
import json
import math
import os

from simlab.cli._args import (
    add_json,
    add_max_memory,
    add_max_seconds,
    add_scenario_args,
    check_memory,
    check_methods,
    check_time,
    finite_float,
    n_jobs,
    nonnegative_int,
    option_error,
    nonempty_path,
    parse_options,
    parse_tables,
    positive_int,
    scenario_fields,
    unit_closed,
    unit_open_top,
)
from simlab.cli._backend import add_backend_arguments
from simlab.cli._output import UsageError, emit, log_to_stderr, plain_table
from simlab.cli._sequential import (
    DEFAULT_ALPHA,
    DEFAULT_LOOKS,
    DEFAULT_MARGIN,
    DEFAULT_METHODS,
    method_refs,
    schedule_of,
)
from simlab.cli.study import (check_levels, check_plot_out, check_writable, read_dataset, refuse_foreign_file,
                              refuse_spec_as_out)


def run_exact(args: argparse.Namespace) -> None:
    import time

    design = {"--looks": args.looks, "--margin": args.margin, "--alpha": args.alpha, "--methods": args.methods,
              "--inner": args.inner, "--alternative": args.alternative, "--win": args.win}
    t0 = time.perf_counter()
    if args.loss is None:
        given = [k for k, v in design.items() if v is not None] + (["--unit"] if args.unit != "clusters" else [])
        if given:
            raise UsageError(f"{', '.join(given)} set your own design, which needs --loss (per-trial loss "
                             "probabilities); without --loss simlab prints the seed's fixed table", given[0])
        from studies.exact import seed_table

        payload = {**seed_table(), "source": "the seed's Sequential Decisions Lab design (its reference "
                                                "numbers, tests/reference_values.py)"}
    else:
        schedule = schedule_of(args, args.looks or DEFAULT_LOOKS)
        win = args.win or 0.0
        try:
            losses = [float(q) for q in args.loss.split(",") if q.strip()]
        except ValueError:
            raise UsageError(f"--loss must be comma-separated probabilities, got {args.loss!r}", "--loss") from None
        bad = [q for q in losses if not 0.0 <= q <= 1.0 - win]
        if not losses or bad:
            raise UsageError(f"--loss values must lie in [0, 1 - win] = [0, {1 - win:g}], got {args.loss!r}", "--loss")
        if len(set(losses)) < len(losses):
            raise UsageError(f"--loss lists a probability twice ({args.loss!r}): each row once", "--loss")
        refs = method_refs(DEFAULT_METHODS if args.methods is None else args.methods, args.inner, args.alternative)
        from studies.engine import exact_sequential_memory, exact_sequential_seconds
        from studies.exact import exact_table

        what = f"exact enumeration up to {schedule.last:,} {schedule.unit}"
        check_memory(args, exact_sequential_memory(schedule.looks, win > 0), what)
        methods = [r.resolve("sequential") for r in refs]
        check_time(args, exact_sequential_seconds(schedule.looks, win > 0, len(methods), len(losses)), what)
        margin = DEFAULT_MARGIN if args.margin is None else args.margin
        alpha = DEFAULT_ALPHA if args.alpha is None else args.alpha
        payload = exact_table(methods, schedule, margin, alpha, [(q, win) for q in losses])
    payload["seconds"] = time.perf_counter() - t0

    def render(p: dict) -> None:
        print(f"exact sequential enumeration: looks {p['looks']}, margin {p['margin']}, alpha {p['alpha']} "
              f"({p['seconds']:.3f} s)")
        rows = [[r.get("case", f"loss {r.get('p_loss')}, win {r.get('p_win')}"), r["method"], f"{r['promote']:.5f}",
                 f"{r['harm']:.5f}", f"{r['expected_observations']:.2f}"] for r in p["rows"]]
        plain_table(["case", "method", "P(promote)", "P(harm)", "E[N]"], rows)

    emit(args, payload, render)


def _template(args: argparse.Namespace) -> dict:
    t = scenario_fields(args)
    for k in ("candidate_sensitivity", "candidate_specificity", "baseline_sensitivity", "baseline_specificity"):
        if getattr(args, k) is not None:
            t[k] = getattr(args, k)
    if args.loss_rate:
        t["loss_rate"] = args.loss_rate
    return t


def run_simulate(args: argparse.Namespace) -> None:
    refs = method_refs(args.methods, args.inner, args.alternative)  # a mistyped name answers before the studies load
    if args.alternative is not None and not 0.0 < args.alternative < args.margin:  # was checked where it prepares (2 s)
        raise UsageError(f"--alternative {args.alternative:g} must lie in (0, --margin = {args.margin:g}): "
                         "likelihood_ratio's alternative loss rate, below the margin it tests", "--alternative")
    schedule = schedule_of(args, args.looks)
    most = args.clusters if args.unit == "clusters" else args.clusters * args.trials
    if schedule.last > most:
        raise UsageError(f"--looks reach {schedule.last} {args.unit} but the scenario has {most} (--clusters "
                         f"{args.clusters} x --trials {args.trials}); the last look must not exceed them", "--looks")
    from studies.engine import (exact_sequential_memory, parse_sequential_spec, run_sequential_study,
                                sequential_study_estimate, sequential_study_memory, sequential_summary_rows)

    workers = (os.cpu_count() or 1) if args.jobs == -1 else args.jobs
    spec = parse_sequential_spec({
        "name": "simulate", "methods": [r.model_dump() for r in refs],
        "schedule": {"looks": list(schedule.looks), "unit": args.unit},
        "scenario": _template(args), "margins": [args.margin], "alpha": args.alpha,
        "replications": args.reps, "seed": args.seed, "exact": not args.no_exact}, source="arguments")
    need = sequential_study_memory(spec, workers) + (0 if args.no_exact else exact_sequential_memory(schedule.looks, True))
    what = f"sequential simulation ({args.reps:,} replications x {args.clusters:,} clusters)"
    check_memory(args, need, what)
    estimate = sequential_study_estimate(spec, workers)
    check_time(args, estimate.low, what)
    log_to_stderr(args)(f"{what}: estimated {estimate.describe()}"
                        + ("" if args.no_exact else "; the exact engines come on top"))
    ds = run_sequential_study(spec, n_jobs=args.jobs, progress=True)
    payload = {"spec": json.loads(spec.to_json()), "spec_hash": spec.hash, "looks": list(spec.schedule.looks),
               "unit": spec.schedule.unit, "scenario": json.loads(str(ds.scenario_json.values.item())),
               "rows": sequential_summary_rows(ds), "seconds": float(ds.attrs["run_seconds"])}

    def render(p: dict) -> None:
        print(f"{args.reps} replications, looks {p['looks']} ({p['unit']}), margin {args.margin}, alpha {args.alpha} "
              f"({p['seconds']:.1f} s)")
        rows = [[r["method"], f"{r['true_value']:.4g}", r["promote_rate"], r["promote_rate_mcse"],
                 r.get("exact_promote_rate"), r["harm_rate"], r["expected_trials"], r.get("exact_expected_trials")]
                for r in p["rows"]]
        plain_table(["method", "true value", "P(promote)", "MC SE", "exact", "P(harm)", "E[trials]",
                     "exact E[trials]"], rows)

    emit(args, payload, render)


_ROW_KEYS = {"method", "margin", "true_value", "is_null", "n_reps", "promote_rate", "promote_rate_mcse",
             "harm_rate", "harm_rate_mcse", "expected_clusters", "expected_clusters_mcse", "expected_trials",
             "expected_trials_mcse", "bound_miss_rate", "bound_miss_rate_mcse", "cumulative_promotion_rate",
             "stop_look_rate", "exact_promote_rate", "exact_expected_trials", "exact_cumulative_promotion_rate"}


def _render_rows(rows: list[dict]) -> None:
    table = []
    for r in rows:
        point = ", ".join(f"{k}={v}" for k, v in r.items() if k not in _ROW_KEYS) or "-"
        table.append([point, r["method"], r["true_value"], r["promote_rate"], r["promote_rate_mcse"],
                      r.get("exact_promote_rate"), r["harm_rate"], r["expected_clusters"], r["expected_trials"]])
    plain_table(["point", "method", "true value", "P(promote)", "MC SE", "exact", "P(harm)", "E[clusters]",
                 "E[trials]"], table)


def check_spec_methods(raw, path) -> None:
    """A sequential spec's methods checked against the method catalogue before the engine loads
    (``studies.engine.check_method_refs``: names, kind, wrapped method, options), and
    likelihood_ratio's alternative against the spec's margins (the method refused it where it
    prepared, after the engine and a pilot); the error names the spec file, its field is the
    spec argument.  What does not read as a list of methods, or margins as numbers, is left to
    the spec's own validation."""
    if not isinstance(raw, dict) or not isinstance(raw.get("methods"), list):
        return
    from methods import as_method_refs, info
    from studies.engine import StudySpec, check_method_refs

    try:
        refs = as_method_refs(raw["methods"])
        check_method_refs(refs, "sequential")
    except ValueError as exc:
        raise UsageError(f"{path}: {' '.join(str(exc).split())}", "spec") from None
    margins = raw.get("margins", raw.get("margin", list(StudySpec.model_fields["margins"].default)))  # the default
    margins = margins if isinstance(margins, list) else [margins]
    if not all(isinstance(m, (int, float)) and not isinstance(m, bool) and 0.0 < m < 1.0 for m in margins):
        return   # the spec's validation words it
    for i, ref in enumerate(refs):
        if ":" in ref.name:
            continue
        entry = info(ref.name)
        if entry.name != "likelihood_ratio":
            continue
        alternative = float(ref.options.get("alternative", entry.options["alternative"]))
        for m in margins:
            if not 0.0 < alternative < m:
                raise UsageError(f"{path}: methods[{i}]: likelihood_ratio's option alternative ({alternative:g}) "
                                 f"must lie in (0, margin = {m:g}): the alternative loss rate, below the margin it "
                                 "tests", "spec")


def run_run(args: argparse.Namespace) -> None:
    from studies.engine import read_spec_file

    raw = read_spec_file(args.spec)  # a missing or unreadable file answers before the engine loads
    if isinstance(raw, dict) and "methods" in raw and not {"schedule", "looks"} & set(raw):   # before the engine (1.4 s)
        raise UsageError(f"{args.spec}: a fixed-sample study spec (it has no looks): run it with simlab study run; "
                         "a sequential spec adds its looks (looks = [...] or a [schedule])", "spec")
    check_spec_methods(raw, args.spec)   # from the catalogue, before the engine (numba) loads: it took 0.8-1.3 s
    from simlab.cli._backend import executor_from_args
    from studies import save_dataset
    from studies.engine import (parse_sequential_spec, run_sequential_study, sequential_study_estimate,
                                sequential_study_memory, sequential_summary_rows)

    try:
        spec = parse_sequential_spec(raw, source=str(args.spec))
    except ValueError as exc:  # the spec file's own field (it names it): the field is the spec argument
        raise UsageError(" ".join(str(exc).split()), "spec") from None
    if args.out:
        check_writable(args.out, "--out")
        refuse_spec_as_out(args.out, args.spec)
        refuse_foreign_file(args.out, "--out", args.force, spec_hash=spec.hash)
    points = math.prod(spec.shape) if spec.shape else 1
    workers = (os.cpu_count() or 1) if args.jobs == -1 else args.jobs
    what = f"sequential study {spec.name} ({points:,} grid points)"
    check_memory(args, sequential_study_memory(spec, workers), what)
    with executor_from_args(args, args.jobs) as ex:
        estimate = sequential_study_estimate(spec, ex.workers)
        check_time(args, estimate.low, what)
        log_to_stderr(args)(f"{what}: estimated {estimate.describe()} on {ex.describe()}")
        ds = run_sequential_study(spec, executor=ex, progress=True)
    out = save_dataset(ds, args.out) if args.out else None
    payload = {"spec_hash": spec.hash, "out": None if out is None else str(out), "saved": out is not None,
               "rows": sequential_summary_rows(ds), "seconds": float(ds.attrs["run_seconds"])}

    def render(p: dict) -> None:
        _render_rows(p["rows"])
        print(f"wrote {p['out']}" if p["out"] else "saved nothing (no --out); rerun with --out FILE.nc to keep "
                                                   "the dataset for `simlab sequential show/plot`")

    emit(args, payload, render)


def run_show(args: argparse.Namespace) -> None:
    ds = open_sequential(args.path, args.margin)  # a refused file or margin is named before the summary code loads
    from studies.engine import sequential_summary_rows

    payload = {"path": args.path, "spec_hash": ds.attrs.get("spec_hash"), "looks": ds.look_count.values.tolist(),
               "rows": sequential_summary_rows(ds, args.margin)}
    emit(args, payload, lambda p: _render_rows(p["rows"]))


def open_sequential(path: str, margin: float | None = None):
    """The sequential dataset at ``path``; a file of another kind, or a ``--margin`` it does not
    hold, is refused from the file's attributes and coordinates before its data are read."""
    from studies import dataset_kind, file_kind, stored_kind

    held = stored_kind(path) if file_kind(path) == "netcdf" else None
    if held is not None and held != "sequential":   # named from its attrs, before the data are read (2.8-5.4 s)
        raise UsageError(f"{path}: not a sequential study dataset (a {held} dataset; written by simlab sequential "
                         "run --out?)", "path")
    check_levels(path, margin, None)   # the margin coordinate, read alone with h5py (it was refused after 1.6 s)
    ds = read_dataset(path, "path")
    if dataset_kind(ds) != "sequential":
        raise UsageError(f"{path}: not a sequential study dataset (written by simlab sequential run --out?)", "path")
    return ds


def run_plot(args: argparse.Namespace) -> None:
    check_plot_out(args.out, "--out", args.force)  # before matplotlib loads: a bad path answers at once
    ds = open_sequential(args.path, args.margin)
    from studies.plots import plot_sequential

    out = plot_sequential(ds, args.out, args.margin)
    emit(args, {"path": args.path, "out": str(out)}, lambda p: print(f"wrote {p['out']}"))


def run_analyze(args: argparse.Namespace) -> None:
    options = parse_options(args.option)
    check_methods(args.method, "--method", "sequential", options)  # before the method's module loads
    if args.inner is not None:
        check_methods(args.inner, "--inner", "fixed")
        from methods import info

        if "judge_calibration" in info(args.inner).inputs:
            raise UsageError(f"--inner {args.inner!r} corrects judge labels with calibration counts, which "
                             "sequential analyze does not take; choose an inner method that reads the tables alone",
                             "--inner")
    table = parse_tables(args.table, order="one per cluster, in arrival order")
    from methods import MethodRef

    try:  # an option's range is checked where the method prepares: its error names --option
        method = MethodRef(name=args.method, options=options, inner=args.inner).resolve("sequential")
        result = method.analyze(table, schedule_of(args, args.looks), args.margin, args.alpha)
    except UsageError:
        raise
    except ValueError as exc:
        raise option_error(exc, options) or exc from None
    payload = {**result.as_dict(), "version": method.version, "source_sha256": method.identity.source_sha256,
               "citation": method.citation}

    def render(p: dict) -> None:
        print(f"{p['method']} ({p['estimand']}): looks {p['looks']} ({p['unit']}), reached {p['looks_reached']}")
        for j, (s, b) in enumerate(zip(p["look_status"], p["look_bound"])):
            # no bound: too few non-empty clusters for the method at that look (it printed "nan")
            bound = "none (too few clusters)" if b is None else f"{b:.6f}"
            print(f"  look {j + 1} at {p['looks'][j]}: {s:<14} bound {bound}")
        print(f"decision: {p['decision']}  ({p['clusters']} clusters, {p['trials']} trials used; "
              f"promote iff bound >= -{p['margin']:g})")
        if not p["trials"]:
            print("note: every --table is empty (no trials): nothing was measured, and not promoting is the only "
                  "decision without data")

    emit(args, payload, render)


def register(sub, bench_sub) -> None:
    seq = sub.add_parser("sequential", help="sequential designs: exact paths, simulation, studies, plots")
    ssub = seq.add_subparsers(dest="sequential_command", required=True)

    def design(p, looks=DEFAULT_LOOKS, margin=DEFAULT_MARGIN, alpha=DEFAULT_ALPHA):
        p.add_argument("--looks", default=looks, help=f"cumulative look counts: a,b,c or start:stop:step "
                                                      f"(default {looks or DEFAULT_LOOKS})")
        p.add_argument("--unit", choices=("clusters", "trials"), default="clusters",
                       help="what the look counts count (default %(default)s)")
        p.add_argument("--margin", type=finite_float, default=margin,
                       help=f"non-inferiority margin (default {DEFAULT_MARGIN})")
        p.add_argument("--alpha", type=finite_float, default=alpha, help=f"one-sided overall level (default {DEFAULT_ALPHA})")

    def methods(p, default=DEFAULT_METHODS):
        p.add_argument("--methods", default=default,
                       help=f"comma-separated sequential methods (default {DEFAULT_METHODS})")
        p.add_argument("--inner", default=None, help="fixed-sample method the wrappers run (default binomial_loss)")
        p.add_argument("--alternative", type=finite_float, default=None, help="likelihood_ratio's alternative loss rate")

    p = ssub.add_parser("exact", help="exact operating characteristics by path enumeration (default: the seed's "
                                      "table; give --loss for your own design)")
    design(p, looks=None, margin=None, alpha=None)  # None = not given: only meaningful with --loss
    methods(p, default=None)
    p.add_argument("--loss", default=None, help="comma-separated per-trial loss probabilities (default: seed cases)")
    p.add_argument("--win", type=unit_open_top, default=None,
                   help="per-trial win probability in [0, 1) (trinomial engine when > 0)")
    add_max_memory(p)
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_exact)

    p = ssub.add_parser("simulate", help="Monte Carlo sequential operating characteristics (+ exact where possible)")
    design(p)
    methods(p)
    add_scenario_args(p, clusters=500, trials=1, rho=0.0, cells="0.97,0.03,0,0")
    g = p.add_argument_group("measurement")
    for k in ("candidate_sensitivity", "candidate_specificity", "baseline_sensitivity", "baseline_specificity"):
        arm, what = k.split("_")
        g.add_argument(f"--{k.replace('_', '-')}", dest=k, type=unit_closed, default=None,
                       help=f"P(the {arm}'s outcome is recorded as {'pass' if what == 'sensitivity' else 'fail'} "
                            f"| it {'passed' if what == 'sensitivity' else 'failed'}) (default 1: perfect labels)")
    g.add_argument("--loss-rate", type=unit_open_top, default=0.0,
                   help="probability a trial pair is lost, in [0, 1) (default %(default)s)")
    p.add_argument("--reps", type=positive_int, default=20_000, help="replications (default %(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=20261129,
                   help="random seed: the same seed gives the same replications (default %(default)s)")
    p.add_argument("--jobs", type=n_jobs, default=1, help="worker processes, -1 = all cores (default %(default)s)")
    p.add_argument("--no-exact", action="store_true", help="skip the exact engines")
    add_max_memory(p)
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_simulate)

    p = ssub.add_parser("run", help="run a sequential study spec (TOML/JSON) and save it as netCDF")
    p.add_argument("spec", help="sequential study spec file (.toml / .json)")
    p.add_argument("--out", type=nonempty_path, default=None,
                   help="netCDF path (e.g. simlab-out/peeking.nc); without it nothing is saved; "
                        "an existing file that simlab did not write is refused unless --force")
    p.add_argument("--force", action="store_true",
                   help="replace --out even when it is not a dataset simlab wrote, or holds another study's results")
    p.add_argument("--jobs", type=n_jobs, default=1, help="worker processes, -1 = all cores (default %(default)s)")
    add_backend_arguments(p)
    add_max_memory(p)
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_run)

    p = ssub.add_parser("show", help="summarise a saved sequential study")
    p.add_argument("path", help="sequential dataset (.nc) written by simlab sequential run --out")
    p.add_argument("--margin", type=finite_float, default=None, help="margin to show (default: every margin)")
    add_json(p)
    p.set_defaults(func=run_show)

    p = ssub.add_parser("plot", help="cumulative promotion probability across looks, per method (PNG)")
    p.add_argument("path", help="sequential dataset (.nc) written by simlab sequential run --out")
    p.add_argument("--out", type=nonempty_path, required=True,
                   help="PNG path; an existing file that is not a plot simlab drew is "
                        "refused unless --force")
    p.add_argument("--force", action="store_true", help="replace --out even when it is not a plot simlab drew")
    p.add_argument("--margin", type=finite_float, default=None, help="margin to plot (default: the dataset's first)")
    add_json(p)
    p.set_defaults(func=run_plot)

    p = ssub.add_parser("analyze", help="one experiment's sequential analysis (clusters in arrival order)")
    design(p, looks="10,20,30")
    p.add_argument("--method", required=True, help="registered sequential method (see `simlab methods`)")
    p.add_argument("--inner", default=None, help="fixed-sample method a wrapper runs (default binomial_loss)")
    p.add_argument("--option", action="append", default=[], metavar="key=value",
                   help="method option, e.g. spending=pocock (repeatable)")
    p.add_argument("--table", action="append", default=[], metavar="n11,n10,n01,n00",
                   help="one cluster's paired counts, in arrival order; repeat once per cluster")
    add_json(p)
    p.set_defaults(func=run_analyze)
