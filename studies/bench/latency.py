"""``simlab bench latency``: how long the interactive commands take, each in a fresh process
as a user runs them, beside the interpreter's own start-up measured in the same run.

Rows (issue 29.2's targets on two idle cores): ``simlab methods`` (<= 0.5 s), ``simlab
interval`` on one two-cluster experiment for each method asked for (<= 1 s), and one input
error of every command group (<= 1 s: each is refused before numpy, numba, scipy or xarray
load).  References: ``python -c pass`` (the floor of any command) and ``simlab --help``.

Each command runs once untimed first (the bytecode cache, which the console script stores,
and numba's kernel cache are then warm: the "warm" figure), then ``repeats`` times; a row
reports the median wall time, the median CPU time of the child (user + system: less
sensitive than wall time to other load on a shared machine), its ratio to the start-up
reference, and whether the median meets the target.  The exit code of every run is checked
(0, or 2 for an input error): a timing of the wrong outcome is no measurement.  The payload
says whether bytecode is stored for the installed packages and the load average around the
run, because both move these figures more than anything simlab does."""
from __future__ import annotations

import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

TABLES = ("--table", "3,1,0,6", "--table", "4,0,1,5")
CALIBRATION = ("--calibration", "45,5,3,47")  # one shared judge calibration set, for judge-corrected methods
METHODS = ("clustered_normal", "betting_ci")
TARGET_METHODS, TARGET_INTERVAL, TARGET_ERROR = 0.5, 1.0, 1.0
SPECS = Path(__file__).resolve().parents[1] / "specs"   # the shipped study specs

# one input error of every command group: (label, argv); each must exit 2
INPUT_ERRORS = (
    ("interval: unknown method", ("interval", "--method", "no_such_method", *TABLES)),
    ("interval: unknown option", ("interval", "--method", "cluster_t", *TABLES, "--option", "bogus=1")),
    ("false-pass: unknown method", ("false-pass", "--method", "no_such_method")),
    ("false-pass: cells not summing to 1", ("false-pass", "--method", "cluster_t", "--cells", "0.5,0.5,0.5,0.5")),
    ("certify: unknown method", ("certify", "--method", "no_such_method", "--clusters", "30", "--margin", "0.03")),
    ("calibrate: unknown method", ("calibrate", "--method", "no_such_method", "--clusters", "30", "--margin",
                                   "0.03")),
    ("size: difference under the null", ("size", "--method", "cluster_t", "--margin", "0.03",
                                         "--true-difference", "-0.05")),
    ("recommend: difference under the null", ("recommend", "--clusters", "100", "--trials", "3", "--margin", "0.03",
                                              "--rho-max", "0.1", "--true-difference", "-0.05")),
    ("robustness: unknown method", ("robustness", "--method", "no_such_method", "--clusters", "30", "--trials", "3",
                                    "--margin", "0.03")),
    ("judge-study: unknown method", ("judge-study", "--methods", "no_such_method")),
    ("qualify: unknown method", ("qualify", "--method", "no_such_method")),
    ("qualify show: missing record", ("qualify", "show", "missing.json")),
    ("records coverage: unknown method", ("records", "coverage", "--method", "no_such_method", "--clusters", "30",
                                          "--margin", "0.03")),
    ("simulate: cells not summing to 1", ("simulate", "--cells", "0.5,0.5,0.5,0.5")),
    ("study run: missing spec", ("study", "run", "missing.toml")),
    ("study show: missing dataset", ("study", "show", "missing.nc")),
    ("sequential simulate: unknown method", ("sequential", "simulate", "--methods", "no_such_method")),
    ("sequential run: missing spec", ("sequential", "run", "missing.toml")),
    ("sequential analyze: unknown method", ("sequential", "analyze", "--method", "no_such_method", *TABLES)),
    ("evidence run: missing manifest", ("evidence", "run", "--manifest", "missing.json", "--trials", "missing.jsonl",
                                        "--out", "packet.json")),
    ("evidence replay: missing packet", ("evidence", "replay", "missing.json")),
    ("compare: missing manifest", ("compare", "a.jsonl", "b.jsonl", "--manifest", "missing.json")),
    ("bench methods: unknown method", ("bench", "methods", "--methods", "no_such_method")),
    ("certify: --engine exact over the exact states", ("certify", "--method", "paired_wald", "--clusters", "300",
                                                       "--trials", "300", "--margin", "0.03", "--engine", "exact")),
    ("certify: --engine exact, refused by the method's probe", ("certify", "--method", "cluster_t", "--clusters",
                                                                "30", "--trials", "3", "--margin", "0.03",
                                                                "--engine", "exact")),
    ("study run: --device gpu with table methods", ("study", "run", str(SPECS / "power-30x1.toml"), "--device",
                                                   "gpu", "--out", "o.nc")),
)


