"""``simlab bench <x>``: speed benchmarks against references measured in the same run.
Each subcommand calls one library benchmark and renders its rows."""
from __future__ import annotations

import argparse
import time

from simlab.cli._args import (
    LimitSteps,
    add_json,
    add_max_memory,
    add_max_seconds,
    check_and_say_time,
    check_memory,
    check_methods,
    check_time,
    time_limit,
    n_jobs,
    nonnegative_int,
    positive_float,
    positive_int,
)
from simlab.cli._output import UsageError, emit, log_to_stderr, print_table


SIMULATE_CHUNK = 65_536  # replications the engine generates at a time
NUMPY_CHUNK = 20_000     # replications the numpy reference draws at a time


def check_memory_of(args: argparse.Namespace, need_bytes: float, what: str, flag: str) -> None:
    """:func:`check_memory`, the refusal naming ``flag`` (the size that asks for the memory)."""
    try:
        check_memory(args, need_bytes, what)
    except UsageError as exc:
        raise UsageError(f"{flag}: {exc}", flag) from None


def run_bench_simulate(args: argparse.Namespace) -> None:
    from studies.bench import bench_simulate, bench_simulate_estimate
    from simlab.cli.simulate import simulate_memory

    # both sides stream in chunks: what is held at once is a chunk, not every replication
    held = max(min(args.reps, SIMULATE_CHUNK), min(args.numpy_reps, NUMPY_CHUNK))
    check_memory(args, simulate_memory(held, 30), f"bench simulate ({held:,} replications held in memory at once)")
    say = log_to_stderr(args)
    say("estimating (a short pilot of the engine and the numpy reference) ...")
    estimate = bench_simulate_estimate(reps=args.reps, numpy_reps=args.numpy_reps, memory_reps=args.memory_reps,
                                       chunk_size=SIMULATE_CHUNK, numpy_chunk=NUMPY_CHUNK)
    check_and_say_time(args, estimate.low, f"bench simulate ({args.reps + args.memory_reps:,} engine and "
                                           f"{args.numpy_reps:,} numpy replications)", say)
    payload = bench_simulate(reps=args.reps, numpy_reps=args.numpy_reps, memory_reps=args.memory_reps,
                             progress=not args.json, chunk_size=SIMULATE_CHUNK, numpy_chunk=NUMPY_CHUNK,
                             log=lambda step: say(step + " ..."))

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


def run_bench_methods(args: argparse.Namespace) -> None:
    names = [n.strip() for n in args.methods.split(",") if n.strip()] if args.methods else None
    if names:
        check_methods(names, "--methods", "fixed")  # before the benchmark's kernels load
    from studies.bench import bench_methods, bench_methods_plan

    from methods import names as registered

    say = log_to_stderr(args)
    count = len(names) if names else len(registered("fixed"))
    limit = time_limit(args)
    plan = bench_methods_plan(count, args.method_seconds, args.reference_seconds, limit)
    if plan["least"] > limit:
        check_time(args, plan["least"], f"bench methods ({count} methods, each timed at least "
                                        f"{plan['least'] / count:.2g} s)")
    cut = None
    if plan["cut"]:
        cut = (f"{count} methods at --method-seconds {args.method_seconds:g} and --reference-seconds "
               f"{args.reference_seconds:g} would take about {plan['asked_seconds'] / 60:.0f} min, over --max-seconds "
               f"{limit:g}: each kernel's timing cut to {plan['kernel_seconds']:.2g} s and each reference's to "
               f"{plan['reference_seconds']:.2g} s (raise --max-seconds or time fewer --methods for the full "
               "timings)")
        say(f"cut: {cut}")
    say(f"benchmarking {count} method(s): each kernel's timing is cut to about {plan['kernel_seconds']:.2g} s (its "
        f"pilot predicts) and each reference's to {plan['reference_seconds']:.2g} s, so about "
        f"{plan['seconds'] / 60:.1f} min at most, plus compiling (--max-seconds {limit:g} bounds the whole run)")
    payload = bench_methods(reps=args.reps, bootstrap_reps=args.bootstrap_reps,
                            reference_reps=args.reference_reps, names=names, seed=args.seed,
                            max_seconds=plan["kernel_seconds"], reference_seconds=plan["reference_seconds"],
                            total_seconds=0.95 * limit, progress=lambda step: say(step + " ..."))
    payload["cut"] = cut

    def render(p: dict) -> None:
        print(f"simlab bench methods: K={p['clusters']} clusters x {p['trials']} trials, rho={p['rho']}, "
              f"cells={p['cells']}, margin={p['margin']}, {p['numba_threads']} numba thread")
        print(f"{'method':<18} {'class':<11} {'replications':>14} {'decisions/s':>12} {'target/core':>15} "
              f"{'reference/s':>12} {'ref reps':>8} {'speed-up':>9}  check vs reference")
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
        if p.get("cut"):
            print(f"cut: {p['cut']}.")
        for r in p["rows"]:
            if r.get("replications_note"):
                print(f"* {r['method']}: {r['replications_note']}")

    emit(args, payload, render)


