"""Probe round 6 (issue 29: estimate before working, refuse beyond --max-seconds): a study's
exact results are priced inside its estimate and its limit, and ``simlab size`` prices the
first power frame's every prefix K, not one scenario of the frame's K; its refusal at the
cluster cap says how the cap compares with the analytic start (it read "0x")."""
from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from simlab.cli import main

from tests.cli.test_studies_probe3 import run_json

SPEC = """
name = "probe6"
methods = ["paired_wald"]
margins = [0.03]
alpha = 0.025
replications = 200
seed = 6
exact = {exact}

[scenario]
clusters = 10
trials = 2
baseline = 0.9
discordance = 0.1
difference = -0.03

[grid]
difference = [-0.03, 0.0]
"""


def _scenario(clusters: int, trials: int, difference: float = 0.0, discordance: float = 0.1):
    from simlab.scenario import FixedSize, PairedScenario

    return PairedScenario.from_rates(0.9, difference, discordance, clusters=clusters,
                                     cluster_size=FixedSize(trials=trials), rho=0.1)


# ---------------------------------------------------------------- the exact part of a study
def test_state_count_is_the_pooled_law_built():
    """The pooled engine's states are priced before the law is built: every pooled table of the
    N pairs over the cells some cluster can fill (one cell never filled: a dimension fewer)."""
    from studies.exact.fixed import _distribution, state_count

    for sc in (_scenario(6, 3), _scenario(6, 3, difference=-0.03, discordance=0.03)):
        built = _distribution(sc, "pooled")[2].size
        assert state_count(sc, "pooled") == built


def test_state_count_covers_the_moment_law_built():
    from studies.exact.fixed import _distribution, state_count

    for sc in (_scenario(20, 3), _scenario(20, 3, difference=-0.03, discordance=0.03)):
        built = _distribution(sc, "moments")[2].size
        assert built <= state_count(sc, "moments") <= 1.3 * built


def test_exact_grid_seconds_prices_each_evaluation_by_its_states(monkeypatch):
    """States times a state's cost, for every margin; an evaluation whose declared cost is over
    the grid's limit is dropped before its law is built, and priced at nothing."""
    from studies.engine import parse_spec
    from studies.exact import fixed

    spec = parse_spec(__import__("tomllib").loads(SPEC.format(exact="true")))
    resolved = [ref.resolve("fixed") for ref in spec.methods]
    points = spec.points()
    engines = [fixed.exact_engine(sc, resolved[0], spec.alphas[0])[0] for _, sc in points]
    assert all(engines), engines   # paired_wald has an exact engine at this design
    laws = sum(fixed.distribution_seconds(sc, e) for (_, sc), e in zip(points, engines))
    states = [fixed.state_count(sc, e) for (_, sc), e in zip(points, engines)]
    monkeypatch.setattr(fixed, "state_seconds", lambda *a, **k: 1e-3)
    got = fixed.exact_grid_seconds(points, resolved, spec.margins, spec.alphas)
    assert got == pytest.approx(laws + 1e-3 * sum(states))
    two = fixed.exact_grid_seconds(points, resolved, (0.03, 0.05), spec.alphas)
    assert two == pytest.approx(laws + 2e-3 * sum(states))
    monkeypatch.setattr(fixed, "declared_seconds", lambda *a, **k: 61.0)   # declared over the grid's 60 s
    assert fixed.exact_grid_seconds(points, resolved, spec.margins, spec.alphas) == 0.0   # dropped unbuilt


def test_study_estimate_holds_the_exact_results_and_the_limit_refuses(tmp_path, capsys, monkeypatch):
    """A spec with exact results is estimated higher than without them; a --max-seconds between
    the two refuses it before any work (it ran the simulation, then overran computing exact values)."""
    import studies.engine
    from studies.engine import TimeEstimate
    from studies.exact import fixed

    monkeypatch.setattr(studies.engine, "study_estimate", lambda *a, **k: TimeEstimate(1.0, 1.0, 1))
    monkeypatch.setattr(fixed, "state_seconds", lambda *a, **k: 0.01)   # ~18 s an evaluation at 10 x 2
    exact = tmp_path / "exact.toml"
    exact.write_text(SPEC.format(exact="true"))
    plain = tmp_path / "plain.toml"
    plain.write_text(SPEC.format(exact="false"))
    common = ["--max-seconds", "10", "--no-checkpoint"]
    rc, p = run_json(capsys, ["study", "run", str(exact), "--out", str(tmp_path / "e.nc"), *common])
    assert rc == 2 and p["error"]["field"] == "--max-seconds", p
    assert "exact results" in p["error"]["message"], p
    assert not (tmp_path / "e.nc").exists()
    rc, p = run_json(capsys, ["study", "run", str(plain), "--out", str(tmp_path / "p.nc"), *common])
    assert rc == 0, p
    # the exact spec within a limit that holds both: the estimate says the whole run
    rc = main(["study", "run", str(exact), "--out", str(tmp_path / "e.nc"), "--max-seconds", "600", "--no-checkpoint",
               "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, (out, err)
    assert "exact results" in err and "in all" in err and "come on top" not in err, err


# ---------------------------------------------------------------- simlab size
def test_size_refusal_at_the_cluster_cap_has_no_zero_ratio():
    from studies.sizing.size import _versus_start

    text = _versus_start(200_000, 78_488_798)
    assert "0x" not in text and "below the analytic start 78,488,798" in text, text
    assert _versus_start(6400, 100).startswith("64x the analytic start 100")


def test_size_estimate_prices_every_prefix_of_the_first_frame(monkeypatch):
    """The first frame evaluates ~25 prefix K on drawn tables: the estimate is of that work (it
    was one scenario of the frame's K on the moment path: "about 1 s" for 32 s)."""
    from methods import get
    sizing = importlib.import_module("studies.sizing.size")

    seen = {}

    def priced(method, scenario, ks, reps, *a, **k):
        seen.update(clusters=scenario.clusters, ks=list(ks), reps=reps)
        return 0.0

    monkeypatch.setattr(sizing, "frame_seconds", priced)
    sizing.size_estimate(get("cluster_t"), margin=0.0001, difference=0.0)
    assert seen["clusters"] == sizing.MAX_CLUSTERS and seen["reps"] == 2000
    assert len(set(seen["ks"])) >= 20 and max(seen["ks"]) == sizing.MAX_CLUSTERS


def test_frame_seconds_pilots_the_frames_prefixes(monkeypatch):
    from methods import get
    sizing = importlib.import_module("studies.sizing.size")

    calls = []
    evaluate = sizing.PowerFrame.evaluate

    def recording(self, ks, n_reps):
        calls.append((self.k_frame, sorted(set(ks))))
        return evaluate(self, ks, n_reps)

    monkeypatch.setattr(sizing.PowerFrame, "evaluate", recording)
    ks = sizing._grid(2, 60, sizing.FRAME_POINTS)
    assert sizing.frame_seconds(get("cluster_t"), _scenario(60, 1), ks, 2000, 1, 0.03, 0.025) > 0.0
    assert calls and all(frame == 60 and got == ks for frame, got in calls)
    # a frame over the direct pilot's pairs is piloted cut down, its prefixes cut in proportion
    calls.clear()
    big = _scenario(100_000, 1)
    sizing.frame_seconds(get("cluster_t"), big, sizing._grid(2, 100_000, sizing.FRAME_POINTS), 2000, 1, 0.03, 0.025)
    assert calls and all(len(got) >= 10 and max(got) == frame for frame, got in calls)
    assert np.all([frame < 100_000 for frame, _ in calls[:1]])
