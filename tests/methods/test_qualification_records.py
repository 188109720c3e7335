"""The qualification records shipped in results/qualification.

Every built-in method has a record that loads as intact *and current* (a method edit makes
its record stale: regenerate with ``simlab qualify --method NAME [--policy ...]``), and the
records say what the issue expects -- checked here against their contents, not assumed:
``clustered_normal`` is not qualified at the seed's design point, and trial-level methods
fail once trials are clustered (M > 1, rho > 0)."""
from __future__ import annotations

import json
import math

import pytest

from methods import registry
from methods.qualification import (DesignPoint, covers, find_coverage, load_certificate, load_record,
                                   load_theorem_record, named_policy, record_paths)
from simlab.scenario import FixedSize
from tests.methods.records_readme import RESULTS_DIR

ASYMPTOTIC_TRIAL = ["paired_wald", "agresti_min", "bonett_price", "tango_score", "newcombe_hybrid"]
EXACT_TRIAL = ["exact_discordant", "binomial_loss"]


# Slow methods whose standard records were withdrawn when composition v2 changed the draws
# and are not yet drawn again (the slowest per decision, resampling and Bayesian: hours each on
# 2 cores; results/qualification/README.md): records over the reduced policies only.
# cluster_bootstrap's, bayes_paired's and cluster_bootstrap_bca's standard records are drawn again.
REDUCED_ONLY = {"bayes_hierarchical"}

# Built-in methods without a record over the standard domain, and why (README of
# results/qualification): the test fails if one of them gains such a record or another loses it.
NOT_ON_STANDARD_DOMAIN = {
    # the naive trial-level bootstrap (a practitioner rule to measure): ~85 s per scenario at
    # 500 x 10, so a record over reduced-small only
    "trial_bootstrap",
    # valid by theorem at every design: a theorem record (results/qualification/*.theorem.json)
    "betting_ci_horizon",
    # calibrated at the user's design (dm_score@alpha=L): certificates of exactly those designs
    "dm_score",
    # built per design (its least-favourable mixture) and calibrated there: certificates of
    # exactly those designs (dm_likelihood_ratio@alpha=L)
    "dm_likelihood_ratio",
} | REDUCED_ONLY
# the standard ranges (issue 6): K, trials per cluster, baseline, rho, margin
STANDARD_RANGES = {"clusters": (10, 500), "trials": (1, 10), "baseline": (0.5, 1.0), "rho": (0.0, 0.5),
                   "margin": (0.01, 0.10)}
# likelihood_ratio's default alternative loss 0.01 must lie below the margin: the standard
# ranges with margins 0.02..0.10 (policy sequential-standard-lr)
MARGIN_FROM_002 = {"likelihood_ratio"}


@pytest.fixture(scope="module")
def records():
    out = {}
    for p in record_paths(directory=RESULTS_DIR):
        rec = load_record(p)  # raises on a tampered or stale record
        out.setdefault(rec.method.name, []).append(rec)
    return out


def test_the_records_readme_tables_are_the_shipped_files(records):
    """results/qualification/README.md says what ships: its policy, grid-record, certificate,
    theorem-record and not-covered tables equal what ``records_readme`` renders from the
    files (loaded and verified) and the built-in policies."""
    from tests.methods import records_readme

    flat = [r for recs in records.values() for r in recs]
    want = records_readme.render(records=flat)
    got = records_readme.blocks(records_readme.README.read_text())
    for name, body in want.items():
        assert got[name] == body, (f"{records_readme.README}: the {name} table differs from the files; run "
                                   f"`uv run python -m tests.methods.records_readme --write`. Expected:\n{body}")


def _standard(records, name):
    recs = [r for r in records[name] if r.policy_sha256 == named_policy("standard").sha256]
    assert len(recs) == 1, f"{name} is not qualified on the standard domain"
    return recs[0]


