"""Probe round 7 (issue 29): the last slow input errors answer before the layers that run
methods load, each with the reason asserted (message and field)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.cli.test_probe_round6 import PROBE

HEAVY = ("numba", "scipy", "xarray")


def _probe(argv: list[str]) -> tuple[dict, list[str]]:
    """The command's JSON error and the heavy modules it loaded, from a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE, *argv, "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["rc"] == 2, report
    return json.loads(report["out"])["error"], [m for m in report["modules"] if m.split(".")[0] in HEAVY]


@pytest.mark.parametrize("design, why", [
    (["--method", "paired_wald", "--clusters", "300", "--trials", "300"],
     "90000 pairs give more than 3,000,000 discordant states"),
    (["--method", "likelihood_ratio", "--looks", "5", "--clusters", "30"],
     "sequential methods and look schedules are simulated"),
])
def test_exact_engine_refused_by_design_before_the_method_loads(design, why, tmp_path):
    """``certify --engine exact`` where no exact engine can apply took 1.0-1.7 s: the
    estimate loaded the method, ran its probe and a pilot before certify refused it."""
    err, heavy = _probe(["certify", *design, "--margin", "0.05", "--engine", "exact", "--out", str(tmp_path)])
    name = design[1]
    assert err == {"field": "--engine", "message": f"the exact engine does not apply to {name!r} here: {why}"}
    assert not heavy, heavy


def test_exact_engine_refused_by_the_probe_before_any_pilot(monkeypatch):
    """Where only the method's own probe can refuse it, the estimate refuses it (no pilot, no
    second probe in certify)."""
    from studies.qualify import certify_estimate, estimate

    monkeypatch.setattr(estimate, "qualify_estimate", lambda *a, **k: pytest.fail("the pilot ran"))
    with pytest.raises(ValueError, match="the exact engine does not apply to 'cluster_t' here: the method uses more "
                                         "than the pooled discordant counts"):
        certify_estimate("cluster_t", 30, 3, 0.05, 0.1, engine="exact")