def simlab_command() -> list[str]:
    """The ``simlab`` console script beside this interpreter (what a user runs), else the same
    entry point through ``-c``."""
    script = Path(sys.executable).with_name("simlab")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from simlab.cli import main; sys.exit(main())"]


def bytecode_stored() -> dict[str, bool]:
    """Whether a bytecode file sits beside the sources of the heavy packages (found without
    importing them)."""
    out = {}
    for name in ("numpy", "numba", "scipy.stats", "simlab.cli"):
        spec = importlib.util.find_spec(name)
        origin = getattr(spec, "origin", None)
        out[name] = bool(origin) and Path(importlib.util.cache_from_source(origin)).is_file()
    return out


def _run(argv: list[str], cwd: str) -> tuple[float, float, int, str]:
    """(wall s, child CPU s, exit code, last stderr line) of one run in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    err = done.stderr.strip().splitlines()
    return wall, cpu, done.returncode, err[-1] if err else ""


def _row(label: str, argv: list[str], expect: int, target: float | None, repeats: int, cwd: str,
         before_run: Callable[[str], None] = lambda label: None) -> dict:
    _run(argv, cwd)  # untimed: stores bytecode and loads (or compiles) the kernels once
    walls, cpus = [], []
    for _ in range(repeats):
        before_run(label)
        wall, cpu, rc, err = _run(argv, cwd)
        if rc != expect:
            raise RuntimeError(f"bench latency {label!r}: exit code {rc}, expected {expect}: {err}")
        walls.append(wall)
        cpus.append(cpu)
    wall = statistics.median(walls)
    return {"label": label, "command": " ".join(argv), "exit_code": expect, "runs": repeats,
            "wall_s": wall, "wall_min_s": min(walls), "cpu_s": statistics.median(cpus), "target_s": target,
            "meets_target": None if target is None else wall <= target, "message": err if expect else ""}


def _calibration(method: str) -> tuple[str, ...]:
    """A judge-corrected method's interval needs a calibration set (``methods.judged``)."""
    from methods import info

    return CALIBRATION if "judge_calibration" in info(method).inputs else ()


def bench_latency(methods: tuple[str, ...] = METHODS, repeats: int = 3, errors: bool = True,
                  progress: Callable[[str], None] = lambda message: None,
                  before_commands: Callable[[float], None] | None = None,
                  before_each: Callable[[str], None] | None = None) -> dict:
    """Time the interactive commands in fresh processes (module docstring).  Before any row,
    one run of ``simlab --help`` prices the rest: ``before_commands(seconds)`` is told what they
    will take at least (every run at that run's time; it may raise to refuse), and
    ``before_each(label)`` is told before each command and each of its timed runs (it may raise
    to stop at a time limit)."""
    simlab = simlab_command()
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="simlab-bench-latency-") as cwd:  # nothing lands in the project
        cases = [("reference: python -c pass", [sys.executable, "-c", "pass"], 0, None),
                 ("reference: simlab --help", [*simlab, "--help"], 0, None),
                 ("simlab methods", [*simlab, "methods"], 0, TARGET_METHODS)]
        cases += [(f"simlab interval --method {m} (2 clusters)", [*simlab, "interval", "--method", m, *TABLES,
                                                                   *_calibration(m)], 0, TARGET_INTERVAL)
                  for m in methods]
        if errors:
            cases += [(f"input error, {label}", [*simlab, *argv], 2, TARGET_ERROR) for label, argv in INPUT_ERRORS]
        if before_commands is not None:   # every run but python's own starts simlab: at least --help's time
            one = _run([*simlab, "--help"], cwd)[0]
            before_commands((len(cases) - 1) * (repeats + 1) * one)
        check = before_each if before_each is not None else (lambda label: None)
        for label, argv, expect, target in cases:
            check(label)
            progress(label)
            rows.append(_row(label, argv, expect, target, repeats, cwd, check))
    floor = rows[0]["wall_s"]
    for r in rows:
        r["over_python_startup"] = r["wall_s"] / floor if floor > 0 else float("nan")
    targeted = [r for r in rows if r["target_s"] is not None]
    return {"rows": rows, "repeats": repeats, "command": simlab, "cpu_count": os.cpu_count(),
            "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
            "bytecode_stored": bytecode_stored(),
            "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
            "simlab_write_bytecode": os.environ.get("SIMLAB_WRITE_BYTECODE", "1"),
            "targets_met": sum(bool(r["meets_target"]) for r in targeted), "targets": len(targeted)}


__all__ = ["INPUT_ERRORS", "bench_latency", "bytecode_stored", "simlab_command"]
