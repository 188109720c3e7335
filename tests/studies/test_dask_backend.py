"""The dask.distributed backend of the one executor (issue 15.1): a real LocalCluster of
two worker processes (one thread each) gives bitwise the datasets and records of a serial
run, and a worker killed mid-run loses nothing and counts nothing twice."""
from __future__ import annotations

import json
import os
import signal

import pytest

from methods import registry
from methods.qualification import named_policy
from studies.datasets import open_dataset, same_data
from studies.engine.executor import DaskExecutor, SerialExecutor, make_executor
from studies.qualify.run import qualify
from studies.engine.runner import run_study
from studies.engine.sequential import parse_sequential_spec, run_sequential_study
from studies.engine.spec import parse_spec

SPEC = {"name": "dask", "methods": ["clustered_normal", "paired_wald", "agresti_min"],
        "scenario": {"clusters": 12, "trials": 3, "rho": 0.1, "baseline": 0.9, "discordance": 0.1,
                     "difference": -0.03},
        "grid": {"difference": [-0.03, 0.0], "rho": [0.0, 0.2]}, "replications": 4000, "seed": 9}
CHUNK = 200  # 4 scenarios x 20 tasks


@pytest.fixture(scope="module")
def cluster():
    with make_executor(dask_workers=2) as ex:
        assert isinstance(ex, DaskExecutor) and ex.workers == 2
        yield ex


def test_study_on_dask_equals_serial(cluster):
    spec = parse_spec(SPEC)
    assert same_data(run_study(spec, executor=cluster, chunk_size=CHUNK), run_study(spec, chunk_size=CHUNK))


def test_sequential_study_on_dask_equals_serial(cluster):
    spec = parse_sequential_spec({"methods": ["repeated_fixed", "likelihood_ratio"], "looks": [10, 20, 30],
                                  "scenario": {"cells": [0.9, 0.05, 0.03, 0.02]}, "grid": {"rho": [0.0, 0.3]},
                                  "replications": 3000, "seed": 3, "chunk_size": 500})
    assert same_data(run_sequential_study(spec, executor=cluster), run_sequential_study(spec))


def test_qualification_on_dask_equals_serial(cluster):
    policy = named_policy("reduced-small")
    methods = [registry.get("clustered_normal"), registry.get("paired_wald")]
    a = qualify(methods, policy, executor=cluster, out_dir=None)
    b = qualify(methods, policy, executor=SerialExecutor(), out_dir=None)
    for x, y in zip(a.outcomes, b.outcomes):
        assert x.record.scenarios == y.record.scenarios
        assert x.record.cells == y.record.cells and x.record.worst_case == y.record.worst_case
    assert a.replications == b.replications


def test_worker_killed_mid_run_loses_and_double_counts_nothing(cluster):
    """SIGKILL one worker process after the first finished task: the scheduler reruns its
    tasks elsewhere (the nanny restarts the worker); every task's result is taken once."""
    spec = parse_spec(SPEC)
    pids = cluster.client.run(os.getpid)
    victim = sorted(pids.values())[0]
    killed = []

    def kill_once(done: int, total: int) -> None:
        if not killed:
            os.kill(victim, signal.SIGKILL)
            killed.append(done)

    ds = run_study(spec, executor=cluster, chunk_size=CHUNK, on_task_done=kill_once)
    assert killed and killed[0] < 80  # the kill happened with work outstanding
    assert int(ds.n_reps.min()) == int(ds.n_reps.max()) == 4000
    assert same_data(ds, run_study(spec, chunk_size=CHUNK))
    assert victim not in cluster.client.run(os.getpid).values()


def test_cli_study_run_on_the_scheduler_equals_one_process(cluster, tmp_path, capsys):
    from simlab.cli import main

    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({**SPEC, "replications": 2000, "chunk_size": 500}))
    a, b = tmp_path / "dask.nc", tmp_path / "local.nc"
    assert main(["study", "run", str(spec), "--scheduler", cluster.scheduler, "--out", str(a),
                 "--work-dir", str(tmp_path / "w"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks"] == 16
    assert main(["study", "run", str(spec), "--out", str(b), "--no-checkpoint", "--json"]) == 0
    assert same_data(open_dataset(a), open_dataset(b))


def test_bad_backend_options_are_clear_errors():
    with pytest.raises(ValueError, match="scheduler or dask_workers"):
        make_executor(scheduler="tcp://127.0.0.1:1", dask_workers=2)
    with pytest.raises(ValueError, match="dask_workers must be >= 1"):
        make_executor(dask_workers=0)
    with pytest.raises(ValueError, match="scheduler must be an address"):
        make_executor(scheduler="localhost")
    with pytest.raises(ValueError, match="n_jobs must be >= 1"):
        make_executor(n_jobs=0)


def test_sizing_on_dask_equals_serial(cluster):
    """``size``'s false-pass certificate runs its simulation on the executor: same answer."""
    from studies.sizing.size import size

    kw = dict(margin=0.1, difference=0.0, trials=3, rho=0.1, policy=named_policy("reduced-small"), max_reps=8000)
    a = size(registry.get("empirical_bernstein"), executor=cluster, **kw)
    b = size(registry.get("empirical_bernstein"), **kw)
    assert a.false_pass["engine"] == "simulation"  # the executor's path, not an exact engine
    # the certificate's hash covers its creation time; every figure in it is the same
    fa, fb = ({k: v for k, v in r.false_pass.items() if k != "certificate_sha256"} for r in (a, b))
    assert (a.clusters, a.power_at_k, fa) == (b.clusters, b.power_at_k, fb)