def run_bench_study(args: argparse.Namespace) -> None:
    from pathlib import Path

    from studies.bench import bench_study, bench_study_estimate

    if args.limit_kernel is not None and not Path(args.limit_kernel).is_file():
        raise UsageError(f"--limit-kernel: no such file {args.limit_kernel}", "--limit-kernel")
    say = log_to_stderr(args)
    say("estimating (pilots of the numpy and runner rows) ...")
    estimate = bench_study_estimate(reps=args.reps, numpy_reps=args.numpy_reps, n_jobs=args.n_jobs, seed=args.seed,
                                    repeat=args.repeat, fused=args.limit_kernel is not None)
    check_time(args, estimate.low, f"bench study ({args.reps:,} replications a row, best of {args.repeat})")
    say(f"bench study: estimated {estimate.describe()}")
    payload = bench_study(reps=args.reps, numpy_reps=args.numpy_reps, limit_kernel=args.limit_kernel,
                          n_jobs=args.n_jobs, seed=args.seed, repeat=args.repeat, progress=lambda s: say(s + " ..."))

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


def run_bench_sequential(args: argparse.Namespace) -> None:
    from studies.bench import bench_sequential, bench_sequential_estimate

    say = log_to_stderr(args)
    say("estimating (the exact part once, a pilot of the simulated part) ...")
    estimate = bench_sequential_estimate(reps=args.reps, repeats=args.repeats)
    check_time(args, estimate.low, f"bench sequential ({args.reps:,} replications, {args.repeats} repeats)")
    say(f"bench sequential: estimated {estimate.describe()}")
    payload = bench_sequential(reps=args.reps, repeats=args.repeats, progress=lambda s: say(s + " ..."))

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


def run_bench_qualify(args: argparse.Namespace) -> None:
    methods = tuple(n.strip() for n in args.method.split(",") if n.strip())
    if not methods:
        raise UsageError("--method: name at least one method", "--method")
    check_methods(methods, "--method")
    from studies.bench import bench_qualify, bench_qualify_estimate

    say = log_to_stderr(args)
    say("estimating (a pilot of the per-scenario engine) ...")

    def before_preparing(seconds: float, what: str) -> None:
        check_and_say_time(args, seconds, f"bench qualify's {what}", say)

    estimate = bench_qualify_estimate(policy=args.policy, methods=methods, rounds=args.rounds, n_jobs=args.n_jobs,
                                      before_preparing=before_preparing)
    what = "the whole qualification" if not args.rounds else f"{args.rounds} round(s) of the grid"
    check_time(args, estimate.low, f"bench qualify ({what}, per-scenario engine then batched; "
                                   f"the whole run: {estimate.describe()})")
    say(f"bench qualify: estimated {estimate.describe()}")
    payload = bench_qualify(policy=args.policy, methods=methods, rounds=args.rounds, n_jobs=args.n_jobs,
                            progress=say)

    def render(p: dict) -> None:
        print(f"qualify {', '.join(p['methods'])} under policy {p['policy']}: {p['workload']}; "
              f"n_jobs={p['n_jobs']}")
        print_table("qualification engines, same run, same workload",
                    ["path", "scenarios", "replications", "seconds", "reps/s"],
                    [[r["path"], r["scenarios"], r["replications"], r["seconds"], r["replications_per_s"]]
                     for r in p["rows"]])
        print(f"counts identical: {'yes' if p['identical'] else 'NO'}; batched vs per-scenario: {p['ratio']:.2f}x "
              f"(target >= {p['target_ratio']:g}: {'met' if p['meets_target'] else 'NOT met'})")

    emit(args, payload, render)


