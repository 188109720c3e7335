"""``simlab demo``: the seed's findings, exactly and by simulation; the methods compared; what a
gate can do at the seed's design and at 100 x 3 (``studies.study_demo``)."""
from __future__ import annotations

import argparse
import math

from simlab.cli._args import (LimitSteps, add_json, add_max_seconds, check_and_say_time, checked, nonnegative_int,
                             nonempty_path)

# the demo shows and has no time estimate; `study run` measures at any scale, priced before it starts
DEMO_REPS = checked(int, lambda v: 1 <= v <= 1_000_000, "an integer >= 1 and at most 1,000,000 (the demo shows; "
                    "`simlab study run` measures at any scale)")
from simlab.cli._output import emit, log_to_stderr, print_table


def _render(p: dict) -> None:
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
    print(f"\n3. Methods at the seed's design point: {c['design']}; nominal one-sided level "
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
    print("\n4. Recommendation at this design (simlab recommend --clusters 30 --trials 3 --margin 0.03 "
          "--rho-max 0.1)")
    from simlab.cli.recommend import render_recommendation
    render_recommendation(p["recommend"])
    _render_designs(p["designs"], p["power_curve"])
    f_ = p["files"]
    print(f"\nwrote {f_['dataset']}, {f_['plot']} and {f_['power_plot']}  ({p['seconds']:.1f} s)")


def _rate(r: dict | None) -> str:
    if r is None:
        return "not run"
    return f"{r['value']:.4f} ± {r['mc_se']:.4f}" + ("" if r.get("exact") is None else f" (exact {r['exact']:.4f})")


def _guarantee(r: dict) -> str:
    """A short guarantee column (the full text, with the file names, is in --json)."""
    if r["kind"] == "theorem":
        return "theorem, record current" if r["theorem_record"]["covered"] else "theorem; record not usable here"
    if r["kind"] == "calibrated":
        return f"certified at this design ({r['calibration']['engine']})"
    return "not certified here" if r["kind"] == "uncalibrated" else "uncertified"


def _render_designs(d: dict, curve: dict) -> None:
    a = d["alternative"]
    lim = d["distribution_free_limit"]
    print(f"\n5. What a gate can do (margin {d['margin']:g}, alpha {d['alpha']:g}, rho_max {d['rho_max']:g}): power at "
          f"true difference {a['difference']:g} (baseline {a['baseline']:g}, discordance {a['discordance']:g}, rho "
          f"{a['rho']:g}) and false pass, the same {d['replications']:,} simulated tables for every method.\n"
          f"   Distribution-free limit: K >= {lim['clusters']} ({lim['rule']}).  False pass at the corner: "
          f"discordance = margin, the candidate never wins a discordant pair, rho = rho_max (simulated).")
    for g in d["designs"]:
        rows = []
        for r in g["rows"]:
            cert = r["false_pass_certified"]
            certified = (f"{cert['worst_rate']:.4f} (bound {cert['worst_upper']:.4f}, {cert['engine']})" if cert
                         else f"<= {d['alpha']:g} (theorem)" if r["kind"] == "theorem" else "-")
            name = r["method"] + (" *" if r.get("best_by_theorem") else "")
            rows.append([name, r["kind"], _rate(r["power"]), certified, _rate(r["false_pass_worst_corner"]),
                         _guarantee(r) + (f"; {r['not_run']}" if r.get("not_run") else "")])
        below = "" if g["limit_reached"] else f"; below the distribution-free limit {g['distribution_free_limit']}"
        print_table(f"{g['label']} (K = {g['clusters']}{below}); * = best valid by theorem",
                    ["method", "kind", "power ± MC SE", "certified worst false pass", "false pass at corner",
                     "guarantee"], rows)
    print(f"\n   power against K at M = {curve['trials']} ({curve['replications']:,} tables per K):")
    print_table("", ["series", *[str(k) for k in curve["clusters"]]],
                [[s["label"], *[next((f"{p:.3f}" for k2, p in zip(s["clusters"], s["power"]) if k2 == k), "-")
                                for k in curve["clusters"]]] for s in curve["series"]])
    skipped: dict[str, list[dict]] = {}
    for n in curve.get("not_run", []):
        skipped.setdefault(n["series"], []).append(n)
    for series, points in skipped.items():   # one line per series: the reason repeats per K
        ks = ", ".join(str(n["clusters"]) for n in points)
        print(f"   - {series} at K = {ks}: {points[0]['why']}" + (" (at the first; more at larger K)"
                                                                   if len(points) > 1 else ""))


def run_demo_command(args: argparse.Namespace) -> None:
    import multiprocessing

    from evidence import render_demo, run_demo as evidence_demo
    from simlab.cli.study import check_writable
    from studies import study_demo

    import time
    from pathlib import Path

    from simlab.cli.study import check_plot_out, refuse_foreign_file

    started = time.perf_counter()
    check_writable(f"{args.out}/demo.nc", "--out")
    # the files it writes are not a user's files of the same names (replaced only with --force)
    refuse_foreign_file(Path(args.out) / "demo.nc", "--out", args.force, kind="demo")
    for png in ("demo.png", "power_k.png"):
        check_plot_out(Path(args.out) / png, "--out", args.force)
    # two worker processes share the work: one for study_demo (it says what), one for the
    # evidence path, independent of the rest (in a temporary folder: it holds a demo signing
    # key).  Leaving the block ends them, also on an error or Ctrl-C.
    say = log_to_stderr(args)
    from studies import demo_floor_seconds   # the least it can take, before anything runs

    check_and_say_time(args, demo_floor_seconds(args.reps, args.reps, full=args.full),
                       "the demo's simulations (their declared costs; start-up and loading kernels come on top)", say)
    spawn = multiprocessing.get_context("spawn")
    with spawn.Pool(1) as evidence_worker, spawn.Pool(1) as worker:
        evidence = evidence_worker.apply_async(evidence_demo)

        def before_designs(seconds: float) -> None:
            so_far = time.perf_counter() - started   # the fixed sections before it count against the limit too
            check_and_say_time(args, so_far + seconds, f"the demo: {so_far:.0f} s so far, then the designs' "
                                                       f"comparison ({args.reps:,} tables per design, scenario and "
                                                       "method)", say)

        step = LimitSteps(args, "the demo:", "nothing was written")   # the fixed sections stop at the limit too
        step.started = started

        def before_step(what: str) -> None:
            step(what[:1].lower() + what[1:])

        payload = study_demo(out_dir=args.out, replications=args.reps, design_replications=args.reps,
                             seed=args.seed, full=args.full, progress=say, background=worker,
                             before_designs=before_designs, before_step=before_step)
        payload["evidence"] = evidence.get()
    emit(args, payload, lambda p: (_render(p), print("\n6. The evidence path on built-in synthetic experiments:"),
                                   render_demo(p["evidence"])))


def register(sub, bench_sub) -> None:
    p = sub.add_parser("demo", help="the seed's findings, exactly and by simulation; the methods compared; what a "
                                    "gate can do at 30 x 1 and 100 x 3")
    p.add_argument("--out", type=nonempty_path, default="simlab-out/demo",
                   help="folder for the dataset and plot (default %(default)s)")
    p.add_argument("--reps", type=DEMO_REPS, default=10_000,
                   help="replications per scenario of the method comparison and per design of the gate comparison "
                        "(default %(default)s, at most 1,000,000: the demo shows, `study run` measures at any scale; "
                        "the MC SE of every simulated figure is printed)")
    p.add_argument("--seed", type=nonnegative_int, default=20261129,
                   help="random seed: the same seed gives the same replications (default %(default)s)")
    p.add_argument("--full", action="store_true",
                   help="compare every registered method (not only the ones the story needs) and certify / calibrate "
                        "on demand in the recommendation (slow: minutes, most of it compiling kernels)")
    p.add_argument("--force", action="store_true",
                   help="replace demo.nc, demo.png and power_k.png in --out even when they are not files simlab "
                        "wrote")
    add_max_seconds(p)
    add_json(p)
    p.set_defaults(func=run_demo_command)
