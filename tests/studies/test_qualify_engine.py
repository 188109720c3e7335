"""The qualifier (studies.qualify.run): grid + adaptive replications + golden-section refinement,
checked against exact false-pass probabilities, for worker-count invariance, and for the
seed's design point (clustered_normal, 30 customers, one trial each, margin 0.03)."""
from __future__ import annotations

import math

import pytest
import xarray as xr

from methods import registry
from methods.qualification import (Axis, DesignPoint, IntAxis, QualificationDomain, QualificationPolicy, covers,
                                   load_record)
from simlab.scenario import FixedSize, PairedScenario
from studies.exact.fixed import exact_measures
from studies.qualify.run import GOLDEN, LineSearch, qualify
from tests.reference_values import SEQUENTIAL_SEED_PROMOTION_5DP

METHODS = ["clustered_normal", "paired_wald", "tango_score"]


def engine_policy(**kw) -> QualificationPolicy:
    dom = QualificationDomain(
        clusters=IntAxis(lo=10, hi=100, grid=(10, 30, 100)),
        cluster_sizes=(FixedSize(trials=1), FixedSize(trials=5)),
        rho=Axis(lo=0.0, hi=0.3, grid=(0.0, 0.3)), margin=Axis(lo=0.03, hi=0.03, grid=(0.03,)),
        baseline=Axis(lo=0.9, hi=1.0, grid=(0.9, 1.0)), discordance=Axis(lo=0.03, hi=0.2, grid=(0.03, 0.2)))
    base = dict(domain=dom, min_replications=1000, max_replications=4000, seed=7)
    base.update(kw)
    return QualificationPolicy(**base)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("qual")
    r = qualify([registry.get(n) for n in METHODS], engine_policy(), n_jobs=1, out_dir=out)
    return r, out


def _records(run):
    return {o.record.method.name: o for o in run[0].outcomes}


def test_every_scenario_recorded_and_files_verify(run):
    r, out = run
    pol = engine_policy()
    assert r.grid_scenarios == 12 * 3  # 12 cells x 3 (baseline, discordance) points
    for o in r.outcomes:
        rec = load_record(o.record_path)
        assert rec == o.record
        ds = xr.open_dataset(o.dataset_path, engine="h5netcdf")
        assert ds.sizes["scenario"] == len(rec.scenarios)
        assert list(ds["n_pass"].values) == list(rec.scenarios.n_pass)
        assert list(ds["n_reps"].values) == list(rec.scenarios.n_reps)
        assert ds.attrs["policy_sha256"] == pol.sha256 == rec.policy_sha256
        assert sum(s == "grid" for s in rec.scenarios.stage) == r.grid_scenarios
        ds.close()
        # replications only take values of the policy's schedule
        assert set(rec.scenarios.n_reps) <= set(pol.replication_schedule())


def test_seed_design_point_is_not_qualified_for_clustered_normal(run):
    rec = _records(run)["clustered_normal"].record
    s = rec.scenarios
    i = next(i for i in range(len(s)) if (s.clusters[i], s.size[i], s.baseline[i], s.discordance[i]) == (30, 0, 1.0, 0.03)
             and s.rho[i] == 0.0)
    exact = 0.97 ** 30  # zero losses among 30 single-trial customers -> zero SD -> pass
    n = s.n_reps[i]
    assert abs(s.n_pass[i] / n - exact) <= 4 * math.sqrt(exact * (1 - exact) / n)
    assert s.verdict[i] == "exceeds"
    c = covers(rec, DesignPoint(clusters=30, margin=0.03, cluster_size=FixedSize(trials=1), rho=0.0))
    assert not c.covered and "exceeds" in c.reason
    # below its registered minimum of 30 clusters it is always inconclusive: vacuously qualified
    cell = rec.cell_map()[(10, 0, 0.0, 0.03, 0)]
    assert cell.verdict == "qualified" and cell.vacuous


def test_single_trial_rates_agree_with_exact_enumeration(run):
    """Simulator vs exact (studies.exact.fixed, pooled trinomial law): within 4 MC SE."""
    pol = engine_policy()
    checked = 0
    for name in ("paired_wald", "tango_score"):
        rec = _records(run)[name].record
        m = registry.get(name)
        s = rec.scenarios
        for i in range(len(s)):
            if s.size[i] != 0 or s.rho[i] != 0.0:
                continue
            sc = PairedScenario.from_rates(s.baseline[i], -s.margin[i], s.discordance[i], clusters=s.clusters[i])
            p = exact_measures(sc, m, s.margin[i], pol.alpha).pass_rate
            n = s.n_reps[i]
            tol = 4 * math.sqrt(max(p * (1 - p), 1.0 / n) / n)
            assert abs(s.n_pass[i] / n - p) <= tol, (name, i, s.n_pass[i] / n, p)
            checked += 1
    assert checked >= 2 * 9


def test_trial_level_method_fails_under_clustering(run):
    """paired_wald treats 5 correlated trials as independent: at rho = 0.3 (design effect 2.2)
    its false-pass rate demonstrably exceeds the threshold for every K."""
    rec = _records(run)["paired_wald"].record
    cmap = rec.cell_map()
    for k in (10, 30, 100):
        assert cmap[(k, 1, 0.3, 0.03, 0)].verdict == "exceeds"
    s = rec.scenarios
    worst_rho = max(s.n_pass[i] / s.n_reps[i] for i in range(len(s)) if s.size[i] == 1 and s.rho[i] == 0.3
                    and s.clusters[i] == 100)
    assert worst_rho > 2 * rec.threshold