def run_bench_evidence(args: argparse.Namespace) -> int:
    """``simlab bench evidence``: a pilot on 20,000 trial pairs estimates time, disk and each
    stage process's memory first; a stage process that fails is one line naming it (exit 2)."""
    import shutil
    import tempfile

    from evidence import bench_evidence, render_bench

    say = log_to_stderr(args)
    ref_flag = "--reference-trials" if args.reference_trials else "--trials"

    def check(e: dict) -> None:
        free = shutil.disk_usage(tempfile.gettempdir()).free
        if e["file_bytes"] > 0.9 * free:
            raise UsageError(f"--trials {args.trials:,}: the experiment's JSONL file takes about "
                             f"{e['file_bytes'] / 1e9:.3g} GB, more than the {free / 1e9:.3g} GB free in "
                             f"{tempfile.gettempdir()}; lower --trials", "--trials")
        check_memory_of(args, e["simlab_bytes"], f"bench evidence's simlab process ({args.trials:,} trial pairs)",
                        "--trials")
        check_memory_of(args, e["reference_bytes"], f"bench evidence's reference process "
                        f"({args.reference_trials or args.trials:,} trial pairs)", ref_flag)
        check_and_say_time(args, e["seconds"], f"bench evidence ({args.trials:,} trials per arm)", say)

    say("estimating (a pilot on 20,000 trial pairs) ...")
    try:
        payload = bench_evidence(trials_per_arm=args.trials, clusters=args.clusters,
                                 reference_trials=args.reference_trials, check=check,
                                 progress=lambda step: say(step + " ..."))
    except ChildProcessError as exc:  # evidence.bench.BenchProcessFailed: a stage process failed
        kind = getattr(exc, "kind", "benchmark")
        flag = ref_flag if kind == "reference" else "--trials"
        peak = getattr(exc, "peak_rss_bytes", None)
        at = f" (peak {peak / 2**30:.2g} GiB)" if peak else ""
        if getattr(exc, "out_of_memory", False):
            raise UsageError(f"bench evidence: the {kind} benchmark process ran out of memory{at}; lower {flag} or "
                             "give it more memory", flag) from None
        raise UsageError(f"bench evidence: {exc}{at}", None) from None
    emit(args, payload, render_bench)
    return 0


def run_bench_evidence_inspect(args: argparse.Namespace) -> int:
    from evidence import bench_evidence_inspect, render_bench_inspect

    say = log_to_stderr(args)
    payload = bench_evidence_inspect(
        customers=args.customers, cases=args.cases, epochs=args.epochs, repeats=args.repeats, progress=say,
        check=lambda seconds: check_and_say_time(args, seconds, f"bench evidence-inspect ({args.customers} customers "
                                                 f"x {args.cases} cases x {args.epochs} epochs, {args.repeats} "
                                                 "repeats)", say))
    emit(args, payload, render_bench_inspect)
    return 0


