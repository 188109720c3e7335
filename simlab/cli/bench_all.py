"""``simlab bench all``: every sub-benchmark once, one table, JSON under results/bench/."""
from __future__ import annotations

import argparse

from simlab.cli._args import (add_json, add_max_seconds, check_time, checked, n_jobs, nonempty_path,
                             time_limit)


def cmd_bench_all(args: argparse.Namespace) -> None:
    from simlab.cli._output import emit, log_to_stderr, print_table
    from studies.bench import bench_all, bench_all_estimate

    say = log_to_stderr(args)
    say("estimating (each benchmark's pilot, cheapest first; the methods from their timing budgets) ...")
    limit = time_limit(args)
    plan = bench_all_estimate(scale=args.scale, limit_kernel=args.limit_kernel, n_jobs=args.n_jobs,
                              stop_over=0.95 * limit)
    estimate = plan["estimate"]
    check_time(args, estimate.low, f"bench all at --scale {args.scale:g} (lower --scale for a shorter run)")
    cut = None
    if plan["methods_cut"]:
        cut = (f"to fit --max-seconds {limit:g}, each method's kernel timing is cut to "
               f"{plan['methods_kernel_seconds']:.2g} s and each reference's to "
               f"{plan['methods_reference_seconds']:.2g} s (raise --max-seconds for the full timings)")
        say(f"cut: {cut}")
    say(f"bench all: estimated {estimate.describe()} (the methods at most their timing budgets)")
    payload = bench_all(scale=args.scale, limit_kernel=args.limit_kernel, n_jobs=args.n_jobs,
                        out_dir=None if args.no_save else args.out, progress=say,
                        methods_seconds=plan["methods_seconds"])
    payload["cut"] = cut

    def render(p: dict) -> None:
        from rich.markup import escape

        print_table(f"simlab bench all on {p['machine']} ({p['cpu_count']} cores, load {p['load_average_1min']:.2f})",
                    ["workload", "unit", "simlab", "reference", "reference is", "ratio"],
                    [[escape(r["workload"]), r["unit"], _num(r["simlab"]), _num(r["reference"]),
                      escape(r["reference_name"] or "-"),
                      "-" if r["ratio"] is None else f"{r['ratio']:.3g}x"] for r in p["rows"]])
        if p.get("cut"):
            print(f"cut: {p['cut']}")
        if p.get("file"):
            print(f"wrote {p['file']}  ({p['seconds']:.0f} s)")

    emit(args, payload, render)


def _num(v) -> str:
    return "-" if v is None else f"{v:.4g}"


def register(subparsers, bench_subparsers) -> None:
    p = bench_subparsers.add_parser("all", help="every benchmark once; one table (simlab vs reference, same run)")
    p.add_argument("--scale", type=checked(float, lambda v: 0 < v <= 1, "in (0, 1]"), default=1.0,
                   help="fraction of every benchmark's default size, in (0, 1] (default %(default)s)")
    p.add_argument("--limit-kernel", help="limit_bench.py to time as the fused reference "
                                          "(default: ../shared/bench/limit_bench.py when present)")
    p.add_argument("--n-jobs", type=n_jobs, help="cores for the all-cores study rows (default: all available)")
    p.add_argument("--out", type=nonempty_path, default="results/bench",
                   help="folder of the JSON table, one file per machine (default %(default)s)")
    p.add_argument("--no-save", action="store_true", help="print only; write no file")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=cmd_bench_all)
