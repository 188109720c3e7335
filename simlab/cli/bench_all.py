"""``simlab bench all``: every sub-benchmark once, one table, JSON under results/bench/."""
from __future__ import annotations

import argparse
import sys

from simlab.cli._args import add_json, checked, n_jobs, nonempty_path


def cmd_bench_all(args: argparse.Namespace) -> None:
    from simlab.cli._output import emit, print_table
    from studies.bench import bench_all

    progress = None if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    payload = bench_all(scale=args.scale, limit_kernel=args.limit_kernel, n_jobs=args.n_jobs,
                        out_dir=None if args.no_save else args.out, progress=progress)

    def render(p: dict) -> None:
        from rich.markup import escape

        print_table(f"simlab bench all on {p['machine']} ({p['cpu_count']} cores, load {p['load_average_1min']:.2f})",
                    ["workload", "unit", "simlab", "reference", "reference is", "ratio"],
                    [[escape(r["workload"]), r["unit"], _num(r["simlab"]), _num(r["reference"]),
                      escape(r["reference_name"] or "-"),
                      "-" if r["ratio"] is None else f"{r['ratio']:.3g}x"] for r in p["rows"]])
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
    add_json(p)
    p.set_defaults(func=cmd_bench_all)
