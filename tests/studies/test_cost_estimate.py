"""Time estimates made before long work (issue 14.3): the pilot's fit, on a deterministic
clock, and the estimates' bookkeeping on real (tiny) work."""
from __future__ import annotations

import pytest

from methods.qualification import named_policy
from methods.registry import get
from studies.engine import cost
from studies.engine.spec import parse_spec


class FakeClock:
    """``perf_counter`` that advances only when the fake work runs: ``a + b * reps``."""

    def __init__(self):
        self.now = 0.0
        self.calls: list[int] = []  # the replication counts run, in order

    def __call__(self) -> float:
        return self.now

    def work(self, a: float, b: float):
        def run(reps: int) -> None:
            self.calls.append(reps)
            self.now += a + b * reps
        return run


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(cost.time, "perf_counter", c)
    return c


def test_pilot_recovers_overhead_and_per_replication_cost(clock):
    a, b = cost._pilot(clock.work(0.003, 2e-5))
    assert a == pytest.approx(0.003, rel=1e-9)
    assert b == pytest.approx(2e-5, rel=1e-9)


def test_pilot_grows_replications_until_measurable(clock):
    cost._pilot(clock.work(0.0, 1e-8))
    seen = clock.calls
    # warm-up, one timed replication; 1e-8 s/rep never reaches 0.02 s: R grows x4 up to its cap, with its 4R run
    assert seen == [1, 1] + [4 ** i for i in range(1, 10)] and seen[-2] == cost.PILOT_MAX_REPLICATIONS


def test_pilot_measures_cheap_replications_behind_a_large_overhead(clock):
    # 0.08 s of scenario set-up per call, 0.6 us per replication (clustered_normal at 30 x 1): the
    # replications must outweigh the overhead before b is taken (it was 2000x too large)
    a, b = cost._pilot(clock.work(0.08, 6e-7))
    assert a == pytest.approx(0.08, rel=1e-6)
    assert b == pytest.approx(6e-7, rel=1e-6)


def test_pilot_of_slow_replications_runs_two_of_them(clock):
    # 30 s per replication (a costly kernel on clusters of 100000 trials): the pilot stops after
    # the warm-up and one timed replication, and counts all of it per replication
    a, b = cost._pilot(clock.work(0.5, 30.0))
    seen = clock.calls
    assert seen == [1, 1]
    assert (a, b) == (0.0, pytest.approx(30.5))


def test_pilot_never_starts_a_timing_over_its_budget(clock):
    # 0.3 s of set-up and 0.3 s per replication (trial_bootstrap at 100 x 1500 took 0.6 s a
    # replication, and the pilot's 4- and 16-replication timings 14 s before its estimate):
    # 4 replications would exceed the budget, so the second timing is of 2, and the fit is exact
    a, b = cost._pilot(clock.work(0.3, 0.3))
    seen = clock.calls
    assert seen == [1, 1, 2]
    assert (a, b) == (pytest.approx(0.3), pytest.approx(0.3))
    assert 4 * (0.3 + 0.3) > cost.PILOT_BUDGET_SECONDS  # 4 times one replication's 0.6 s


def test_pilot_stops_growing_before_a_timing_over_its_budget(clock):
    # 0.4 s of set-up, 0.01 s a replication: 4 and 16 replications (0.44 s, 0.56 s) differ by
    # less than the smaller timing, but 64 would start a timing of about 4 x 0.56 s > budget: the
    # pilot fits on 4 and 16 (exact here), rather than running on
    a, b = cost._pilot(clock.work(0.4, 0.01))
    seen = clock.calls
    assert seen == [1, 1, 4, 16]
    assert (a, b) == (pytest.approx(0.4), pytest.approx(0.01))
    assert 4 * (0.4 + 0.01 * 16) > cost.PILOT_BUDGET_SECONDS


def test_model_interpolates_in_pairs_and_adds_overhead_per_call(clock):
    model = cost.fit(clock.work(0.001, 1e-6), 10, clock.work(0.002, 1e-4), 1010)
    assert model.overhead == pytest.approx(0.002)
    assert model.per_rep_at(510) == pytest.approx(0.5 * (1e-6 + 1e-4))
    assert model.seconds(1010, 1000, calls=3) == pytest.approx(3 * 0.002 + 0.1)


def test_estimate_describes_a_range_or_a_point():
    assert cost.TimeEstimate(30, 31, 1).describe() == "about 30 s"
    assert cost.TimeEstimate(300, 7200 * 2, 2).describe() == "5 min to 4.0 h"
    assert cost.TimeEstimate(0.01, 0.5, 1).describe() == "under 1 s"
    assert cost.TimeEstimate(0.2, 30.2, 1).describe() == "under 1 s to 30 s"
    assert cost.TimeEstimate(0, 0, 2).describe() == "under 1 s"


def test_study_estimate_divides_by_workers_and_counts_every_point(clock, monkeypatch):
    """Every grid point costs ``chunks x overhead + per_rep x reps``; the pilot runs at the
    cheapest and the costliest point (here with a fake engine: a + b K)."""
    import studies.engine.runner as runner

    monkeypatch.setattr(runner, "evaluate_scenario",
                        lambda sc, *a, replications, **k: clock.work(0.01, 1e-6 * sc.clusters)(replications))
    spec = parse_spec({"methods": ["paired_wald"], "replications": 1000, "chunk_size": 500,
                       "scenario": {"trials": 1, "baseline": 0.9, "discordance": 0.1, "difference": -0.03},
                       "grid": {"clusters": [10, 20, 40]}})
    est = cost.study_estimate(spec, workers=2, chunk_size=500)
    per_point = [2 * 0.01 + 1e-6 * k * 1000 for k in (10, 20, 40)]
    assert est.low == est.high == pytest.approx(sum(per_point) / 2)


