"""``simlab bench evidence-inspect``: the Inspect route on logs ``inspect eval`` writes.

Two logs (default 40 customers x 3 cases x 3 epochs = 360 samples per arm, 720 trials),
written by ``inspect eval`` with the mockllm provider and the offline example task
(``evidence.adapters.inspect_example_task``), then, each in a fresh process and timed by
wall clock:

- ``simlab compare`` on the two logs (manifest, population, the full receipt);
- an error exit: the same command with a scorer the logs do not have (exit 2);
- the reference, measured in the same run: Inspect's own reader, ``inspect_ai.log.
  read_eval_log`` on both logs in a fresh process (what the route cost before, reading
  alone).

Python compiles every module it imports unless a bytecode cache exists; this environment
may forbid writing one (``PYTHONDONTWRITEBYTECODE``).  Both conditions are measured: as the
environment is, and with a bytecode cache in a private folder (``PYTHONPYCACHEPREFIX``,
warmed by one untimed run), as after a normal ``pip install``."""
from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASK = Path(__file__).with_name("adapters") / "inspect_example_task.py"


def _inspect(arm: str, out: Path, manifest_hash: str, customers: int, cases: int, epochs: int) -> Path:
    exe = Path(sys.executable).with_name("inspect")
    cmd = [str(exe), "eval", f"{TASK}@support", "-T", f"arm={arm}", "-T", f"customers={customers}",
           "-T", f"cases={cases}", "-T", f"epochs={epochs}", "--model", f"mockllm/{arm}", "--log-dir", str(out),
           "--display", "none", "--metadata", f"simlab_manifest_sha256={manifest_hash}"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=1800)
    (log,) = out.glob("*.eval")
    return log


def _timed(cmd, env: dict, repeats: int) -> dict:
    """Wall seconds of ``cmd`` (a list, or a callable giving a fresh one each run) in fresh processes."""
    walls, rc, err = [], None, ""
    for _ in range(repeats):
        argv = cmd() if callable(cmd) else cmd
        t0 = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
        walls.append(time.perf_counter() - t0)
        rc, err = done.returncode, done.stderr
    return {"median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls), "runs": repeats,
            "exit_code": rc, "stderr_tail": err.strip().splitlines()[-1:] if err.strip() else []}


def write_inputs(folder: Path, customers: int, cases: int, epochs: int, progress) -> dict:
    """Manifest, population and the two logs for the benchmark."""
    from .population import identity
    from .synthetic import demo_manifest

    clusters = {f"case{c * cases + j}": f"cust{c}" for c in range(customers) for j in range(cases)}
    (folder / "population.jsonl").write_text("".join(json.dumps({"case_id": k, "cluster_id": v}) + "\n"
                                                     for k, v in clusters.items()))
    created = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(minutes=1)
    arms = {a: {"model": f"mockllm/{a}", "task": "support", "task_args": {"arm": a}} for a in ("baseline", "candidate")}
    manifest = demo_manifest(repetitions=epochs, minimum_clusters=min(30, customers), created=created,
                             arms=arms, model_id="mockllm/candidate", population_hash=identity(clusters),
                             dataset={"name": None, "location": None, "samples": customers * cases})
    (folder / "manifest.json").write_text(json.dumps(manifest.canonical()))
    logs = {}
    for arm in ("baseline", "candidate"):
        progress(f"inspect eval ({arm}, {customers * cases} samples x {epochs} epochs)")
        logs[arm] = _inspect(arm, folder / arm, manifest.sha256, customers, cases, epochs)
    return logs


# The cost model of a run, measured on a 2-core x86-64 Linux machine under load (the defaults:
# 138 s): ``inspect eval`` 27-37 s an arm at 360 samples x epochs; each timed round (compare,
# the error exit, Inspect's reader; fresh processes) 5-9 s at 720 trials; the bytecode cache's
# warm-up about 10 s.
INSPECT_EVAL_SECONDS = 20.0
INSPECT_EVAL_SECONDS_PER_SAMPLE = 0.03
ROUND_SECONDS = 8.0
ROUND_SECONDS_PER_TRIAL = 0.004
WARM_SECONDS = 10.0


