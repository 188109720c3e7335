"""Every ``simlab bench`` command that can run long takes ``--max-seconds`` for the whole
command, estimates before the heavy work and refuses beyond the limit (exit 2, naming the
field); sizes that cannot fit in memory are refused naming their own flag; a failing stage
process of ``bench evidence`` is one line, never a traceback (issue 29).  Nothing here is
timed: each refusal is far over (or far under) its limit on any machine."""
from __future__ import annotations

import argparse
import json

import pytest

import simlab.cli.evidence as evidence_cli
from simlab.cli import main
from simlab.cli.bench import register_evidence_benches


def _error(capsys, argv) -> dict:
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out  # one JSON object, no traceback
    return json.loads(out)["error"]


@pytest.fixture
def evidence_benches(monkeypatch):
    """``bench evidence`` / ``bench evidence-inspect`` as ``simlab.cli.bench`` registers them
    (whether or not ``simlab/cli/evidence.py`` already delegates to it)."""
    original = evidence_cli.register

    class Proxy:
        def __init__(self, real):
            self.real = real

        def add_parser(self, name, **kw):
            if name in ("evidence", "evidence-inspect"):
                return argparse.ArgumentParser(add_help=False)  # dropped: registered below, once
            return self.real.add_parser(name, **kw)

        def __getattr__(self, name):
            return getattr(self.real, name)

    def register(sub, bench_sub):
        original(sub, Proxy(bench_sub))
        register_evidence_benches(bench_sub)

    monkeypatch.setattr(evidence_cli, "register", register)


def test_bench_without_a_benchmark_names_a_sensible_field(capsys):
    err = _error(capsys, ["bench", "--json"])
    assert err["field"] == "benchmark" and "bench_command" not in err["message"]


def test_simulate_huge_reps_refused_by_its_estimate(capsys):
    err = _error(capsys, ["bench", "simulate", "--reps", "1000000000000", "--json"])
    assert err["field"] == "--max-seconds"
    assert "would take an estimated" in err["message"] and "1,000,000,000,000" in err["message"]


def test_all_at_full_scale_refused_before_any_pilot(capsys, monkeypatch):
    def no_pilot(*a, **kw):  # the methods' least timings alone are over the limit: no benchmark pilot runs
        raise AssertionError("a pilot ran")

    for name in ("bench_simulate_estimate", "bench_study_estimate", "bench_sequential_estimate",
                 "bench_qualify_estimate"):
        monkeypatch.setattr(f"studies.bench.{name.split('_estimate')[0].replace('bench_', '')}.{name}", no_pilot)
    err = _error(capsys, ["bench", "all", "--max-seconds", "30", "--no-save", "--json"])
    assert err["field"] == "--max-seconds" and "lower --scale" in err["message"]


def test_methods_refused_when_even_the_smallest_timings_do_not_fit(capsys):
    err = _error(capsys, ["bench", "methods", "--max-seconds", "2", "--json"])
    assert err["field"] == "--max-seconds" and "would take an estimated" in err["message"]


def test_methods_plan_fits_the_whole_run():
    from studies.bench import bench_methods_plan

    plan = bench_methods_plan(25, 60.0, 10.0, 600.0)  # the defaults: about 30 min asked
    assert plan["cut"] and plan["seconds"] <= 600.0 and plan["kernel_seconds"] < 60.0
    assert plan["reference_seconds"] < 10.0
    uncut = bench_methods_plan(2, 60.0, 10.0, 600.0)
    assert not uncut["cut"] and uncut["kernel_seconds"] == 60.0 and uncut["reference_seconds"] == 10.0


def test_methods_cut_is_said_and_bounds_the_whole_run(capsys, monkeypatch):
    seen = {}

    def fake(**kw):
        seen.update(kw)
        return {"clusters": 30, "trials": 3, "rho": 0.1, "cells": [0.9, 0.04, 0.03, 0.03], "margin": 0.03,
                "numba_threads": 1, "timing": "t", "rows": []}

    monkeypatch.setattr("studies.bench.bench_methods", fake)
    assert main(["bench", "methods", "--max-seconds", "300"]) == 0
    captured = capsys.readouterr()
    assert seen["total_seconds"] <= 300 and seen["max_seconds"] < 60 and seen["reference_seconds"] < 10
    assert "cut:" in captured.out and "--max-seconds 300" in captured.out
    assert "cut:" in captured.err and "bounds the whole run" in captured.err


def test_qualify_refused_by_its_estimate(capsys):
    err = _error(capsys, ["bench", "qualify", "--rounds", "0", "--max-seconds", "1", "--json"])
    assert err["field"] == "--max-seconds" and "would take an estimated" in err["message"]


def test_speedups_huge_reps_refused_naming_reps_before_any_work(capsys, monkeypatch):
    monkeypatch.setattr("methods.bench_speedups", lambda **kw: pytest.fail("the benchmark ran"))
    err = _error(capsys, ["bench", "speedups", "--reps", "1000000000", "--json"])
    assert err["field"] == "--reps" and "memory" in err["message"]


def test_evidence_too_large_refused_naming_trials(capsys, evidence_benches, monkeypatch):
    import evidence.bench as eb

    monkeypatch.setattr(eb, "_measure", lambda *a: pytest.fail("a stage process started"))
    err = _error(capsys, ["bench", "evidence", "--trials", "30000000", "--json"])
    assert err["field"] == "--trials" and "memory" in err["message"]


def test_evidence_refused_by_max_seconds(capsys, evidence_benches, monkeypatch):
    import evidence.bench as eb

    monkeypatch.setattr(eb, "_measure", lambda *a: pytest.fail("a stage process started"))
    err = _error(capsys, ["bench", "evidence", "--trials", "200000", "--max-seconds", "1", "--json"])
    assert err["field"] == "--max-seconds" and "would take an estimated" in err["message"]


def test_evidence_reference_failure_is_one_line(capsys, evidence_benches, monkeypatch):
    import evidence.bench as eb

    def measure(kind, path, manifest, packet_dir):
        if kind == "reference":
            raise eb.BenchProcessFailed("reference", "out of memory", True, 2_400_000_000)
        return {}

    monkeypatch.setattr(eb, "_measure", measure)
    assert main(["bench", "evidence", "--trials", "2000", "--clusters", "40"]) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err and last.startswith("error: ")
    assert "reference benchmark process ran out of memory" in last and "--trials" in last


def test_evidence_process_reports_its_failure_instead_of_a_traceback(monkeypatch, tmp_path):
    import evidence.bench as eb

    class Queue(list):
        put = list.append

    q = Queue()
    eb._stages("reference", str(tmp_path / "t.jsonl"), "{not json", str(tmp_path), q)
    assert q and "error" in q[0] and not q[0]["out_of_memory"]

    def oom(*a):
        raise MemoryError

    monkeypatch.setattr(eb, "_run_stages", oom)
    q = Queue()
    eb._stages("reference", str(tmp_path / "t.jsonl"), "{}", str(tmp_path), q)
    assert q[0]["out_of_memory"] and q[0]["error"] == "out of memory"


def test_evidence_inspect_refused_before_inspect_runs(capsys, evidence_benches, monkeypatch):
    import evidence.bench_inspect as bi

    monkeypatch.setattr(bi, "write_inputs", lambda *a: pytest.fail("inspect eval ran"))
    err = _error(capsys, ["bench", "evidence-inspect", "--max-seconds", "10", "--json"])
    assert err["field"] == "--max-seconds" and "would take an estimated" in err["message"]
