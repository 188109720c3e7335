"""The batched qualification engine (studies.qualify.batch, issue 15.2): the records of
``qualify(..., batched=True)`` -- every scenario's n_reps, n_pass, n_inconclusive, bounds
and verdict, and every cell -- equal the per-scenario engine's, through escalation and
refinement, for the moment path (cluster_t), the table path (tango_score), a loss-rate
method (binomial_loss), sequential methods, scenarios without a shared law (random cluster
sizes; label noise with rho > 0 and several trials), and any batching or worker count."""
from __future__ import annotations

import pytest

from methods import registry
from methods.qualification import Axis, IntAxis, QualificationDomain, QualificationPolicy
from simlab.scenario import FixedSize, LabelNoise, PairedScenario, PoissonSize
from studies.qualify import batch as qualify_batch
from studies.qualify.run import ScenarioPoint, Task, method_key, qualify, run_task, scenario_of
from studies.qualify.batch import _Shared, law_batches, run_batch

NOISE = (LabelNoise(), LabelNoise(candidate_sensitivity=0.95, baseline_specificity=0.97))


def small_policy(**kw) -> QualificationPolicy:
    dom = dict(clusters=IntAxis(lo=10, hi=31, grid=(10, 31)),
               cluster_sizes=(FixedSize(trials=1), FixedSize(trials=4), PoissonSize(mean_trials=2.0)),
               rho=Axis(lo=0.0, hi=0.3, grid=(0.0, 0.3)), margin=Axis(lo=0.03, hi=0.03, grid=(0.03,)),
               baseline=Axis(lo=0.9, hi=1.0, grid=(0.9, 1.0)), discordance=Axis(lo=0.05, hi=0.2, grid=(0.05, 0.2)),
               label_noise=NOISE)
    dom.update(kw.pop("domain", {}))
    base = dict(domain=QualificationDomain(**dom), min_replications=300, max_replications=1200, seed=5,
                refine_evaluations=1)
    base.update(kw)
    return QualificationPolicy(**base)


def _same(a, b) -> None:
    assert [o.record.method for o in a.outcomes] == [o.record.method for o in b.outcomes]
    for x, y in zip(a.outcomes, b.outcomes):
        assert x.record.scenarios == y.record.scenarios, x.record.method.name
        assert x.record.cells == y.record.cells and x.record.worst_case == y.record.worst_case
    assert (a.grid_scenarios, a.refine_scenarios, a.replications, a.method_replications) == \
           (b.grid_scenarios, b.refine_scenarios, b.replications, b.method_replications)


@pytest.fixture(scope="module")
def fixed_runs():
    pol = small_policy()
    methods = [registry.get(n) for n in ("binomial_loss", "cluster_t", "tango_score")]
    return pol, methods, qualify(methods, pol, out_dir=None, batched=False), qualify(methods, pol, out_dir=None)


def test_batched_records_equal_the_per_scenario_records(fixed_runs):
    _, _, per, batched = fixed_runs
    _same(per, batched)
    s = batched.outcomes[0].record.scenarios
    assert len(set(s.n_reps)) > 1 and "refine" in s.stage  # escalation and refinement were exercised
    assert {0.0, 0.3} <= set(s.rho) and {0, 1, 2} <= set(s.size) and {0, 1} <= set(s.noise)


def test_moment_path_alone_and_joblib_workers_equal_serial(fixed_runs):
    pol, methods, per, batched = fixed_runs
    alone = qualify([registry.get("cluster_t")], pol, out_dir=None)  # every task on the moment path
    alone_per = qualify([registry.get("cluster_t")], pol, out_dir=None, batched=False)
    _same(alone, alone_per)
    _same(qualify(methods, pol, n_jobs=2, out_dir=None), batched)