def test_refinement_searches_inside_the_grid_neighbourhood(run):
    pol = engine_policy()
    found = 0
    for o in run[0].outcomes:
        s = o.record.scenarios
        for i in range(len(s)):
            if s.stage[i] != "refine":
                continue
            found += 1
            assert pol.domain.baseline.lo <= s.baseline[i] <= pol.domain.baseline.hi
            q_hi = min(0.2, 2 * s.baseline[i] - 0.03, 2 * (1 - s.baseline[i]) + 0.03)
            assert 0.03 - 1e-12 <= s.discordance[i] <= q_hi + 1e-12
            sc = PairedScenario.from_rates(s.baseline[i], -s.margin[i], s.discordance[i], clusters=10)
            assert sc.true_difference_trial() == pytest.approx(-0.03, abs=1e-12)
    assert found >= run[0].refine_scenarios > 0


def test_golden_section_finds_the_maximum_of_a_unimodal_function():
    f = lambda x: 1.0 - (x - 0.6318) ** 2  # noqa: E731
    ls = LineSearch(method=("m", (), None), cell=(10, 0, 0.0, 0.03, 0), axis=1, lo=0.0, hi=1.0, fixed=0.9,
                    budget=30, points={0.5: f(0.5)})
    for _ in range(30):
        x = ls.propose()
        if x is None:
            break
        ls.points[x] = f(x)
        ls.budget -= 1
    best = max(ls.points, key=ls.points.get)
    assert abs(best - 0.6318) < 2e-3
    # first step goes into the larger gap at the golden fraction
    ls2 = LineSearch(method=("m", (), None), cell=(10, 0, 0.0, 0.03, 0), axis=1, lo=0.0, hi=1.0, fixed=0.9,
                     budget=3, points={0.2: 1.0})
    assert ls2.propose() == pytest.approx(0.2 + GOLDEN * 0.8)
    assert LineSearch(method=("m", (), None), cell=(10, 0, 0.0, 0.03, 0), axis=1, lo=0.0, hi=1.0, fixed=0.9,
                      budget=3, points={0.2: 0.0}).propose() is None  # no false passes: nothing to chase


def test_results_do_not_depend_on_worker_count(run, tmp_path):
    pol = engine_policy()
    names = ["paired_wald", "tango_score"]
    par = qualify([registry.get(n) for n in names], pol, n_jobs=2, out_dir=None)
    base = _records(run)
    for o in par.outcomes:
        a, b = o.record.scenarios, base[o.record.method.name].record.scenarios
        assert a == b
        assert o.record.cells == base[o.record.method.name].record.cells


def test_qualify_rejects_sequential_and_duplicate_methods():
    pol = engine_policy()
    with pytest.raises(ValueError, match="twice"):
        qualify([registry.get("paired_wald")] * 2, pol, out_dir=None)
    seq = registry.names("sequential")
    assert seq
    with pytest.raises(ValueError, match="must declare looks"):
        qualify([registry.get(seq[0])], pol, out_dir=None)
    looked = engine_policy(domain=engine_policy().domain.model_copy(update={"looks": 2}))
    with pytest.raises(ValueError, match="fixed-sample but the policy declares 2 looks"):
        qualify([registry.get("paired_wald")], looked, out_dir=None)


def test_sequential_qualification_reproduces_the_seed_peeking_numbers():
    """The seed's ten looks at 50, 100, ..., 500 single-trial customers, baseline always
    passing, true loss 0.03 = margin, alpha 0.05: repeated_fixed promotes 0.11077 and
    fixed_final 0.03541 (exact, tests/reference_values.py).  The qualifier's simulated false-pass rates agree
    within 4 MC SE, and only the peeking rule is rejected."""
    dom = QualificationDomain(clusters=IntAxis(lo=500, hi=500, grid=(500,)), cluster_sizes=(FixedSize(trials=1),),
                              rho=Axis(lo=0.0, hi=0.0, grid=(0.0,)), margin=Axis(lo=0.03, hi=0.03, grid=(0.03,)),
                              baseline=Axis(lo=1.0, hi=1.0, grid=(1.0,)),
                              discordance=Axis(lo=0.03, hi=0.03, grid=(0.03,)), looks=10)
    assert dom.look_schedule(500) == tuple(range(50, 501, 50))
    pol = QualificationPolicy(domain=dom, alpha=0.05, min_replications=4000, max_replications=4000)
    r = qualify([registry.get("repeated_fixed"), registry.get("fixed_final")], pol, out_dir=None)
    got = {o.record.method.name: o.record for o in r.outcomes}
    for name, exact in (("repeated_fixed[binomial_loss]", SEQUENTIAL_SEED_PROMOTION_5DP["repeated_fixed"]),
                        ("fixed_final[binomial_loss]", SEQUENTIAL_SEED_PROMOTION_5DP["fixed_final"])):
        s = got[name].scenarios
        assert len(s) == 1 and s.n_reps[0] == 4000
        assert abs(s.n_pass[0] / 4000 - exact) <= 4 * math.sqrt(exact * (1 - exact) / 4000), (name, s.n_pass[0])
    assert got["repeated_fixed[binomial_loss]"].cells[0].verdict == "exceeds"
    assert got["fixed_final[binomial_loss]"].cells[0].verdict != "exceeds"
    assert got["repeated_fixed[binomial_loss]"].method.registered_name == "repeated_fixed"
    assert got["repeated_fixed[binomial_loss]"].method.inner == "binomial_loss"
    rec = got["repeated_fixed[binomial_loss]"]
    assert not covers(rec, DesignPoint(clusters=500, margin=0.03, rho=0.0)).covered  # no looks declared
    assert "look schedule differs" in covers(rec, DesignPoint(clusters=500, margin=0.03, looks=5)).reason