def _ranges(rec) -> dict:
    d = rec.policy.domain
    trials = [s.trials for s in d.cluster_sizes]
    return {"clusters": (d.clusters.lo, d.clusters.hi), "trials": (min(trials), max(trials)),
            "baseline": (d.baseline.lo, d.baseline.hi), "rho": (d.rho.lo, d.rho.hi),
            "margin": (d.margin.lo, d.margin.hi)}


def test_builtin_methods_have_records_over_the_standard_domain(records):
    on_standard = set()
    for name, recs in records.items():
        for rec in recs:
            want = dict(STANDARD_RANGES)
            if name in MARGIN_FROM_002:
                want["margin"] = (0.02, 0.10)
            if _ranges(rec) == want:
                on_standard.add(rec.method.registered_name)  # outer[inner] counts for outer
    builtin = set(registry.names("fixed")) | set(registry.names("sequential"))
    assert builtin - on_standard == NOT_ON_STANDARD_DOMAIN


def test_every_builtin_method_has_a_current_record(records):
    flat = [r for recs in records.values() for r in recs]
    by_registered = {r.method.registered_name for r in flat}
    # a theorem record or a shipped certificate is a record too (for the methods it covers)
    by_registered |= {load_theorem_record(p).method.registered_name for p in RESULTS_DIR.glob("*.theorem.json")}
    by_registered |= {load_certificate(p).method.registered_name.split("@")[0]
                      for p in RESULTS_DIR.glob("*.cert.json")}
    assert set(registry.names("fixed")) <= by_registered
    assert set(registry.names("sequential")) <= by_registered
    for rec in flat:
        kind = registry.get(rec.method.registered_name).kind
        assert rec.method.kind == kind
        assert (rec.policy.domain.looks is not None) == (kind == "sequential")
        assert rec.policy_sha256 in {named_policy(n).sha256 for n in ("standard", "reduced", "reduced-small",
                                                                       "sequential", "sequential-standard",
                                                                       "sequential-standard-lr", "standard-coarse")}


def test_seed_design_point_is_not_qualified_for_clustered_normal(records):
    rec = _standard(records, "clustered_normal")
    point = DesignPoint(clusters=30, margin=0.03, cluster_size=FixedSize(trials=1))
    assert not covers(rec, point).covered
    assert not find_coverage("clustered_normal", point).covered
    # the seed's exact number sits in the record: 30 one-trial customers, every discordant
    # pair a loss (baseline 1, discordance = margin): zero SD -> pass with probability 0.97^30
    s = rec.scenarios
    i = next(i for i in range(len(s)) if (s.clusters[i], s.size[i], s.rho[i], s.margin[i], s.baseline[i],
                                          s.discordance[i]) == (30, 0, 0.0, 0.03, 1.0, 0.03))
    p = 0.97 ** 30
    assert abs(s.n_pass[i] / s.n_reps[i] - p) <= 4 * math.sqrt(p * (1 - p) / s.n_reps[i])
    assert s.verdict[i] == "exceeds"


def test_trial_level_methods_fail_when_trials_are_clustered(records):
    for name in ASYMPTOTIC_TRIAL + EXACT_TRIAL:
        rec = _standard(records, name)
        dom = rec.policy.domain
        clustered = [c for c in rec.cells if dom.cluster_sizes[c.size].trials > 1 and c.rho > 0]
        assert clustered
        ok = [c for c in clustered if c.verdict == "qualified"]
        if name in ASYMPTOTIC_TRIAL:
            # large-sample trial-level intervals: no clustered cell at any K qualifies
            assert not ok, (name, [(c.clusters, c.size, c.rho, c.margin) for c in ok][:5])
        else:
            # exact tests are conservative enough to absorb a small design effect at small K,
            # never at K = 500 with rho >= 0.1 nor with 10 trials per cluster at K >= 200
            assert not [c for c in ok if c.clusters == 500 and c.rho >= 0.1], name
            assert not [c for c in ok if dom.cluster_sizes[c.size].trials == 10 and c.clusters >= 200], name
            # with one trial per cluster (rho has no effect there) the exact tests keep their level
            single = [c for c in rec.cells if dom.cluster_sizes[c.size].trials == 1]
            assert all(c.verdict == "qualified" for c in single), name