def test_any_batching_gives_each_task_its_own_counts(monkeypatch):
    """Counts depend on a task's own replication range only: tasks split into one-task
    batches, tiny chunks or all in one batch, over ranges that start anywhere.  Difference
    methods share scenarios; a loss-rate method's scenarios sit on its own null boundary."""
    pol = small_policy()
    dom = pol.domain
    diff = tuple(method_key(registry.get(n)) for n in ("cluster_t", "tango_score"))
    loss = (method_key(registry.get("binomial_loss")),)
    groups = [(diff, ("cluster_weighted", "trial_weighted"), 0.2), (loss, ("loss_rate",), 0.1)]
    for keys, estimands, q in groups:
        tasks = [Task(ScenarioPoint(k, s, r, 0.03, n, 0.9, q), keys, start, start + 137)
                 for k in (10, 31) for s in range(3) for r in (0.0, 0.3) for n in range(2) for start in (0, 1000)]
        want = [run_task(pol, t, estimands) for t in tasks]
        assert [r for _, r in sorted(run_batch(pol, list(enumerate(tasks)), estimands))] == want
        with monkeypatch.context() as mp:
            mp.setattr(qualify_batch, "MOMENT_ROWS", 50)
            mp.setattr(qualify_batch, "TABLE_CELLS", 700)
            for batch in law_batches(pol, tasks, workers=3):
                for i, r in run_batch(pol, batch, estimands):
                    assert r == want[i]
        with monkeypatch.context() as mp:   # moment chunks capped by clusters x replications (3 or 10 rows here)
            mp.setattr(qualify_batch, "MOMENT_DRAWS", 100)
            assert [r for _, r in sorted(run_batch(pol, list(enumerate(tasks)), estimands))] == want
    assert dom.cluster_sizes[2].kind == "poisson"  # random sizes: drawn from their own (trial) source


def test_sequential_methods_are_batched_with_the_same_counts():
    pol = small_policy(domain={"looks": 3, "clusters": IntAxis(lo=12, hi=31, grid=(12, 31)),
                               "cluster_sizes": (FixedSize(trials=1), FixedSize(trials=3))})
    methods = [registry.get("alpha_spending"), registry.get("repeated_fixed")]
    _same(qualify(methods, pol, out_dir=None, batched=False), qualify(methods, pol, out_dir=None))


def test_scenario_key_of_the_shared_template_is_the_scenarios_own():
    pol = small_policy()
    for size in range(2):
        for noise in range(2):
            sh = _Shared(pol, ScenarioPoint(10, size, 0.3, 0.03, noise, 0.9, 0.2), ("trial_weighted",), {})
            for k in (1, 9, 10, 11, 31, 100, 12345):
                assert sh.key(k) == scenario_of(pol, ScenarioPoint(k, size, 0.3, 0.03, noise, 0.9, 0.2), "trial_weighted").key
    assert isinstance(sh.scenario, PairedScenario)


@pytest.mark.parametrize("stem", ["clustered_normal.b2433391f9", "tango_score.b2433391f9",
                                  "binomial_loss.b2433391f9", "alpha_spending.12f1d41521",
                                  "repeated_fixed--binomial_loss.12f1d41521"])
def test_batched_engine_reproduces_shipped_records(stem):
    """The shipped records were made by the per-scenario engine: re-simulated in one batch
    from (policy seed, scenario), a spread of their scenarios (every K, size, rho and margin
    present, at most 8000 replications each) gets exactly the recorded counts."""
    from methods.qualification import load_record, records_dir

    rec = load_record(records_dir() / f"{stem}.json", check_dataset=False)
    s = rec.scenarios
    key = method_key(rec.method.resolve())
    picked = {}
    for i in range(len(s)):
        if s.n_reps[i] <= 8000:
            picked.setdefault((s.clusters[i], s.size[i], s.rho[i], s.margin[i], s.stage[i]), i)
    tasks = [Task(ScenarioPoint(s.clusters[i], s.size[i], s.rho[i], s.margin[i], s.noise[i], s.baseline[i], s.discordance[i]),
                  (key,), 0, s.n_reps[i]) for i in picked.values()]
    assert len(tasks) >= 20
    got = dict(run_batch(rec.policy, list(enumerate(tasks)), (rec.method.estimand,)))
    assert [got[j][key] for j in range(len(tasks))] == [(s.n_pass[i], s.n_inconclusive[i]) for i in picked.values()]