def estimate_seconds(customers: int, cases: int, epochs: int, repeats: int) -> float:
    """Wall seconds of :func:`bench_evidence_inspect` from the cost model above: two ``inspect
    eval`` runs, then two conditions of ``repeats`` timed rounds, and the cache's warm-up."""
    samples = customers * cases * epochs
    trials = 2 * samples
    return (2 * (INSPECT_EVAL_SECONDS + INSPECT_EVAL_SECONDS_PER_SAMPLE * samples)
            + 2 * repeats * (ROUND_SECONDS + ROUND_SECONDS_PER_TRIAL * trials) + WARM_SECONDS)


def bench_evidence_inspect(*, customers: int = 40, cases: int = 3, epochs: int = 3, repeats: int = 3,
                  progress=lambda message: None, check=None) -> dict:
    """``check(seconds)`` is given :func:`estimate_seconds` before any work (it may raise to
    refuse)."""
    if check is not None:
        check(estimate_seconds(customers, cases, epochs, repeats))
    folder = Path(tempfile.mkdtemp(prefix="simlab-bench-inspect-"))
    logs = write_inputs(folder, customers, cases, epochs, progress)
    simlab = [sys.executable, "-c", "import sys; from simlab.cli import main; sys.exit(main(sys.argv[1:]))"]
    common = ["compare", str(logs["baseline"]), str(logs["candidate"]), "--manifest", str(folder / "manifest.json"),
              "--cluster-field", "customer", "--population", str(folder / "population.jsonl")]
    reference = [sys.executable, "-c", "import sys; from inspect_ai.log import read_eval_log; "
                                       "[read_eval_log(p) for p in sys.argv[1:]]", str(logs["baseline"]),
                 str(logs["candidate"])]
    conditions = {}
    for condition in ("environment", "bytecode_cache"):
        env = dict(os.environ)
        if condition == "bytecode_cache":
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
            for cmd in (simlab + common + ["--out", str(folder / "warm" / "p.json")], reference):
                subprocess.run(cmd, capture_output=True, env=env, timeout=1800)  # warm the cache, untimed
        progress(f"timing ({condition}): {repeats} run(s) each of compare, the error exit and Inspect's reader")
        runs = {}
        outs = iter(range(10 ** 6))
        ok_cmd = lambda: simlab + common + ["--out", str(folder / condition / f"p{next(outs)}.json")]  # noqa: E731
        runs["compare"] = _timed(ok_cmd, env, repeats)
        runs["error_exit"] = _timed(simlab + common + ["--score", "no_such_scorer", "--out",
                                                       str(folder / condition / "never.json")], env, repeats)
        runs["reference_read_eval_log"] = _timed(reference, env, repeats)
        runs["reference_over_compare"] = runs["reference_read_eval_log"]["median_s"] / runs["compare"]["median_s"]
        for key, codes in (("compare", (0, 1)), ("error_exit", (2,)), ("reference_read_eval_log", (0,))):
            if runs[key]["exit_code"] not in codes:  # a timing of the wrong outcome is no measurement
                raise RuntimeError(f"bench {key}: exit code {runs[key]['exit_code']}, expected {codes}: "
                                   f"{' '.join(runs[key]['stderr_tail'])}")
        conditions[condition] = runs
    return {"customers": customers, "cases": cases, "epochs": epochs, "trials": 2 * customers * cases * epochs,
            "cpus": os.cpu_count(), "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
            "folder": str(folder), "conditions": conditions}


def render_bench_inspect(p: dict) -> None:
    print(f"Inspect route: {p['customers']} customers x {p['cases']} cases x {p['epochs']} epochs per arm "
          f"({p['trials']} trials), {p['cpus']} CPUs; wall seconds in fresh processes (median of runs)")
    for name, runs in p["conditions"].items():
        label = {"environment": "as the environment is" + (" (no bytecode cache: PYTHONDONTWRITEBYTECODE)"
                                                            if p["pythondontwritebytecode"] else ""),
                 "bytecode_cache": "with a warm bytecode cache"}[name]
        print(f"  {label}:")
        for key, what in (("compare", "simlab compare (full receipt)"), ("error_exit", "error exit (unknown scorer)"),
                          ("reference_read_eval_log", "reference: inspect_ai read_eval_log, both logs")):
            r = runs[key]
            print(f"    {what:<52} {r['median_s']:6.2f} s  (min {r['min_s']:.2f}, max {r['max_s']:.2f}; "
                  f"exit {r['exit_code']})")
        print(f"    reference / compare: {runs['reference_over_compare']:.2f}x")
    print(f"  logs and packets in {p['folder']}")
