"""Progress everywhere (issue 14.5): plain lines on stderr when it is not a terminal; a run
without --out says that it saved nothing."""
from __future__ import annotations

import io
import json

from simlab.cli import main
from simlab.progress import progress_bar, progress_lines


def test_progress_lines_report_counts_and_finish():
    out = io.StringIO()
    with progress_lines(10, "study x", interval=0.0, stream=out) as advance:
        for _ in range(5):
            advance(2)
    lines = out.getvalue().splitlines()
    assert len(lines) == 6 and lines[0].startswith("study x: 2/10 (20%)") and "left" in lines[0]
    assert lines[-1].startswith("study x: 10/10 (100%)")


def test_progress_bar_falls_back_to_lines_off_a_terminal(capsys, monkeypatch):
    monkeypatch.setenv("SIMLAB_PROGRESS_SECONDS", "0")
    with progress_bar(4, "work") as advance:  # pytest's captured stderr is not a terminal
        advance(4)
    assert "work: 4/4 (100%)" in capsys.readouterr().err
    with progress_bar(4, "quiet", enabled=False) as advance:
        advance(4)
    assert capsys.readouterr().err == ""


def test_sequential_run_without_out_says_it_saved_nothing(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "p"\nmethods = ["likelihood_ratio"]\nlooks = [25, 50]\nreplications = 200\nseed = 2\n'
                    '[scenario]\ncells = [0.98, 0.02, 0.0, 0.0]\n')
    assert main(["sequential", "run", str(spec)]) == 0
    captured = capsys.readouterr()
    assert "saved nothing (no --out)" in captured.out and "sequential study p: 200/200" in captured.err
    assert main(["sequential", "run", str(spec), "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["saved"] is False and p["out"] is None


def test_study_run_logs_its_estimate_and_the_exact_stage(tmp_path, capsys, monkeypatch):
    """A study with exact values shows progress of both stages off a terminal, after the
    time estimate, however short it is."""
    monkeypatch.setenv("SIMLAB_PROGRESS_SECONDS", "0")
    spec = tmp_path / "e.toml"
    spec.write_text('name = "e"\nmethods = ["paired_wald", "tango_score"]\nreplications = 300\nseed = 2\n'
                    'exact = true\n[scenario]\nclusters = 12\ntrials = 1\nbaseline = 0.9\ndiscordance = 0.1\n'
                    'difference = -0.03\n[grid]\ndifference = [-0.03, 0.0]\n')
    assert main(["study", "run", str(spec), "--out", str(tmp_path / "e.nc"), "--no-checkpoint"]) == 0
    err = capsys.readouterr().err
    assert "study e: simulation estimated" in err and "exact results (--exact) come on top" in err
    assert "study e: 600/600 (100%)" in err
    assert "study e: exact values: 4/4 (100%)" in err


def test_false_pass_simulation_logs_its_estimate_and_progress(capsys, monkeypatch):
    """A simulated false-pass rate is estimated before it runs and shows progress; its chunks
    give the counts of one unchunked run (integer tallies over the same replications)."""
    from studies.engine import false_pass
    from simlab.scenario import FixedSize, PairedScenario

    monkeypatch.setenv("SIMLAB_PROGRESS_SECONDS", "0")
    assert main(["false-pass", "--method", "paired_wald", "--simulate", "--reps", "3001", "--json"]) == 0
    captured = capsys.readouterr()
    assert "simulating 3,001 replications of paired_wald: estimated" in captured.err
    assert "simulating paired_wald: 3,001/3,001 (100%)" in captured.err
    chunked = json.loads(captured.out)
    assert chunked["replications"] == 3001 and chunked["exact"] is False
    scenario = PairedScenario(cells=(0.96, 0.04, 0.0, 0.0), clusters=30, cluster_size=FixedSize(trials=1), rho=0.0)
    whole = false_pass(scenario, "paired_wald", replications=3001, seed=20261129, exact="never")
    assert whole["value"] == chunked["value"] and whole["inconclusive_rate"] == chunked["inconclusive_rate"]
