"""methods/analysis_cost.py: cost models of single analyses and the refusal beyond a limit."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from methods import registry
from methods.analysis_cost import AnalysisTooCostly, analysis_cost, check_analysis_cost
from methods.fixed.bayes_hierarchical import BYTES_PER_CELL as BAYES_HIERARCHICAL_BYTES_PER_CELL


def test_exact_discordant_cost_grows_with_the_largest_trial_count():
    m = registry.get("exact_discordant")
    small = analysis_cost(m, np.array([[10, 1, 1, 8]]))
    big = analysis_cost(m, np.array([[1_000_000_000, 300_000_000, 300_000_000, 300_000_000]]))
    assert big.bytes > 80 * (1 << 30) > small.bytes and "1.9e+09" in big.driver
    with pytest.raises(AnalysisTooCostly) as info:
        check_analysis_cost(m, np.array([[1_000_000_000, 300_000_000, 300_000_000, 300_000_000]]))
    e = info.value
    assert e.resource == "memory" and "exact_discordant" in str(e) and "GiB" in str(e) and "max_bytes" in str(e)


def test_bayes_hierarchical_cost_follows_the_grid_of_its_posterior():
    """Grid = (M10 + M01 + 1)(M11 + M00 + 1), M_j = pooled count less clusters where it is
    positive; Stirling coefficients cost per squared pooled count."""
    m = registry.get("bayes_hierarchical")
    one = analysis_cost(m, np.array([[10000, 500, 400, 100]]))
    cells = (499 + 399 + 1) * (9999 + 99 + 1)
    assert one.bytes >= BAYES_HIERARCHICAL_BYTES_PER_CELL * cells and f"{cells:.3g}" in one.driver
    # the same counts spread one per cluster: every M_j = 0, a single cell
    spread = np.zeros((30, 4), np.int64)
    spread[:, 0] = 1
    tiny = analysis_cost(m, spread)
    assert tiny.bytes < 1e4 and tiny.seconds < 1e-3
    check_analysis_cost(m, np.array([[10000, 500, 400, 100]]))     # version 3: about 3 s, allowed
    # 500 clusters x 10 trials at discordance 0.5 (about 0.1 s): version 1's component count
    # (1.2e9 components, hours) refused it
    check_analysis_cost(m, np.tile([[3, 2, 2, 3]], (500, 1)))
    with pytest.raises(AnalysisTooCostly) as info:                # 9e10 cells: hours and 2 TB
        check_analysis_cost(m, np.array([[1_000_000, 50_000, 40_000, 10_000]]))
    assert info.value.resource == "memory" and "bayes_hierarchical" in str(info.value)
    with pytest.raises(AnalysisTooCostly) as info:                # 1e12 squared counts, little memory
        check_analysis_cost(m, np.array([[1_000_000, 0, 0, 0]]))
    assert info.value.resource == "time"


def test_limits_are_overridable(monkeypatch):
    m = registry.get("exact_discordant")
    table = np.array([[50_000_000, 10_000_000, 10_000_000, 30_000_000]])  # ~4.5 GiB
    with pytest.raises(AnalysisTooCostly):
        check_analysis_cost(m, table)
    assert check_analysis_cost(m, table, max_bytes=1e12, max_seconds=1e6).bytes > 4e9
    monkeypatch.setenv("SIMLAB_MAX_ANALYSIS_BYTES", "1e12")
    monkeypatch.setenv("SIMLAB_MAX_ANALYSIS_SECONDS", "1e6")
    check_analysis_cost(m, table)
    with pytest.raises(AnalysisTooCostly) as info:
        check_analysis_cost(m, table, max_seconds=1.0)
    assert info.value.resource == "time"


def test_bootstrap_cost_counts_resamples():
    m = registry.get("cluster_bootstrap")
    t = np.ones((1000, 4), np.int64)
    assert analysis_cost(m.with_options(resamples=9999), t).seconds > 5 * analysis_cost(m, t).seconds


PROBE = """
import sys
import json
import numpy as np
from methods import registry
from methods.analysis_cost import analysis_cost


def status(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field + ":"))


m = registry.get(sys.argv[1])
m.analyze(np.array([[5, 1, 1, 3]]), 0.03, 0.025)   # compile or load the kernel first
t = np.array([json.loads(sys.argv[2])])
with open("/proc/self/clear_refs", "w") as f:     # reset the peak (VmHWM): a cold-cache compile's
    f.write("5")                                   # peak must not count as the analysis's
rss_now = status("VmRSS")
m.analyze(t, 0.03, 0.025)
print(json.dumps({"measured": status("VmHWM") - rss_now, "estimate": analysis_cost(m, t).bytes}))
"""


@pytest.mark.parametrize("method, table", [
    ("exact_discordant", [5_000_000, 1_000_000, 1_000_000, 3_000_000]),   # n = 1e7
    ("bayes_hierarchical", [10000, 500, 400, 100]),                       # 9.1e6 grid cells
])
def test_memory_model_matches_a_measurement(method, table):
    """Peak RSS growth of one analysis lies within [1/2, 1] of the model's estimate (Linux)."""
    done = subprocess.run([sys.executable, "-c", PROBE, method, json.dumps(table)], capture_output=True, text=True,
                          timeout=300, env={"NUMBA_NUM_THREADS": "1", **__import__("os").environ})
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0.5 * r["estimate"] <= r["measured"] <= r["estimate"], r