def register_evidence_benches(bench_sub) -> None:
    """``simlab bench evidence`` and ``bench evidence-inspect`` (registered by the evidence
    command group, ``simlab/cli/evidence.py``, which calls this)."""
    p = bench_sub.add_parser("evidence", help="evidence path on 1,000,000 trials per arm vs a json+dict reference")
    p.add_argument("--trials", type=positive_int, default=1_000_000, help="trial records per arm (default %(default)s)")
    p.add_argument("--clusters", type=positive_int, default=20_000, help="independent clusters (default %(default)s)")
    p.add_argument("--reference-trials", type=positive_int, default=None,
                   help="trials per arm for the reference (default: the same)")
    add_max_seconds(p)
    add_max_memory(p)
    add_json(p)
    p.set_defaults(func=run_bench_evidence)

    p = bench_sub.add_parser("evidence-inspect", help="the Inspect route on logs `inspect eval` writes: compare and an "
                                                      "error exit, wall time in fresh processes, vs Inspect's reader")
    p.add_argument("--customers", type=positive_int, default=40, help="clusters (default %(default)s)")
    p.add_argument("--cases", type=positive_int, default=3, help="cases per customer (default %(default)s)")
    p.add_argument("--epochs", type=positive_int, default=3, help="epochs per case (default %(default)s)")
    p.add_argument("--repeats", type=positive_int, default=3, help="timed runs of each command (default %(default)s)")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_bench_evidence_inspect)


def run_bench_latency(args: argparse.Namespace) -> None:
    methods = tuple(n.strip() for n in args.methods.split(",") if n.strip())
    if not methods:
        raise UsageError("--methods: name at least one method", "--methods")
    check_methods(methods, "--methods", "fixed")
    from studies.bench import bench_latency

    say = log_to_stderr(args)
    step = LimitSteps(args, "bench latency:", "nothing was reported")
    payload = bench_latency(methods=methods, repeats=args.repeats, errors=not args.no_errors,
                            progress=lambda label: say(f"timing {label} ..."),
                            before_commands=lambda s: check_and_say_time(
                                args, time.perf_counter() - step.started + s, "bench latency (at least)", say),
                            before_each=lambda label: step(repr(label)))

    def render(p: dict) -> None:
        rows = [[r["label"], r["wall_s"], r["cpu_s"], r["over_python_startup"],
                 "-" if r["target_s"] is None else f"{r['target_s']:g}",
                 "-" if r["meets_target"] is None else ("met" if r["meets_target"] else "NOT met")] for r in p["rows"]]
        print_table(f"latency in fresh processes (median of {p['repeats']} warm runs)",
                    ["name", "wall s", "CPU s", "x python start-up", "target s", "target"], rows)
        load = p["load_average_1min"]
        stored = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in p["bytecode_stored"].items())
        print(f"{p['targets_met']}/{p['targets']} targets met; 1-minute load average {load['before']:.2f} before, "
              f"{load['after']:.2f} after, on {p['cpu_count']} cores (the targets are for idle cores)")
        print(f"bytecode stored: {stored}; PYTHONDONTWRITEBYTECODE {'set' if p['pythondontwritebytecode'] else 'unset'}"
              f", SIMLAB_WRITE_BYTECODE={p['simlab_write_bytecode']}")

    emit(args, payload, render)


