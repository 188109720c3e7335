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


# ---------------------------------------------------------------- huge designs: bounded pilots
def _scenario(clusters, trials, **kw):
    from simlab.scenario import FixedSize, PairedScenario

    return PairedScenario.from_rates(0.9, 0.0, 0.1, clusters=clusters, cluster_size=FixedSize(trials=trials), **kw)


def test_shrink_scenario_cuts_clusters_then_trials():
    """A scenario over the pilot's size keeps its law and loses clusters (K' = pairs // M, at
    least 2); where two clusters still exceed it, trials too (10^6 x 10^5 is 10^11 pairs)."""
    from simlab.scenario import ExplicitSizes, PairedScenario

    huge = _scenario(1_000_000, 100_000, rho=0.1)
    small = cost.shrink_scenario(huge, 1e6)
    assert (small.clusters, small.cluster_size.trials) == (10, 100_000)
    assert (small.cells, small.rho, small.label_noise) == (huge.cells, huge.rho, huge.label_noise)
    tiny = cost.shrink_scenario(huge, 1000)
    assert (tiny.clusters, tiny.cluster_size.trials) == (2, 500)
    ordinary = _scenario(300, 3)
    assert cost.shrink_scenario(ordinary, 1000) is ordinary
    explicit = PairedScenario(cells=(0.9, 0.05, 0.05, 0.0), clusters=6, cluster_size=ExplicitSizes(sizes=(1, 2, 3, 4, 5, 600)),
                              cluster_cells=tuple((0.9, 0.05, 0.05, 0.0) if i % 2 else (0.8, 0.1, 0.1, 0.0)
                                                  for i in range(6)))
    cut = cost.shrink_scenario(explicit, 100)
    assert cut.clusters == 2 == len(cut.cluster_cells) and cost.scenario_pairs(cut) <= 100
    assert cut.cluster_cells == (explicit.cluster_cells[0], explicit.cluster_cells[5])


def test_pilot_steps_are_bounded_whatever_the_design():
    steps = cost.pilot_steps(1e11)
    assert steps[-1] == cost.PILOT_MAX_PAIRS and cost.PILOT_FIRST_PAIRS <= steps[0] < 4 * cost.PILOT_FIRST_PAIRS
    assert all(b == 4 * a for a, b in zip(steps, steps[1:]))
    assert cost.pilot_steps(50_000)[-1] == 50_000


def _scaled(clock, a, b):
    """``make(p)`` of a fake work of ``a(p) + b(p) R`` seconds; the sizes made are recorded."""
    made = []

    def make(p):
        made.append(p)
        return clock.work(a(p), b(p)), p
    return make, made


def test_scaled_pilot_of_linear_work_reaches_its_largest_step_and_scales_linearly(clock):
    """10^11 pairs at 10 ns a pair (a replication of 1000 s): the pilot never draws over
    PILOT_MAX_PAIRS a replication, and the model scales its cost by the ratio of pairs."""
    make, made = _scaled(clock, lambda p: 0.001, lambda p: 1e-8 * p)
    fit = cost._scaled_pilot(make, 1e11)
    assert max(made) == cost.PILOT_MAX_PAIRS and fit.pairs == cost.PILOT_MAX_PAIRS
    assert (fit.overhead, fit.per_rep, fit.exponent) == (pytest.approx(0.001), pytest.approx(0.01), 1.0)
    model = cost._model(None, fit)
    assert model.per_rep_at(1e11) == pytest.approx(1e3)
    assert model.seconds(1e11, 10, calls=2) == pytest.approx(2 * 0.001 + 1e4)   # a fixed overhead stays fixed
    assert clock.now < 1.0   # the whole pilot, on the fake clock


def test_scaled_pilot_extrapolates_along_the_chord_of_its_two_largest_steps(clock):
    """A fixed 3 ms a replication on top of 1 ns a pair (the sequential engine: 3.6 ms at 10^6
    pairs, 360 s at 10^11): the slope, not the proportion (400 s); a set-up growing with the
    pairs (composition laws per cluster: 0.1 s at 250000 pairs) grows with them."""
    make, _ = _scaled(clock, lambda p: 0.001, lambda p: 0.003 + 1e-9 * p)
    model = cost._model(None, cost._scaled_pilot(make, 1e11))
    assert model.per_rep_at(1e11) == pytest.approx(0.004 + 1e-9 * (1e11 - 1e6))
    make, _ = _scaled(clock, lambda p: 4e-7 * p, lambda p: 1e-8 * p)
    model = cost._model(None, cost._scaled_pilot(make, 1e11))
    assert model.overhead_at(1e11) == pytest.approx(4e-7 * 1e11, rel=1e-6)


