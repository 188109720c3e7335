"""``simlab bench gpu``: the study runner on a CUDA GPU against the CPU path and a CUDA C
limit kernel, measured in the same run (``--device`` itself is ``_args.add_device_option``)."""
from __future__ import annotations

import argparse


def cmd_bench_gpu(args: argparse.Namespace) -> None:
    import json
    from pathlib import Path

    from simlab import gpu
    from simlab.cli._output import UsageError, emit, jsonable, print_table

    if not gpu.available():  # this command has no --device for the library's "--device gpu" wording to name
        raise UsageError(f"bench gpu needs a CUDA GPU: {gpu.why_unavailable()}")
    import time

    from simlab.cli._args import LimitSteps, check_and_say_time
    from simlab.cli._output import log_to_stderr
    from studies.bench import bench_gpu

    say = log_to_stderr(args)
    step = LimitSteps(args, "bench gpu:", "nothing was reported")   # restarted once compiled, as no command
                                                                    # counts a first use's compiling

    def before_step(what: str) -> None:   # each row stops at the limit, not after it
        step(what)
        say(what)

    payload = bench_gpu(reps=args.reps, cpu_reps=args.cpu_reps, check_reps=args.check_reps,
                        limit_cupy=args.limit_cupy, n_jobs=args.n_jobs, seed=args.seed, repeat=args.repeat,
                        before_work=lambda s: check_and_say_time(args, time.perf_counter() - step.started + s,
                                                                 "bench gpu (after compiling its kernels)", say),
                        before_step=before_step, compiled=step.restart)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(jsonable(payload), indent=1) + "\n")

    def render(p: dict) -> None:
        eq = p["same_counts_as_cpu"]
        print(f"bench gpu on {p['machine']['gpu']}: counts identical to the CPU's for {eq['replications']:,} "
              f"replications (seed {eq['seed']}): {eq['identical']}; exact pass rate {p['exact_pass_rate']:.6f}")
        print_table(f"replications per second ({p['timing']})",
                    ["name", "threads", "replications", "seconds", "reps/s", "pass rate"],
                    [[r["name"], r["threads"] or "-", r["replications"], r["seconds"], r["replications_per_s"],
                      r["pass_rate"]] for r in p["rows"]])
        for k, v in p["ratios"].items():
            print(f"{k:30s} {v:10.2f}x")
        print(f"target >= 1e9 replications/s: {'met' if p['target_met'] else 'NOT met'}")

    emit(args, payload, render)


def register(sub, bench_sub) -> None:
    from simlab.cli._args import add_json, add_max_seconds, n_jobs, nonnegative_int, nonempty_path, positive_int

    p = bench_sub.add_parser("gpu", help="study runner on a GPU vs the CPU path and a CUDA C kernel")
    p.add_argument("--reps", type=positive_int, default=1 << 31, help="GPU replications per timed run (%(default)s)")
    p.add_argument("--cpu-reps", type=positive_int, default=32_000_000, help="CPU replications per core (%(default)s)")
    p.add_argument("--check-reps", type=positive_int, default=1 << 27,
                   help="replications whose counts are compared with the CPU's (%(default)s)")
    p.add_argument("--limit-cupy", help="path of limit_cupy.py (timed as a subprocess)")
    p.add_argument("--n-jobs", type=n_jobs, help="CPU cores for the all-cores row (default: all available)")
    p.add_argument("--repeat", type=positive_int, default=3, help="time each row this often, keep the fastest (%(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=1, help="random seed: the same seed gives the same replications (default %(default)s)")
    p.add_argument("--out", type=nonempty_path,
                   help="also write the JSON payload to this file (e.g. results/bench/gpu-h200.json)")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=cmd_bench_gpu)
