"""``device='gpu'``: the studies engine's counts equal the CPU's for the same seed, bit for bit
(on a GPU, or under numba's CUDA simulator on small inputs)."""
from __future__ import annotations

import numpy as np
import pytest

from simlab import gpu
from simlab.scenario import ExplicitSizes, FixedSize, PairedScenario, PoissonSize
from studies.engine import device as _device
from studies.engine.runner import evaluate_scenario, run_study
from studies.engine.spec import parse_spec


METHODS = ["clustered_normal", {"name": "cluster_t", "options": {"min_clusters": 5}}, "cluster_t"]
SCENARIOS = [
    PairedScenario.independent_arms(0.97, 0.93, clusters=30, cluster_size=FixedSize(trials=3)),
    PairedScenario(cells=(0.5, 0.2, 0.2, 0.1), clusters=12, cluster_size=FixedSize(trials=4), rho=0.3),
    PairedScenario(cells=(0.96, 0.04, 0.0, 0.0), clusters=30, cluster_size=FixedSize(trials=1)),  # zero variance
    PairedScenario(cells=(0.7, 0.1, 0.05, 0.15), clusters=9,
                   cluster_size=ExplicitSizes(sizes=(2, 0, 2, 2, 0, 2, 2, 2, 2))),  # empty clusters
]


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: f"K{s.clusters}")
def test_gpu_tallies_equal_cpu(sc):
    if not gpu.available():
        pytest.skip(f"no GPU and no CUDA simulator: {gpu.why_unavailable()}")
    kw = dict(margins=(0.03, 0.1), alphas=(0.05, 0.025), replications=150, seed=11, start=4_000_000_000)
    cpu = evaluate_scenario(sc, METHODS, device="cpu", **kw)
    got = evaluate_scenario(sc, METHODS, device="gpu", batch=64, **kw)  # several sampling batches
    assert np.array_equal(got.tally, cpu.tally)
    assert cpu.tally[..., 1].sum() > 0 and cpu.tally[..., 2].sum() > 0  # passes and fails both occur


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_gpu_study_dataset_equals_cpu():
    if not gpu.available():
        pytest.skip(f"no GPU and no CUDA simulator: {gpu.why_unavailable()}")
    spec = parse_spec({"name": "gpu-eq", "methods": ["clustered_normal", "cluster_t"],
                       "scenario": {"clusters": 10, "trials": 2, "rho": 0.0, "baseline": 0.95,
                                    "candidate": 0.92}, "grid": {"clusters": [10, 30]},
                       "margins": [0.03], "alphas": [0.025], "replications": 120, "seed": 5})
    cpu = run_study(spec, chunk_size=50, progress=False)
    with _device.using("gpu"):  # what --device gpu selects
        got = run_study(spec, n_jobs=2, chunk_size=70, progress=False)
    for v in cpu.data_vars:
        assert np.array_equal(got[v].values, cpu[v].values, equal_nan=cpu[v].dtype.kind == "f"), v


def test_gpu_refuses_what_it_cannot_run_with_a_reason():
    sc = SCENARIOS[0]
    with pytest.raises(ValueError, match="need tables"):
        evaluate_scenario(sc, ["paired_wald"], replications=10, device="gpu")
    poisson = PairedScenario(cells=(0.9, 0.05, 0.03, 0.02), clusters=5,
                             cluster_size=PoissonSize(mean_trials=3.0, minimum=1))
    with pytest.raises(ValueError, match="share one size|draws no cluster moments"):
        evaluate_scenario(poisson, ["clustered_normal"], replications=10, device="gpu")
    with pytest.raises(ValueError, match="device must be one of"):
        evaluate_scenario(sc, ["clustered_normal"], replications=10, device="tpu")