def register(sub, bench_sub) -> None:
    # an error names the missing argument by this (its destination, bench_command, is internal)
    bench_sub.metavar = "benchmark"
    p = bench_sub.add_parser("latency", help="simlab methods, interval and an input error of every command, each in a "
                                             "fresh process, vs the interpreter's start-up")
    p.add_argument("--methods", default="clustered_normal,betting_ci",
                   help="comma-separated fixed methods to time `simlab interval` with (default %(default)s)")
    p.add_argument("--repeats", type=positive_int, default=3,
                   help="timed runs of each command after one untimed warm-up run (default %(default)s)")
    p.add_argument("--no-errors", action="store_true", help="skip the input-error rows")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_bench_latency)

    p = bench_sub.add_parser("simulate", help="generator speed vs a numpy-vectorised DGM")
    p.add_argument("--reps", type=positive_int, default=2_000_000,
                   help="replications the numba generator simulates, streamed in batches (default %(default)s)")
    p.add_argument("--numpy-reps", type=positive_int, default=200_000,
                   help="replications of the numpy-vectorised reference (default %(default)s)")
    p.add_argument("--memory-reps", type=nonnegative_int, default=0,
                   help="also stream this many replications and report peak memory (e.g. 100000000)")
    add_max_seconds(p)
    add_max_memory(p)
    add_json(p)
    p.set_defaults(func=run_bench_simulate)

    p = bench_sub.add_parser("methods", help="decisions/s of every fixed method vs its slow reference")
    p.add_argument("--reps", type=positive_int, default=1_000_000, help="replications per method (default %(default)s)")
    p.add_argument("--bootstrap-reps", type=positive_int, default=20_000,
                   help="replications for bootstrap methods (default %(default)s)")
    p.add_argument("--reference-reps", type=positive_int, default=2_000,
                   help="replications for the per-replication reference (default %(default)s)")
    p.add_argument("--method-seconds", type=positive_float, default=60.0,
                   help="reduce a method's replications when a pilot predicts more kernel time than this, per method "
                        "(default %(default)s; cut further, and said, when the methods would not fit --max-seconds)")
    p.add_argument("--reference-seconds", type=positive_float, default=10.0,
                   help="time budget of each reference run (default %(default)s; cut like --method-seconds)")
    add_max_seconds(p)
    p.add_argument("--methods", default="", help="comma-separated subset (default: every fixed method)")
    p.add_argument("--seed", type=nonnegative_int, default=1, help="random seed: the same seed gives the same replications (default %(default)s)")
    add_json(p)
    p.set_defaults(func=run_bench_methods)

    p = bench_sub.add_parser("study", help="study runner vs numpy and the fused limit kernel")
    p.add_argument("--reps", type=positive_int, default=32_000_000,
                   help="replications of the runner and fused-kernel rows (default %(default)s)")
    p.add_argument("--numpy-reps", type=positive_int, default=400_000,
                   help="replications of the numpy row (default %(default)s)")
    p.add_argument("--limit-kernel", help="path of limit_bench.py (its cpu_ser / cpu_par are timed too)")
    p.add_argument("--n-jobs", type=n_jobs, help="cores for the all-cores run (default: all available)")
    p.add_argument("--repeat", type=positive_int, default=3,
                   help="time each row this often, keep the fastest (%(default)s)")
    p.add_argument("--seed", type=nonnegative_int, default=1, help="random seed: the same seed gives the same replications (default %(default)s)")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_bench_study)

    p = bench_sub.add_parser("sequential", help="exact enumeration time and simulated replication-looks/s")
    p.add_argument("--reps", type=positive_int, default=200_000,
                   help="replications of the simulated sequential rows (default %(default)s)")
    p.add_argument("--repeats", type=positive_int, default=5,
                   help="time each row this often, keep the fastest (default %(default)s)")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_bench_sequential)

    p = bench_sub.add_parser("qualify", help="batched vs per-scenario qualification engine, same workload")
    p.add_argument("--policy", default="standard",
                   help="built-in policy name or policy file (JSON or TOML) (default %(default)s)")
    p.add_argument("--method", default="clustered_normal", help="comma-separated methods (default %(default)s)")
    p.add_argument("--rounds", type=nonnegative_int, default=1,
                   help="replication rounds of the grid, no refinement; 0: the whole qualification "
                        "(default %(default)s)")
    p.add_argument("--n-jobs", type=n_jobs, default=1, help="worker processes of both engines (default %(default)s)")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_bench_qualify)