@pytest.mark.parametrize("argv", [
    ["false-pass", "--method", "cluster_bootstrap", "--simulate", "--device", "gpu"],
    ["study", "run", "studies/specs/power-30x1.toml", "--device", "gpu", "--out", "{tmp}/o.nc"],
])
def test_gpu_refusal_comes_from_the_catalogue(argv, tmp_path):
    """``--device gpu`` with methods the GPU path does not run was refused after the studies and
    the kernels loaded (1.6-2 s); the catalogue now says which methods it runs."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    argv = [str(root / a) if a.endswith(".toml") else a for a in argv]
    err, heavy = _probe(argv)
    assert err["field"] == "--device" and err["message"].startswith("--device gpu: methods [")
    assert err["message"].endswith("need tables; the GPU runs the cluster-moment methods (cluster_t, "
                                   "clustered_normal) only")
    assert not heavy, heavy
    assert not (tmp_path / "o.nc").exists()


def test_the_catalogue_says_which_methods_the_gpu_runs():
    from methods import get, info, names
    from methods.gpu import supports

    for name in names():
        assert info(name).gpu == supports(get(name)), name


def test_whether_an_exact_value_is_kept_does_not_depend_on_the_clock(monkeypatch):
    """``exact_grid`` dropped an evaluation when its first states, timed, projected it over the
    budget, so a loaded machine could lose exact values another kept.  The budget is now the
    declared cost: a clock a thousand times slower changes nothing, and a declared cost over
    the budget drops the value on any clock."""
    import itertools
    import time as _time

    from methods import get
    from simlab.scenario import FixedSize, PairedScenario
    from studies.exact import fixed

    sc = PairedScenario.from_rates(0.85, -0.03, 0.1, clusters=12, cluster_size=FixedSize(trials=3), rho=0.1)
    points, refs = [("p", sc)], ["bayes_paired", "paired_wald"]
    resolved = [get(n) for n in refs]

    def grid(limit):
        return fixed.exact_grid(points, refs, resolved, [0.03], [0.025], max_seconds=limit)

    steady = grid(60.0)
    ticks = itertools.count()
    monkeypatch.setattr(_time, "perf_counter", lambda: 1000.0 * next(ticks))   # every reading 1000 s later
    slow = grid(60.0)
    assert list(slow["engine"][0]) == list(steady["engine"][0]) == ["pooled", "pooled"]
    assert slow["pass_rate"].tolist() == steady["pass_rate"].tolist()
    monkeypatch.undo()
    # bayes_paired declares its quadrature per table: over 0.01 s at this design's pooled states
    assert fixed.declared_seconds(sc, resolved[0], "pooled") > 0.01 > fixed.declared_seconds(sc, resolved[1], "pooled")
    tight = grid(0.01)
    assert list(tight["engine"][0]) == ["", "pooled"] and np.isnan(tight["pass_rate"][0, 0]).all()


def test_the_demo_is_priced_before_it_runs_and_stops_at_its_limit(tmp_path, capsys, monkeypatch):
    """``demo --full --max-seconds 10`` was refused at 18.8 s, ``--max-seconds 1`` after 3.9 s of
    work: the limit was checked only when the designs' section was priced, after the fixed
    sections had run.  The declared costs of its simulations price it before anything runs, and
    each section and each kernel it loads or waits for is a step checked against the limit."""
    import studies

    err = _error_of(["demo", "--out", str(tmp_path), "--max-seconds", "0.001"], capsys)
    assert err["field"] == "--max-seconds"
    assert err["message"].startswith("the demo's simulations (their declared costs; start-up and loading kernels "
                                     "come on top) would take an estimated ")
    assert not list(tmp_path.iterdir())
    monkeypatch.setattr(studies, "demo_floor_seconds", lambda *a, **k: 0.0)   # past the price: the steps stop it
    err = _error_of(["demo", "--out", str(tmp_path), "--max-seconds", "0.001"], capsys)
    assert err["field"] == "--max-seconds"
    assert err["message"].startswith("the demo: stopped at the limit of 0.001 s (")
    assert "nothing was written" in err["message"]
    assert not list(tmp_path.iterdir())


def test_the_demos_price_grows_with_its_replications():
    from studies import demo_floor_seconds

    small, large = demo_floor_seconds(1000, 1000), demo_floor_seconds(1_000_000, 1_000_000)
    assert 0 < small < large and demo_floor_seconds(1000, 1000, full=True) > small


def test_the_demo_tells_its_steps_before_it_runs_them(tmp_path):
    from studies import study_demo

    steps = []

    def stop(what):
        steps.append(what)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        study_demo(out_dir=tmp_path, before_step=stop)
    assert steps == ["1/5 headline: exact and 400,000 simulated replications of clustered_normal"]


def test_the_demos_replications_are_planned_from_declared_costs_not_a_clock(monkeypatch):
    """The method comparison's replications per method came from a timed pilot, so a busy machine
    showed fewer replications (other figures) than an idle one."""
    import itertools
    import time as _time

    from methods import MethodRef
    from studies import demo

    refs = [MethodRef(name=n) for n in ("paired_wald", "bayes_paired", "cluster_bootstrap")]
    methods = [r.resolve() for r in refs]
    scenario = demo.demo_spec([r.name for r in refs], 10_000, 1).points()[0][1]
    plan = demo._replication_plan(methods, refs, scenario, 10_000, 0.75, 1)
    ticks = itertools.count()
    monkeypatch.setattr(_time, "perf_counter", lambda: 1000.0 * next(ticks))
    assert demo._replication_plan(methods, refs, scenario, 10_000, 0.75, 1) == plan
    assert plan["paired_wald"] == 10_000 and plan["bayes_paired"] < 10_000   # its quadrature is declared


def _error_of(argv, capsys) -> dict:
    from simlab.cli import main

    assert main(argv + ["--json"]) == 2
    return json.loads(capsys.readouterr().out)["error"]


def test_bench_latency_refuses_beyond_its_limit_before_any_row(capsys, monkeypatch):
    """It was priced after its reference rows, which ran --repeats times first (--repeats 1000000
    ran until killed); one run of simlab --help prices it now, before any row, and each timed run
    is a step the limit is checked at."""
    from studies.bench import latency

    runs = []
    real = latency._run
    monkeypatch.setattr(latency, "_run", lambda argv, cwd: runs.append(argv) or real(argv, cwd))
    err = _error_of(["bench", "latency", "--repeats", "1000000", "--max-seconds", "60"], capsys)
    assert err["field"] == "--max-seconds"
    assert err["message"].startswith("bench latency (at least) would take an estimated ")
    assert len(runs) == 1 and runs[0][-1] == "--help"


def test_every_input_error_the_latency_bench_times_is_one(tmp_path, monkeypatch, capsys):
    """``bench latency`` times each of these as an input error: each must exit 2 with one JSON
    error line (the bench checks the exit code too, but only when it is run)."""
    from simlab.cli import main
    from studies.bench.latency import INPUT_ERRORS

    monkeypatch.chdir(tmp_path)
    for label, argv in INPUT_ERRORS:
        assert main([*argv, "--json"]) == 2, label
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and json.loads(out)["error"]["message"], (label, out)
    assert not list(tmp_path.iterdir())


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_bench_gpu_prices_its_rows_after_compiling_and_refuses_beyond_the_limit(capsys):
    """``bench gpu`` had no --max-seconds; its rows now are priced by a pilot on each device
    (here numba's CUDA simulator, as CI has no GPU) and refused beyond the limit."""
    from simlab import gpu

    if not gpu.available():
        pytest.skip(f"no GPU and no CUDA simulator: {gpu.why_unavailable()}")
    err = _error_of(["bench", "gpu", "--reps", "20000", "--cpu-reps", "1000", "--check-reps", "1000", "--repeat", "1",
                     "--max-seconds", "5"], capsys)
    assert err["field"] == "--max-seconds"
    assert err["message"].startswith("bench gpu (after compiling its kernels) would take an estimated ")


def test_bench_gpus_estimate_counts_every_row():
    from studies.bench.gpu import gpu_work_seconds

    one = gpu_work_seconds(reps=10, cpu_reps=100, check_reps=1000, cores=2, repeat=1, limit_cupy=False,
                           gpu_rate=1.0, cpu_rate=1e9)
    assert one == pytest.approx(1000 + 2 * 10 + 2 * 2 * 10 + (1000 / 2 + 200 + 4000) / 1e9)
    assert gpu_work_seconds(10, 100, 1000, 2, 1, True, 1.0, 1e9) == pytest.approx(one + 10)


def test_a_method_not_qualified_up_to_the_cap_blames_the_method_not_the_baseline():
    """``size --method cluster_t ... --rho 0.1`` was refused naming --baseline, a flag never
    given: the message's worst case ("b=0.5 ...") matched the argument's name."""
    from simlab.cli import build_parser
    from simlab.cli._output import describe_error
    from studies.sizing.gate import NotQualifiedUpTo

    args = build_parser().parse_args(["size", "--method", "cluster_t", "--margin", "0.03", "--true-difference", "0"])
    msg = ("refused: the false-pass rate over the nuisance domain is not qualified up to K=5872 (the raise limit, "
           "or the cluster cap); worst case baseline 0.5, discordance 0.03")
    assert describe_error(NotQualifiedUpTo(msg), args) == (msg, "--method")
    assert describe_error(ValueError(msg), args)[1] == "--baseline"   # what the field was guessed as before


def test_interval_says_a_long_analysis_before_it_starts(monkeypatch, capsys):
    """``interval --method dm_likelihood_ratio`` at a design with no stored construction ran
    11-13 s without a word; an analysis declared to take a second or more is now announced."""
    import methods
    from methods import AnalysisCost
    from simlab.cli import main

    monkeypatch.setattr(methods, "check_analysis_cost",
                        lambda m, t, **k: AnalysisCost(m.name, 0.0, 12.0, "its construction at this design"))
    assert main(["interval", "--method", "cluster_t", "--table", "3,1,0,6", "--table", "4,0,1,5"]) == 0
    assert "cluster_t: its construction at this design: estimated 12 s" in capsys.readouterr().err
    monkeypatch.setattr(methods, "check_analysis_cost", lambda m, t, **k: AnalysisCost(m.name, 0.0, 0.01, "x"))
    assert main(["interval", "--method", "cluster_t", "--table", "3,1,0,6", "--table", "4,0,1,5"]) == 0
    assert "estimated" not in capsys.readouterr().err


@pytest.mark.parametrize("command", ["show", "plot"])
def test_study_show_names_another_kind_of_dataset_before_reading_it(command, tmp_path, capsys):
    """``study show`` of a record's .nc took 1.4 s to be refused; of a judge study's dataset it
    ended in a traceback (AttributeError in select_level)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "results"
    argv = ["--out", str(tmp_path / "x.png")] if command == "plot" else []
    record = sorted((root / "qualification").glob("*.nc"))[0]
    err = _error_of(["study", command, str(record), *argv], capsys)
    assert err == {"field": "file", "message": f"{record}: not a study dataset (a qualification dataset; a "
                   "qualification record's scenario data: show the record with `simlab qualify show RECORD.json`)"}
    judge = sorted((root / "judge").glob("*.nc"))[0]
    err = _error_of(["study", command, str(judge), *argv], capsys)
    assert err == {"field": "file", "message": f"{judge}: not a study dataset (a judge dataset; written by `simlab "
                                               "judge-study`, which prints its table)"}
