"""Huge designs are priced before any work (the contract of ``--max-seconds``): at 10^6
clusters of up to 10^5 trials (10^11 trial pairs a replication) every estimate pilots a
bounded, scaled-down copy of the work, so the refusal (exit 2 naming ``--max-seconds``) comes
in seconds -- these commands were silent for 15 s to 10 min, inside numba kernels that
ignore SIGTERM.  Each runs as its own process, killed if it overruns."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

HUGE = ["--clusters", "1000000", "--trials", "100000"]
DEADLINE = 60  # seconds: each refusal measured at 1-2 s on a loaded two-core machine
GRID_SPEC = """
name = "huge-grid"
methods = ["cluster_t"]
margins = [0.03]
alpha = 0.025
replications = 200
seed = 1
exact = false
[scenario]
clusters = 30
trials = 1
rho = 0.0
baseline = 0.9
discordance = 0.1
difference = 0.0
[grid]
clusters = [30, 1000000]
trials = [1, 100000]
"""

CASES = [
    (["study", "run", "{spec}", "--out", "{dir}/x.nc"], "study huge-grid"),
    # one replication of 10^11 pairs is ~10-20 min: refused at 60 s whatever the timer's noise
    (["sequential", "simulate", *HUGE, "--looks", "1000000", "--reps", "1", "--no-exact", "--max-seconds", "60"],
     "sequential simulation"),
    (["simulate", *HUGE, "--reps", "1", "--max-seconds", "60"], "simulate"),
    (["simulate", "--clusters", "1000000", "--trials", "10000", "--reps", "1", "--max-seconds", "10"], "simulate"),
    (["false-pass", "--method", "cluster_t", "--clusters", "1000000", "--trials", "10000"], "simulating 200,000"),
    (["false-pass", "--method", "cluster_t", "--clusters", "1000000", "--trials", "10000", "--simulate", "--reps",
      "1", "--max-seconds", "10"], "simulating 1 replications"),
    (["certify", "--method", "cluster_t", *HUGE, "--margin", "0.05", "--out", "{dir}/c1"], "certifying cluster_t"),
    (["calibrate", "--method", "clustered_score", *HUGE, "--margin", "0.05", "--out", "{dir}/c2"],
     "calibrating clustered_score"),
    (["certify", "--method", "cluster_t", "--clusters", "100000", "--trials", "10000", "--margin", "0.05",
      "--out", "{dir}/c1"], "certifying cluster_t"),
    # the judge study's model stops at 10^5 x 10^4; its full-size pilot took 45 s to refuse
    (["judge-study", "--clusters", "100000", "--trials", "10000", "--reps", "10", "--out-dir", "{dir}/j",
      "--max-seconds", "10"], "judge study"),
    # the exact engine's probes ran over 32 x 10^6 clusters before the state limit refused (over 120 s)
    (["false-pass", "--method", "cluster_t", "--clusters", "1000000", "--trials", "3", "--max-seconds", "1"],
     "simulating 200,000"),
]


IDS = ["study-run-grid", "sequential-simulate", "simulate-1e11", "simulate-1e10", "false-pass",
       "false-pass-simulate", "certify-1e11", "calibrate-1e11", "certify-1e9", "judge-study-1e9",
       "false-pass-exact-probes"]


@pytest.mark.parametrize("argv, what", CASES, ids=IDS)
def test_huge_design_is_refused_in_seconds(argv, what, tmp_path):
    spec = tmp_path / "huge.toml"
    spec.write_text(GRID_SPEC)
    argv = [a.format(spec=spec, dir=tmp_path) for a in argv]
    env = {k: v for k, v in os.environ.items() if k not in ("SIMLAB_MAX_SECONDS", "SIMLAB_MAX_MEMORY")}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "import sys; from simlab.cli import main; sys.exit(main())",
                           *argv, "--json"], capture_output=True, text=True, timeout=DEADLINE, env=env)
    seconds = time.perf_counter() - t0
    assert proc.returncode == 2, (proc.stdout[-2000:], proc.stderr[-2000:])
    error = json.loads(proc.stdout)["error"]
    assert error["field"] == "--max-seconds", error
    assert error["message"].startswith(what) and "would take an estimated" in error["message"], error
    assert seconds < DEADLINE


def test_simulate_prices_a_huge_draw_on_a_scaled_copy(monkeypatch):
    """``simulate --clusters 1000000 --trials 1000``: the pilot drew 8 replications of 10^9 pairs
    (the whole work when --reps is 1) before its estimate; now 8 of 10^6 pairs, scaled by the
    ratio of pairs (the generator is linear in them), and none of the draw's own tables."""
    import simlab.cli.simulate as simulate
    from simlab.scenario import FixedSize, PairedScenario
    from studies.engine.cost import PILOT_MAX_PAIRS

    drawn = []

    class Generator:
        def __init__(self, scenario, seed):
            self.scenario, self.seed = scenario, seed

        def fill(self, out, start):
            pairs = self.scenario.clusters * self.scenario.cluster_size.trials
            drawn.append(out.shape[0] * pairs)
            clock[0] += out.shape[0] * pairs * 1e-8

    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    scenario = PairedScenario.from_rates(0.9, 0.0, 0.1, clusters=1_000_000, cluster_size=FixedSize(trials=1000))
    per_rep, done = simulate.draw_seconds(Generator(scenario, 1), 1, np.empty((1, 1_000_000, 4), np.int32))
    assert done == 0 and per_rep == pytest.approx(10.0)           # 10^9 pairs at 10 ns
    assert max(drawn) == simulate.PILOT * PILOT_MAX_PAIRS

    drawn.clear()
    small = PairedScenario.from_rates(0.9, 0.0, 0.1, clusters=30, cluster_size=FixedSize(trials=3))
    per_rep, done = simulate.draw_seconds(Generator(small, 1), 97, np.empty((97, 30, 4), np.int32))
    assert done == simulate.PILOT and per_rep == pytest.approx(90 * 1e-8)   # ordinary draws: as before
