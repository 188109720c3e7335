"""``simlab qualify`` (methods over a policy's domain) and ``simlab qualify show RECORD``."""
from __future__ import annotations

import argparse
from pathlib import Path

from simlab.cli._args import (add_json, add_max_seconds, check_and_say_time, check_methods, check_time, deadline_of,
                             n_jobs, nonempty_path, over_time)
from simlab.cli._backend import add_backend_arguments
from simlab.cli._output import UsageError, emit, log_to_stderr, print_table
from simlab.cli.study import check_folder, check_plot_out

BUILT_IN_POLICIES = ("standard (default), standard-coarse, reduced, reduced-small, sequential, sequential-standard, "
                     "sequential-standard-lr")


def method_names(text: str, kind: str = "fixed") -> list[str]:
    """The methods ``--method`` names (``all``: every registered one of ``kind``), each checked
    against the catalogue."""
    from methods import names

    chosen = names(kind) if text == "all" else [t.strip() for t in text.split(",") if t.strip()]
    if not chosen:
        raise UsageError("--method needs a registered method name, a comma-separated list, or 'all'", "--method")
    check_methods(chosen, "--method")
    twice = sorted({n for n in chosen if chosen.count(n) > 1})
    if twice:   # was refused only after the estimate
        raise UsageError(f"--method lists {', '.join(twice)} more than once; give each method once", "--method")
    return chosen


def methods_arg(text: str, kind: str = "fixed") -> list:
    from methods import get

    return [get(n) for n in method_names(text, kind)]


def run_qualify(args: argparse.Namespace) -> None:
    deadline = deadline_of(args)
    if not args.method:
        raise UsageError("give --method NAME (or 'all'), or use `simlab qualify show RECORD`", "--method")
    if args.method != "all":
        method_names(args.method)  # a mistyped name answers before the policy and the studies load
    from methods.qualification import QualificationPolicy, named_policy, records_dir

    pol = args.policy or "standard"
    policy = QualificationPolicy.load(pol) if Path(pol).suffix.lower() in (".json", ".toml") else named_policy(pol)
    kind = "fixed" if policy.domain.looks is None else "sequential"
    out_dir = Path(args.out) if args.out else records_dir()  # resolved now, not at import
    check_folder(out_dir, "--out")
    if args.checkpoint:  # a file there was refused after the estimate, as a bare "File exists"
        check_folder(args.checkpoint, "--checkpoint")

    from simlab.cli._backend import executor_from_args
    from studies.engine import qualify_estimate
    from studies.qualify import qualify, summary_payload

    methods = methods_arg(args.method, kind)
    say = log_to_stderr(args)
    finished = set()
    if args.checkpoint:
        from studies.qualify import finished_ranges

        finished = finished_ranges(args.checkpoint, policy, methods)
    with executor_from_args(args, args.n_jobs) as ex:
        def before_preparing(seconds: float, what: str) -> None:
            check_and_say_time(args, seconds, f"this qualification's {what}", say, on=ex.describe())

        estimate = qualify_estimate(methods, policy, ex.workers, finished, before_preparing)
        check_time(args, estimate.low, f"this qualification's first round (the whole run: {estimate.describe()})")
        resumed = f"; {len(finished)} tasks already in the checkpoint not counted" if finished else ""
        say(f"estimated {estimate.describe()} on {ex.describe()} (first round to every scenario at "
            f"{policy.max_replications:,} replications{resumed})")
        from studies.qualify import DeadlineReached

        try:
            run = qualify(methods, policy, executor=ex, out_dir=out_dir, progress=say, checkpoint=args.checkpoint,
                          deadline=deadline)
        except DeadlineReached as exc:
            kept = (f"the finished work is kept in --checkpoint {args.checkpoint}: run the same command again to go on"
                    if args.checkpoint else "no record was written (with --checkpoint DIR a stopped run keeps its "
                    "finished work and the next run goes on from it)")
            raise over_time(exc, "this qualification", kept) from None
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


def run_show(args: argparse.Namespace) -> None:
    given = [f for f, v in (("--method", args.method), ("--policy", args.policy), ("--out", args.out),
                            ("--n-jobs", None if args.n_jobs == 1 else args.n_jobs),
                            ("--max-seconds", args.max_seconds), ("--checkpoint", args.checkpoint)) if v is not None]
    if given:
        raise UsageError(f"{', '.join(given)} belong to a qualification run, not to `qualify show`", given[0])
    if Path(args.record).is_dir():
        raise UsageError(f"record {args.record} is a directory; give a record JSON file", "record")
    if not Path(args.record).exists():  # before the qualification code loads
        raise UsageError(f"no qualification record at {args.record}", "record")
    from studies import file_kind

    kind = file_kind(args.record)
    if kind in ("netcdf", "certificate", "theorem", "spec", "empty", "binary"):  # said as what it is, not a JSON error
        what = {"netcdf": "a netCDF dataset (a record's scenario data is its .nc; give the record's .json)",
                "certificate": "a certificate (simlab records coverage --certificate reads it)",
                "theorem": "a theorem record (simlab records verify checks it)", "spec": "a study spec",
                "empty": "an empty file", "binary": "not text"}[kind]
        raise UsageError(f"{args.record}: not a qualification record: {what}", "record")
    from methods.qualification import StaleRecordError, load_record

    png = Path(args.png) if args.png else Path(args.record).with_suffix(".png")
    check_plot_out(png, "--png", args.force)  # a .png, and not a user's other file (replaced a text file)
    stale = None
    try:
        record = load_record(args.record)
    except StaleRecordError as exc:
        if not args.allow_stale:
            raise UsageError(f"{exc} (pass --allow-stale to show it anyway)", "--allow-stale") from None
        stale = str(exc)
        record = load_record(args.record, check_current=False)
    from studies.plots import cell_rows, heatmap  # after the record is read: a wrong file answers without them
    from studies.qualify import summary_payload

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


def register(sub, bench_sub) -> None:
    p = sub.add_parser("qualify", help="qualify methods over a policy's domain; `qualify show RECORD`")
    p.add_argument("--method", help="registered method, comma-separated list, or 'all' (fixed-sample methods; "
                                    "sequential ones under a policy that declares looks)")
    p.add_argument("--policy", help=f"policy file (JSON or TOML) or a built-in name: {BUILT_IN_POLICIES}")
    p.add_argument("--n-jobs", type=n_jobs, default=1, help="worker processes (default %(default)s)")
    add_backend_arguments(p)
    add_max_seconds(p)
    p.add_argument("--out", type=nonempty_path, default=None,
                   help="output directory (default: the project's results/qualification)")
    p.add_argument("--checkpoint", type=nonempty_path, metavar="DIR", default=None,
                   help="keep finished work in DIR; run the same command again to resume a stopped "
                        "qualification (the records are identical to an uninterrupted run's)")
    add_json(p)
    p.set_defaults(func=run_qualify)
    qsub = p.add_subparsers(dest="qualify_command")
    s = qsub.add_parser("show", help="table and heat map of a qualification record")
    s.add_argument("record", help="record JSON file")
    s.add_argument("--png", type=nonempty_path, help="heat-map path (default: beside the record)")
    s.add_argument("--allow-stale", action="store_true", help="show a record whose method has changed")
    s.add_argument("--force", action="store_true", help="replace a --png file that is not a plot simlab drew")
    add_json(s)
    s.set_defaults(func=run_show)
