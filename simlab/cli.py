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
    Console().print(table)


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

# ---------------------------------------------------------------- studies commands

# ---------------------------------------------------------------- sequential commands

# ---------------------------------------------------------------- qualification / sizing commands

# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simlab", description=__doc__.splitlines()[0])
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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