def test_scaled_pilot_stops_before_a_slow_step(clock):
    """1.2 us a pair: one replication at 62500 pairs takes 0.075 s, at 250000 it would take 0.3 s
    (over PILOT_STEP_SECONDS): the pilot stops at 62500 and extrapolates linearly from it."""
    make, made = _scaled(clock, lambda p: 0.0, lambda p: 1.2e-6 * p)
    fit = cost._scaled_pilot(make, 1e11)
    assert max(made) == 62_500 and fit.pairs == 62_500
    assert fit.per_rep == pytest.approx(0.075) and fit.exponent == 1.0
    assert cost._model(None, fit).per_rep_at(1e11) == pytest.approx(1.2e5)


def test_scaled_pilot_extrapolates_a_measured_superlinear_growth(clock):
    """A kernel quadratic in the pairs (bayes_hierarchical's posterior grid grows with the
    square of the pooled counts): the exponent measured between the two largest steps."""
    make, made = _scaled(clock, lambda p: 0.001, lambda p: 1e-12 * p * p)
    fit = cost._scaled_pilot(make, 1e11)
    assert max(made) == 250_000 and fit.exponent == pytest.approx(2.0) and clock.now < 1.0
    assert cost._model(None, fit).per_rep_at(1e6) == pytest.approx(1.0)


def test_scaled_pilot_takes_no_exponent_from_a_floored_cost(clock):
    """A set-up of 0.6 s at the largest step leaves the pilot's b at its floor (a quarter of
    the mean), far above the measured b of the step before: that is no growth to extrapolate."""
    make, made = _scaled(clock, lambda p: 0.6 if p > 10_000 else 0.001, lambda p: 1e-8 * p)
    fit = cost._scaled_pilot(make, 1e11)
    assert max(made) == 15_625 and fit.exponent == 1.0


def test_pilot_says_whether_it_measured_b(clock):
    assert cost._pilot_measured(clock.work(0.003, 2e-5))[2]
    assert not cost._pilot_measured(clock.work(0.6, 1e-6))[2]      # the budget stopped it: b is the floor
    assert not cost._pilot_measured(clock.work(0.5, 30.0))[2]      # timed alone


def test_model_extrapolates_above_the_largest_piloted_size():
    model = cost.CostModel((10, 100), (1e-3, 1e-2), 0.5)
    assert model.per_rep_at(55) == pytest.approx(5.5e-3)          # between: unchanged
    assert model.per_rep_at(1000) == pytest.approx(0.1) and model.overhead_at(1000) == pytest.approx(5.0)
    assert model.seconds(1000, 10, calls=2) == pytest.approx(2 * 5.0 + 1.0)
    assert cost.CostModel((100, 100), (1e-2, 1e-2), 0.0, 2.0).per_rep_at(1000) == pytest.approx(1.0)
    chord = cost.CostModel((10, 100), (1e-3, 1e-2), 0.5, slope=5e-5, overhead_slope=0.0)
    assert chord.per_rep_at(1100) == pytest.approx(0.06) and chord.overhead_at(1100) == 0.5


def test_study_estimate_of_a_huge_grid_pilots_only_bounded_scenarios(clock, monkeypatch):
    """clusters [30, 10^6] x trials [1, 10^5] (the prober's grid, silent for 617 s): the
    costliest point is piloted on copies of at most PILOT_MAX_PAIRS pairs, the cheapest as it is."""
    import studies.engine.runner as runner

    piloted = []

    def fake(sc, *a, replications, **k):
        piloted.append(cost.scenario_pairs(sc))
        clock.work(0.01, 1e-8 * cost.scenario_pairs(sc))(replications)

    monkeypatch.setattr(runner, "evaluate_scenario", fake)
    spec = parse_spec({"methods": ["cluster_t"], "replications": 200, "chunk_size": 100,
                       "scenario": {"clusters": 30, "trials": 1, "baseline": 0.9, "discordance": 0.1, "difference": 0.0},
                       "grid": {"clusters": [30, 1_000_000], "trials": [1, 100_000]}})
    est = cost.study_estimate(spec, workers=1, chunk_size=100)
    assert max(piloted) == cost.PILOT_MAX_PAIRS and min(piloted) == 30
    model = cost.CostModel((30, 1e6), (3e-7, 0.01), 0.01, slope=1e-8, overhead_slope=0.0)
    assert est.low == pytest.approx(sum(model.seconds(p, 200, 2) for p in (30, 3e6, 1e6, 1e11)))
    assert est.low > 2e5   # 200 replications of 10^11 pairs at 10 ns a pair