def test_records_reproduce_their_counts_from_the_seed(records):
    """Re-simulate one recorded scenario per standard record from (policy seed, scenario):
    the counts are identical (counter-based streams; no state outside the record)."""
    from studies.qualify.run import ScenarioPoint, Task, method_key, run_task

    for name in ("clustered_normal", "tango_score"):
        rec = _standard(records, name)
        s = rec.scenarios
        i = max(range(len(s)), key=lambda j: (s.n_reps[j] <= 8000, s.n_pass[j]))
        spec = ScenarioPoint(s.clusters[i], s.size[i], s.rho[i], s.margin[i], s.noise[i], s.baseline[i], s.discordance[i])
        key = method_key(rec.method.resolve())
        got = run_task(rec.policy, Task(spec, (key,), 0, s.n_reps[i]), (rec.method.estimand,))
        assert got[key] == (s.n_pass[i], s.n_inconclusive[i])


def test_likelihood_ratio_keeps_its_level_with_independent_trials(records):
    """Ville's inequality: with one trial per cluster (independent trial pairs) the seed's
    likelihood-ratio rule keeps its level at every K, rho and margin of the standard
    ranges; clustered trials (M = 10, rho = 0.5) break it."""
    lr_policy = named_policy("sequential-standard-lr").sha256
    rec = next(r for r in records["likelihood_ratio"] if r.policy_sha256 == lr_policy)
    dom = rec.policy.domain
    single = [c for c in rec.cells if dom.cluster_sizes[c.size].trials == 1]
    assert single and all(c.verdict == "qualified" for c in single)
    assert any(c.verdict == "exceeds" for c in rec.cells if dom.cluster_sizes[c.size].trials == 10 and c.rho == 0.5)


CLUSTER_VALID = ["betting_ci", "empirical_bernstein"]


def test_a_fixed_method_is_covered_at_every_standard_design_with_30_or_more_clusters(records):
    """Issue 12's target, read from the shipped records: at every grid design of the
    standard domain with K >= 30 (every trials per cluster, rho up to 0.5, every margin),
    the cluster-level bounded-mean intervals are covered; and the cluster-level methods
    with an estimated variance are not (the records say why a new method was needed)."""
    dom = named_policy("standard").domain
    designs = [DesignPoint(clusters=k, cluster_size=size, margin=m, rho=r)
               for k in dom.clusters.grid if k >= 30 for size in dom.cluster_sizes
               for m in dom.margin.grid for r in dom.rho.grid]
    assert len(designs) == 5 * 3 * 4 * 5
    for name in CLUSTER_VALID:
        rec = _standard(records, name)
        for point in designs:
            assert covers(rec, point).covered, (name, point)
    rho_half = [p for p in designs if p.rho == 0.5 and p.cluster_size.trials == 10]
    cluster_t = _standard(records, "cluster_t")
    assert not any(covers(cluster_t, p).covered for p in rho_half)



def test_a_listing_sees_a_file_that_changed_since_it_was_last_read(tmp_path):
    """The records listing remembers what each file says of itself only while the file is
    unchanged: a file rewritten to name another method, or damaged, is listed accordingly."""
    import os

    from methods.qualification.records import json_files

    p = tmp_path / "a.json"
    p.write_text(json.dumps({"record_sha256": "x", "method": {"name": "one"}}))
    assert json_files("*.json", "record_sha256", "one", tmp_path) == [p]
    p.write_text(json.dumps({"record_sha256": "x", "method": {"name": "two"}}))
    os.utime(p, ns=(1, 1))                      # even with its modification time put back
    assert json_files("*.json", "record_sha256", "one", tmp_path) == []
    assert json_files("*.json", "record_sha256", "two", tmp_path) == [p]
    p.write_text("{not json")
    assert json_files("*.json", "record_sha256", None, tmp_path) == []
