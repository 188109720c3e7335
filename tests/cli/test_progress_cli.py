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
    # the last advance said 10/10: the end does not say it again (it printed the final line twice)
    assert len(lines) == 5 and lines[0].startswith("study x: 2/10 (20%)") and "left" in lines[0]
    assert lines[-1].startswith("study x: 10/10 (100%)")


def test_the_time_left_is_projected_from_this_runs_work_not_resumed_work(monkeypatch):
    """A run resumed at half way said "about 14 s left" at 50 % when 42 s remained: the chunks
    found done counted towards the rate."""
    from simlab import progress

    now = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    out = io.StringIO()
    with progress_lines(100, "study r", interval=0.0, stream=out) as advance:
        advance(50, resumed=True)   # found done: no rate from it
        now[0] = 10.0
        advance(10)                 # 10 in 10 s: 40 left at 1 a second
    lines = out.getvalue().splitlines()
    assert lines[0] == "study r: 50/100 (50%), 0 s"
    assert lines[1] == "study r: 60/100 (60%), 10 s, about 40 s left"
    assert lines[-1] == "study r: 60/100 (60%), 10 s, about 40 s left" and len(lines) == 2


def test_the_terminal_bar_takes_resumed_work(monkeypatch, capsys):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with progress_bar(10, "bar") as advance:
        advance(5, resumed=True)
        advance(5)
    with progress_bar(10, "off", enabled=False) as advance:
        advance(5, resumed=True)


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
    assert "study e: simulation estimated" in err and "the exact results (exact engines, in this process)" in err
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


def test_false_pass_bounds_and_announces_a_methods_construction_before_its_pilot(capsys):
    """dm_likelihood_ratio builds its least-favourable mixture for each new design (about 25 s at
    59 x 3) inside the cost pilot's warm-up; that was paid silently, and even a refusal came only
    after it.  Its declared cost now bounds it first (issue 29.4)."""
    assert main(["false-pass", "--method", "dm_likelihood_ratio", "--clusters", "63", "--trials", "3",
                 "--max-seconds", "2"]) == 2
    err = capsys.readouterr().err
    assert "the first replication of dm_likelihood_ratio (the least-favourable mixture of 1 design(s)" in err
    assert "over the limit of 2 s" in err


def test_preparation_lists_only_first_replications_declared_slow():
    from simlab.scenario import FixedSize, PairedScenario
    from studies.engine.cost import PREPARE_NOTE_SECONDS, preparation

    at = PairedScenario(cells=(0.9, 0.02, 0.06, 0.02), clusters=64, cluster_size=FixedSize(trials=3), rho=0.05)
    assert preparation(at, ["cluster_t", "paired_wald"]) == []
    [cost] = preparation(at, ["cluster_t", "dm_likelihood_ratio"])
    assert cost.method == "dm_likelihood_ratio" and cost.seconds > PREPARE_NOTE_SECONDS
    assert "least-favourable mixture" in cost.driver


def test_study_run_bounds_its_methods_constructions_before_its_pilot(tmp_path, capsys):
    """The same for a study: one construction per design of the grid, refused before any is built."""
    spec = tmp_path / "dm.toml"
    spec.write_text('name = "dm"\nmethods = ["dm_likelihood_ratio"]\nreplications = 100\nseed = 2\n\n'
                    '[scenario]\nclusters = 47\ntrials = 3\nbaseline = 0.9\ndiscordance = 0.1\ndifference = -0.03\n\n'
                    '[grid]\nclusters = [47, 48]\ndifference = [-0.03, 0.0]\n')
    assert main(["study", "run", str(spec), "--out", str(tmp_path / "o.nc"), "--max-seconds", "2"]) == 2
    err = capsys.readouterr().err
    assert "study dm: preparing 2 method construction(s) (dm_likelihood_ratio: the least-favourable mixture" in err
    assert not (tmp_path / "o.nc").exists()


def test_size_bounds_a_methods_constructions_at_every_K_of_its_first_frame(capsys):
    """Sizing dm_likelihood_ratio builds a mixture at each K its first frame evaluates (about 20 of
    them at 100 x 3): priced and refused before the pilot builds any (it ran past --max-seconds 10
    for minutes)."""
    assert main(["size", "--method", "dm_likelihood_ratio", "--margin", "0.03", "--true-difference", "0",
                 "--trials-per-cluster", "3", "--rho", "0.05", "--max-seconds", "10"]) == 2
    err = capsys.readouterr().err
    assert "sizing dm_likelihood_ratio: preparing" in err and "designs of the first frame" in err


def test_certify_bounds_a_methods_construction_at_the_design_before_its_estimate(capsys, tmp_path):
    """certify's estimate pilots the method at the design (70 s at a new design for dm_likelihood_ratio,
    with --max-seconds 10): the construction is priced from the method's declared cost first."""
    assert main(["certify", "--method", "dm_likelihood_ratio", "--clusters", "67", "--trials", "3", "--margin", "0.03",
                 "--rho-max", "0.1", "--max-seconds", "10", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "certifying dm_likelihood_ratio at K=67, M=3: the least-favourable mixture of 1 design(s)" in err
    assert list(tmp_path.iterdir()) == []


def test_qualify_prices_a_methods_constructions_at_every_design_before_its_pilot(capsys, tmp_path, monkeypatch):
    """qualify of dm_likelihood_ratio over a policy builds a mixture per design (clusters, size,
    margin); its estimate piloted two of them and counted none (47 s to 3 min said, tens of minutes
    to run). Priced from the declared cost and refused before the pilot; an empty user store, so
    no design counts as built."""
    from simlab import stored_constructions

    monkeypatch.setenv(stored_constructions.ENV_VAR, str(tmp_path / "store"))
    assert main(["qualify", "--method", "dm_likelihood_ratio", "--policy", "standard-coarse", "--max-seconds", "10",
                 "--out", str(tmp_path / "q")]) == 2
    err = capsys.readouterr().err
    assert "this qualification's preparation at 36 designs (dm_likelihood_ratio, the last: the least-favourable" in err
    assert "over the limit of 10 s" in err and not (tmp_path / "q").exists()


def test_a_design_beyond_the_methods_cluster_limit_is_named_not_priced(capsys):
    """At 10^6 clusters of 10^5 trials the declared cost computed a binomial coefficient of
    millions of digits (93 s) to price a construction that prepare refuses at once."""
    assert main(["false-pass", "--method", "dm_likelihood_ratio", "--clusters", "1000000", "--trials", "100000",
                 "--max-seconds", "10", "--json"]) == 2
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert message.startswith("method 'dm_likelihood_ratio' models clusters of at most 20 pairs")


def test_comb_at_most_agrees_with_the_exact_count_below_its_cap():
    import math

    from methods.fixed.dm_likelihood_ratio import _comb_at_most

    for cap, n, k in [(1e6, 10, 3), (1e6, 100, 50), (840_000, 1008, 9), (840_000, 104, 5), (5, 4, 2), (10, 7, 0)]:
        assert _comb_at_most(cap, n, k) == min(cap, math.comb(n, k))
    assert _comb_at_most(840_000, 5_000_000_000 + 999_999, 5_000_000_000) == 840_000