def test_qualify_estimate_brackets_the_first_round_and_full_escalation(clock, monkeypatch):
    import studies.qualify.tasks as qualify

    monkeypatch.setattr(qualify, "run_task",
                        lambda policy, task, estimands: clock.work(0.001, 1e-7 * task.spec.clusters)(task.stop))
    policy = named_policy("reduced-small")
    est = cost.qualify_estimate([get("paired_wald")], policy, workers=1)
    schedule = policy.replication_schedule()
    assert est.high > est.low > 0
    assert est.high / est.low < schedule[-1] / schedule[0]


def test_qualify_estimate_does_not_undercount_costs_that_grow_with_discordance(clock, monkeypatch):
    """A method whose cost grows with the counts (per replication ~ K x (1 + 10 x
    discordance)): the pilot's costliest scenario is the most discordant one at the largest
    K x M, so the first-round estimate is not below the true first round."""
    import studies.qualify.tasks as qualify
    from studies.qualify.scenarios import grid_specs

    def per_rep(spec):
        return 1e-7 * spec.clusters * (1 + 10 * spec.discordance)

    monkeypatch.setattr(qualify, "run_task",
                        lambda policy, task, estimands: clock.work(0.0, per_rep(task.spec))(task.stop))
    policy = named_policy("reduced-small")
    est = cost.qualify_estimate([get("paired_wald")], policy, workers=1)
    first = policy.replication_schedule()[0]
    true_first = sum(per_rep(s) * first for s in grid_specs(policy, "trial_weighted"))
    assert est.low >= true_first


def test_real_pilot_is_positive_and_finite():
    spec = parse_spec({"methods": ["paired_wald"], "replications": 100,
                       "scenario": {"clusters": 10, "trials": 1, "baseline": 0.9, "discordance": 0.1,
                                    "difference": -0.03}})
    est = cost.study_estimate(spec, workers=1, chunk_size=100)
    assert 0 < est.low < 60


def test_qualify_estimate_leaves_out_the_tasks_a_checkpoint_holds(clock, monkeypatch):
    """A resumed run's estimate counts only what it will compute: each scenario's
    first-round cost is in exactly one of two complementary resumed estimates, and with
    every first-round task finished only the escalation is left."""
    import studies.qualify.tasks as qualify
    from studies.qualify.scenarios import grid_specs

    monkeypatch.setattr(qualify, "run_task",
                        lambda policy, task, estimands: clock.work(0.001, 1e-7 * task.spec.clusters)(task.stop))
    policy = named_policy("reduced-small")
    m = [get("paired_wald")]
    first = policy.replication_schedule()[0]
    specs = grid_specs(policy, "trial_weighted")
    full = cost.qualify_estimate(m, policy, workers=1)
    a = cost.qualify_estimate(m, policy, workers=1, finished={(s.point, 0, first) for s in specs[::2]})
    b = cost.qualify_estimate(m, policy, workers=1, finished={(s.point, 0, first) for s in specs[1::2]})
    assert 0 < a.low < full.low and 0 < b.low < full.low
    assert a.low + b.low == pytest.approx(full.low)
    assert full.high - a.high == pytest.approx(full.low - a.low)
    done = cost.qualify_estimate(m, policy, workers=1, finished={(s.point, 0, first) for s in specs})
    assert done.low == 0 and done.high == pytest.approx(full.high - full.low)


def test_estimate_of_clusters_with_many_trials_enumerates_no_law(monkeypatch):
    """A spec with 1500 or 100000 trials per cluster (allowed) is estimated at once: the
    pilot's sampler is chosen without building a cluster law of C(m + 3, 3) tables."""
    from simlab.exact import cluster_pmf

    def refuse(*a, **kw):
        raise AssertionError("a many-trial cluster law was enumerated")

    monkeypatch.setattr(cluster_pmf, "compositions", refuse)
    spec = parse_spec({"name": "many-trials", "methods": ["paired_wald"], "replications": 1000, "seed": 1,
                       "scenario": {"clusters": 4, "trials": 1500, "rho": 0.1, "baseline": 0.9,
                                    "discordance": 0.1, "difference": -0.03},
                       "grid": {"trials": [1500, 100_000]}})
    est = cost.study_estimate(spec, workers=1, chunk_size=1000)
    assert 0 < est.low < float("inf")


def test_an_exact_convolution_certificate_counts_its_nodes(monkeypatch):
    """The exact-convolution engine's cost is mostly its node search (one Parseval sum per
    (discordance, rho) node; at 300 x 3: 17 s of a 19 s certificate, which counting the states
    alone put under 1 s).  The estimate adds ``MAX_NODES`` timed nodes, and ``dense_search``
    never evaluates more nodes than that."""
    from studies.exact import convolution
    from studies.qualify.estimate import certify_estimate

    timed = convolution.node_seconds(10, 3)          # a real pilot: a positive, finite time
    assert 0.0 < timed < float("inf")
    monkeypatch.setattr(convolution, "node_seconds", lambda clusters, trials: 1.0)   # one node: 1 s
    est = certify_estimate(get("binomial_loss"), 20, 3, 0.03, 0.1)
    assert convolution.MAX_NODES <= est.low < convolution.MAX_NODES + 5.0 and est.high == 2.0 * est.low
    assert certify_estimate(get("binomial_loss"), 20, 1, 0.03, 0.1).low < 5.0   # exact-discordant: no such nodes

    states = convolution.ConvolutionStates(get("binomial_loss"), 10, 3, 0.03, 0.025, probe=False)
    q, rho, _ = convolution.dense_search(states, 0.031, 0.5, 0.1)
    assert convolution.GRID_DISCORDANCES * convolution.GRID_RHOS < q.size <= convolution.MAX_NODES