def test_sequential_estimate_pilots_a_scaled_schedule(clock, monkeypatch):
    """``sequential simulate --clusters 1000000 --trials 100000 --looks 1000000``: the pilot's
    scenario is cut to 10 clusters, and its looks with it (the last at its last cluster)."""
    import studies.engine.sequential as sequential
    from studies.engine import parse_sequential_spec

    seen = []

    def fake(sc, refs, schedule, margins, alpha, seed, sampler, start, stop):
        seen.append((sc.clusters, cost.scenario_pairs(sc), schedule.looks))
        assert schedule.looks[-1] <= sc.clusters
        clock.work(0.001, 1e-8 * cost.scenario_pairs(sc))(stop - start)

    monkeypatch.setattr(sequential, "sequential_task", fake)
    spec = parse_sequential_spec({
        "name": "huge", "methods": [{"name": "repeated_fixed"}], "schedule": {"looks": [500_000, 1_000_000]},
        "scenario": {"clusters": 1_000_000, "trials": 100_000, "baseline": 0.9, "discordance": 0.1,
                     "difference": 0.0}, "replications": 1})
    est = cost.sequential_study_estimate(spec, workers=1)
    assert max(p for _, p, _ in seen) == cost.PILOT_MAX_PAIRS
    assert (10, cost.PILOT_MAX_PAIRS, (5, 10)) in seen
    assert est.low == pytest.approx(0.001 + 1e3)


def test_scaled_schedule_in_clusters_and_in_trials():
    from methods.sequential.base import LookSchedule

    full, small = _scenario(1000, 100), _scenario(10, 100)
    assert cost.scaled_schedule(LookSchedule(looks=(100, 500, 1000)), full, small).looks == (1, 5, 10)
    assert cost.scaled_schedule(LookSchedule(looks=(1, 2, 1000)), full, small).looks == (1, 10)
    trials = LookSchedule(looks=(50_000, 100_000), unit="trials")
    assert cost.scaled_schedule(trials, full, small).looks == (500, 1000)
    assert cost.scaled_schedule(trials, full, full) is trials


def test_certificate_pilot_design_is_bounded():
    from studies.qualify.estimate import CERTIFY_PILOT_PAIRS, pilot_design

    assert pilot_design(300, 3) == (300, 3)                      # ordinary designs as they are
    assert pilot_design(20_000, 1) == (20_000, 1)
    assert pilot_design(1_000_000, 1) == (20_000, 1)
    assert pilot_design(20_000, 50) == (400, 50)
    assert pilot_design(1_000_000, 100_000) == (2, 10_000)
    for k, m in [(1_000_000, 100_000), (100_000, 10_000), (7, 99_999), (2, 100_000)]:
        kp, mp = pilot_design(k, m)
        assert 2 <= kp <= k and 1 <= mp <= m and kp * mp <= CERTIFY_PILOT_PAIRS


def test_certify_estimate_scales_a_huge_design_by_its_pairs(monkeypatch):
    """certify at 10^6 x 10^5 (silent > 15 s, then minutes): estimated on a 2 x 10^4 design and
    scaled by the ratio of pairs (10^11 / 2 x 10^4)."""
    import studies.qualify.estimate as estimate

    designs = []

    def fake(methods, policy, workers, finished=()):
        dom = policy.domain
        designs.append((tuple(dom.clusters.grid), tuple(s.mean() for s in dom.cluster_sizes)))
        return cost.TimeEstimate(1.0, 2.0, workers)

    monkeypatch.setattr(estimate, "qualify_estimate", fake)
    est = estimate.certify_estimate("cluster_t", 1_000_000, 100_000, 0.05)
    assert designs == [((2,), (10_000.0,))]
    assert (est.low, est.high) == (pytest.approx(5e6), pytest.approx(1e7))


def test_a_huge_grid_is_priced_from_its_cheapest_point_before_its_points_are_built():
    """Over EAGER_POINTS the floor comes from the cheapest point alone (least clusters, least
    trials), never from building the grid; a small grid has none."""
    from studies.engine import parse_spec, study_floor_estimate
    from studies.engine.spec import EAGER_POINTS

    def spec(n_diff: int):
        return parse_spec({"name": "huge", "methods": ["cluster_t"], "replications": 1000, "seed": 1,
                           "scenario": {"clusters": 30, "trials": 2, "baseline": 0.8, "discordance": 0.1,
                                        "difference": 0.0},
                           "grid": {"difference": [-0.05 + 0.05 * i / n_diff for i in range(n_diff)],
                                    "clusters": [40, 12, 25], "trials": [3, 1]}})

    small = spec(10)
    assert study_floor_estimate(small, 1, 1000) is None
    huge = spec(EAGER_POINTS // 6 + 1)
    cheapest = huge.cheapest_point()
    assert (cheapest.clusters, cheapest.cluster_size.mean()) == (12, 1.0)
    floor = study_floor_estimate(huge, 1, 1000)
    assert "_points" not in huge.__dict__          # nothing built but the cheapest point
    assert floor is not None and floor.low > 0.0
