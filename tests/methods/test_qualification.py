"""Qualification policy and record schema (methods.qualification): hashing, validation,
Clopper-Pearson bounds, verdicts, tamper / staleness detection and ``covers``.

Records here are assembled from hand-chosen counts (``build_record``), so the coverage
logic is tested without simulation; tests/test_qualify_engine.py runs the qualifier."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from methods import registry
from methods import qualification as q
from methods.qualification import (Axis, DesignPoint, IntAxis, QualificationDomain, QualificationPolicy,
                                   ScenarioTable, StaleRecordError, TamperedRecordError, build_record, covers,
                                   cp_lower, cp_upper, load_record, nuisance_grid, verdict_of)
from methods.qualification.dataset import build_qualification_dataset
from studies.datasets import save_dataset
from simlab.scenario import FixedSize, LabelNoise, PairedScenario, PoissonSize


def tiny_domain(**kw) -> QualificationDomain:
    base = dict(clusters=IntAxis(lo=10, hi=100, grid=(10, 30, 100)),
                cluster_sizes=(FixedSize(trials=1), FixedSize(trials=5)),
                rho=Axis(lo=0.0, hi=0.2, grid=(0.0, 0.2)), margin=Axis(lo=0.03, hi=0.03, grid=(0.03,)),
                baseline=Axis(lo=0.8, hi=1.0, grid=(0.8, 1.0)), discordance=Axis(lo=0.03, hi=0.2, grid=(0.03, 0.2)))
    base.update(kw)
    return QualificationDomain(**base)


# ---------------------------------------------------------------- Clopper-Pearson and verdicts


@settings(max_examples=200, deadline=None, derandomize=True)
@given(n=st.integers(1, 100_000), frac=st.floats(0, 1), conf=st.sampled_from([0.9, 0.95, 0.99]))
def test_cp_bounds_match_statsmodels_beta_interval(n, frac, conf):
    # a two-sided interval at level 1 - 2(1 - c) has one-sided bounds at confidence c
    x = int(round(frac * n))
    lo, hi = proportion_confint(x, n, alpha=2 * (1 - conf), method="beta")
    assert cp_upper(x, n, conf) == pytest.approx(hi, rel=1e-10, abs=1e-14)
    assert cp_lower(x, n, conf) == pytest.approx(lo, rel=1e-10, abs=1e-14)


def test_cp_edges_and_bad_counts():
    assert cp_lower(0, 50, 0.95) == 0.0 and cp_upper(50, 50, 0.95) == 1.0
    # x = 0: upper = 1 - (1 - c)^(1/n)  (the "rule of three" bound, exactly)
    assert cp_upper(0, 1000, 0.95) == pytest.approx(1 - 0.05 ** (1 / 1000), rel=1e-12)
    for bad in ((5, 4), (-1, 3), (0, 0)):
        with pytest.raises(ValueError, match="n_pass"):
            cp_upper(*bad, 0.95)


def test_verdicts():
    assert verdict_of(0.01, 0.02, 0.0275) == "qualified"
    assert verdict_of(0.03, 0.05, 0.0275) == "exceeds"
    assert verdict_of(0.02, 0.03, 0.0275) == "undetermined"
    assert verdict_of(0.02, 0.0275, 0.0275) == "qualified"  # inclusive, like the decision rule
    assert q.combine_verdicts(["qualified", "undetermined"]) == "undetermined"
    assert q.combine_verdicts(["qualified", "undetermined", "exceeds"]) == "exceeds"


# ---------------------------------------------------------------- policy and domain


def test_policy_hash_is_content_hash_and_roundtrips(tmp_path):
    p = QualificationPolicy(domain=tiny_domain())
    assert p.sha256 == QualificationPolicy(domain=tiny_domain()).sha256
    assert len(p.sha256) == 71 and p.sha256.startswith("sha256:")
    assert QualificationPolicy(domain=tiny_domain(), alpha=0.05).sha256 != p.sha256
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p.canonical(), indent=3))
    assert QualificationPolicy.load(f).sha256 == p.sha256
    toml = tmp_path / "p.toml"
    toml.write_text('alpha = 0.025\nmin_replications = 500\n[domain.clusters]\nlo = 10\nhi = 30\ngrid = [10, 30]\n'
                    '[[domain.cluster_sizes]]\nkind = "fixed"\ntrials = 2\n[domain.rho]\nlo = 0.0\nhi = 0.0\n'
                    'grid = [0.0]\n[domain.margin]\nlo = 0.05\nhi = 0.05\ngrid = [0.05]\n[domain.baseline]\n'
                    'lo = 0.9\nhi = 0.9\ngrid = [0.9]\n[domain.discordance]\nlo = 0.05\nhi = 0.1\ngrid = [0.05, 0.1]\n')
    pt = QualificationPolicy.load(toml)
    assert pt.domain.cluster_sizes == (FixedSize(trials=2),) and pt.min_replications == 500
    assert p.threshold == pytest.approx(1.1 * 0.025) and p.confidence == pytest.approx(0.95)


def test_policy_errors_name_the_field(tmp_path):
    f = tmp_path / "bad.json"
    d = QualificationPolicy(domain=tiny_domain()).canonical()
    d["allowed_excess"] = 0.5
    f.write_text(json.dumps(d))
    with pytest.raises(ValueError, match="allowed_excess"):
        QualificationPolicy.load(f)
    with pytest.raises(ValueError, match="grid must start at lo"):
        Axis(lo=0.0, hi=0.5, grid=(0.1, 0.5))
    with pytest.raises(ValueError, match="strictly increasing"):
        Axis(lo=0.0, hi=0.5, grid=(0.0, 0.5, 0.2))
    with pytest.raises(ValueError, match="rho"):
        tiny_domain(rho=Axis(lo=0.0, hi=1.0, grid=(0.0, 1.0)))
    with pytest.raises(ValueError, match="no \\(baseline, discordance\\)"):
        tiny_domain(margin=Axis(lo=0.3, hi=0.3, grid=(0.3,)))
    with pytest.raises(ValueError, match="max_replications"):
        QualificationPolicy(domain=tiny_domain(), min_replications=5000, max_replications=1000)
    with pytest.raises(ValueError, match="explicit"):
        from simlab.scenario import ExplicitSizes
        tiny_domain(cluster_sizes=(ExplicitSizes(sizes=(1, 2)),))


def test_standard_domain_is_the_issue_domain():
    d = q.standard_domain()
    assert (d.clusters.lo, d.clusters.hi) == (10, 500)
    assert [s.trials for s in d.cluster_sizes][0] == 1 and d.cluster_sizes[-1].trials == 10
    assert (d.baseline.lo, d.baseline.hi, d.rho.lo, d.rho.hi) == (0.5, 1.0, 0.0, 0.5)
    assert (d.margin.lo, d.margin.hi) == (0.01, 0.10)


@pytest.mark.parametrize("margin", [0.01, 0.03, 0.05, 0.10])
def test_nuisance_grid_sits_on_the_null_boundary(margin):
    dom = q.standard_domain()
    pts = nuisance_grid(dom, margin)
    assert len(pts) == len(set(pts))
    for b, d in pts:
        sc = PairedScenario.from_rates(b, -margin, d, clusters=10)
        assert sc.true_difference_trial() == pytest.approx(-margin, abs=1e-12)
        assert sc.true_difference_cluster() == pytest.approx(-margin, abs=1e-12)
        assert dom.discordance.lo <= d <= dom.discordance.hi
    # every baseline includes the seed's extreme: all discordant pairs are losses (q = margin)
    for b in dom.baseline.grid:
        assert (b, margin) in pts
    # baseline 1: the candidate can only lose, so discordance = margin is the only point
    assert [p for p in pts if p[0] == 1.0] == [(1.0, margin)]


# ---------------------------------------------------------------- records from chosen counts


def synthetic_record(policy: QualificationPolicy, n_pass_of, method_name="clustered_normal", n=4000):
    """A record whose scenario counts come from ``n_pass_of(cell, baseline, discordance)``."""
    dom = policy.domain
    rows = []
    for cell in dom.cells():
        for b, d in nuisance_grid(dom, cell[3]):
            rows.append((cell, b, d, n_pass_of(cell, b, d)))
    mcc, thr = policy.stage_confidence, policy.threshold
    lo = [cp_lower(x, n, mcc) for *_, x in rows]
    up = [cp_upper(x, n, mcc) for *_, x in rows]
    scen = ScenarioTable(
        clusters=tuple(c[0] for c, *_ in rows), size=tuple(c[1] for c, *_ in rows), rho=tuple(c[2] for c, *_ in rows),
        margin=tuple(c[3] for c, *_ in rows), noise=tuple(c[4] for c, *_ in rows),
        baseline=tuple(r[1] for r in rows), discordance=tuple(r[2] for r in rows), stage=("grid",) * len(rows),
        n_reps=(n,) * len(rows), n_pass=tuple(r[3] for r in rows), n_inconclusive=(0,) * len(rows),
        lower=tuple(lo), upper=tuple(up), verdict=tuple(verdict_of(a, b, thr) for a, b in zip(lo, up)))
    m = registry.get(method_name)
    return build_record(m.identity.as_dict(), "fixed", m.estimand.value, policy, scen, "", "", {"test": "1"},
                        method_key=(m.name, tuple(sorted(m.options.items())), None))


def _bad_when(cell, b, d):
    """40 / 4000 = 1% everywhere except K = 10, or rho = 0.2 with 5 trials: 10%."""
    k, s, r, m, n = cell
    return 400 if (k == 10 or (r == 0.2 and s == 1)) else 40


def test_cells_worst_case_and_subdomain():
    pol = QualificationPolicy(domain=tiny_domain())
    rec = synthetic_record(pol, _bad_when)
    cmap = rec.cell_map()
    assert cmap[(10, 0, 0.0, 0.03, 0)].verdict == "exceeds"
    assert cmap[(30, 0, 0.2, 0.03, 0)].verdict == "qualified"
    assert cmap[(30, 1, 0.2, 0.03, 0)].verdict == "exceeds"
    assert rec.worst_case.n_pass == 400 and rec.worst_case.upper == max(rec.scenarios.upper)
    assert rec.qualified.cells_qualified == 6 and rec.qualified.cells_total == 12
    assert "M=1, margin 0.03: K>=30 at rho 0..0.2" in rec.qualified.summary
    assert "M=5, margin 0.03: K>=30 at rho=0; none at rho=0.2" in rec.qualified.summary
    assert rec.record_sha256 == rec.content_sha256()


def test_covers_grid_points_only():
    """A grid record covers a design on its grid; nothing between grid points (issue 11.2)."""
    pol = QualificationPolicy(domain=tiny_domain())
    rec = synthetic_record(pol, _bad_when)
    ok = covers(rec, DesignPoint(clusters=30, margin=0.03, rho=0.0, cluster_size=FixedSize(trials=5)))
    assert ok and ok.cells == ((30, 1, 0.0, 0.03, 0),)
    assert not covers(rec, DesignPoint(clusters=30, margin=0.03, rho=0.2, cluster_size=FixedSize(trials=5)))
    # M = 1: rho does not change the data, every rho cell at (K, M = 1) must be qualified
    assert covers(rec, DesignPoint(clusters=100, margin=0.03, cluster_size=FixedSize(trials=1))).covered
    assert covers(rec, DesignPoint(clusters=100, margin=0.03, rho=0.37)).covered
    for point, why in [(DesignPoint(clusters=50, margin=0.03, rho=0.0), "clusters=50 is not on the record's grid"),
                       (DesignPoint(clusters=30, margin=0.05, rho=0.0), "margin=0.05 is not on the record's grid"),
                       (DesignPoint(clusters=30, margin=0.03, cluster_size=FixedSize(trials=3), rho=0.0),
                        "M=3 is not on the record's grid"),
                       (DesignPoint(clusters=100, margin=0.03, cluster_size=FixedSize(trials=5), rho=0.1),
                        "not on the grid"),
                       (DesignPoint(clusters=100, margin=0.03, cluster_size=FixedSize(trials=5)), "rho is unknown"),
                       (DesignPoint(clusters=10, margin=0.03, rho=0.0), "K=10"),
                       (DesignPoint(clusters=200, margin=0.03), "not on the record's grid"),
                       (DesignPoint(clusters=30, margin=0.03, baseline=0.5), "baseline=0.5 lies outside"),
                       (DesignPoint(clusters=30, margin=0.03, cluster_size=PoissonSize(mean_trials=2)), "poisson"),
                       (DesignPoint(clusters=30, margin=0.03, label_noise=LabelNoise(candidate_sensitivity=0.9)),
                        "label-noise"),
                       (DesignPoint(clusters=30, margin=0.03, confidence=0.9), "confidence")]:
        c = covers(rec, point)
        assert not c.covered and why in c.reason, (point, c.reason)
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=pol.validity_days + 1)
    assert "expired" in covers(rec, DesignPoint(clusters=30, margin=0.03, rho=0.0), now=later).reason
    old = rec.model_copy(update={"mc_rule": "unadjusted", "schema_version": "1"})
    assert "unadjusted Monte Carlo" in covers(old, DesignPoint(clusters=30, margin=0.03, rho=0.0)).reason


def _write(rec, tmp_path, stem="x"):
    """Write ``rec`` with its real dataset (the counts ``load_record`` re-derives)."""
    ds = save_dataset(build_qualification_dataset(rec.policy, rec.method.model_dump(include={"name", "version", "source_sha256"}),
                                     rec.scenarios, rec.software), tmp_path / f"{stem}.nc", compress=True)
    rec = rec.model_copy(update={"dataset": q.DatasetRef(file=ds.name, sha256=q.file_hash(ds))}).sealed()
    path = tmp_path / f"{stem}.json"
    path.write_text(rec.to_json())
    return rec, path


def test_load_verifies_hashes_and_detects_tampering(tmp_path):
    pol = QualificationPolicy(domain=tiny_domain())
    rec, path = _write(synthetic_record(pol, _bad_when), tmp_path)
    assert load_record(path) == rec
    good = json.loads(path.read_text())

    def tampered(edit, match):
        d = json.loads(json.dumps(good))
        edit(d)
        path.write_text(json.dumps(d))
        with pytest.raises(TamperedRecordError, match=match):
            load_record(path)
        path.write_text(json.dumps(good))

    tampered(lambda d: d["scenarios"]["n_pass"].__setitem__(0, 0), "content hash mismatch")
    tampered(lambda d: d["cells"][0].__setitem__("verdict", "qualified"), "content hash mismatch")
    tampered(lambda d: d.pop("worst_case"), "content hash mismatch")
    tampered(lambda d: d.pop("record_sha256"), "no record_sha256")

    def resealed(edit):
        rec2 = q.QualificationRecord.model_validate({**good, **edit(json.loads(json.dumps(good)))})
        return json.loads(rec2.sealed().to_json())

    # a forger who re-seals the hash is still caught when counts, bounds and verdicts disagree
    def flip_count(d):
        d["scenarios"]["n_pass"][0] += 1
        return d
    path.write_text(json.dumps(resealed(flip_count)))
    with pytest.raises(TamperedRecordError, match="scenario 0: the record says n_pass=.*its dataset x.nc says"):
        load_record(path)

    def flip_cell(d):
        d["cells"][0]["verdict"] = "qualified"
        return d
    path.write_text(json.dumps(resealed(flip_cell)))
    with pytest.raises(TamperedRecordError, match="cell verdicts"):
        load_record(path)

    def loosen_policy(d):
        d["policy"]["allowed_excess"] = 5.0
        return d
    path.write_text(json.dumps(resealed(loosen_policy)))
    with pytest.raises(TamperedRecordError, match="policy hash"):
        load_record(path)

    path.write_text(json.dumps(good))
    (tmp_path / "x.nc").write_bytes(b"dataset bytes, edited")
    with pytest.raises(TamperedRecordError, match="sha256 mismatch"):
        load_record(path)
    (tmp_path / "x.nc").unlink()
    with pytest.raises(TamperedRecordError, match="missing"):
        load_record(path)
    with pytest.raises(q.RecordError, match="no qualification record"):
        load_record(tmp_path / "nope.json")


def test_stale_record_when_method_version_or_source_changes(tmp_path, monkeypatch):
    pol = QualificationPolicy(domain=tiny_domain())
    rec, path = _write(synthetic_record(pol, _bad_when), tmp_path)
    real = registry.get("clustered_normal")
    real_get = registry.get

    def patched(changed):
        return lambda name: changed if name == "clustered_normal" else real_get(name)

    monkeypatch.setattr(registry, "get", patched(dataclasses.replace(real, version="2")))
    with pytest.raises(StaleRecordError, match="version changed"):
        load_record(path)
    def edited_prepare(method, alpha, margin, tables):   # an edit to the code the method runs
        return real.prepare(method, alpha * 1.0, margin, tables)
    monkeypatch.setattr(registry, "get", patched(dataclasses.replace(real, prepare=edited_prepare)))
    with pytest.raises(StaleRecordError, match="source changed"):
        load_record(path)
    assert load_record(path, check_current=False) == rec  # intact, merely stale
    monkeypatch.setattr(registry, "get", real_get)
    assert load_record(path) == rec


def test_find_coverage_searches_a_directory(tmp_path):
    pol = QualificationPolicy(domain=tiny_domain())
    rec, path = _write(synthetic_record(pol, _bad_when), tmp_path)
    hit = q.find_coverage("clustered_normal", DesignPoint(clusters=30, margin=0.03, rho=0.0), tmp_path)
    assert hit.covered and hit.record == str(path)
    miss = q.find_coverage("clustered_normal", DesignPoint(clusters=10, margin=0.03, rho=0.0), tmp_path)
    assert not miss.covered and "x.json" in miss.reason
    assert "no qualification record" in q.find_coverage("paired_wald", DesignPoint(clusters=30, margin=0.03),
                                                        tmp_path).reason
    (tmp_path / "x.nc").write_bytes(b"tampered")
    with pytest.raises(TamperedRecordError):
        q.find_coverage("clustered_normal", DesignPoint(clusters=30, margin=0.03, rho=0.0), tmp_path)


def test_find_coverage_is_conservative_when_records_disagree(tmp_path):
    """Two records over the same domain (two policies): one qualifies K = 30, the other
    finds it exceeding; the design is not covered, whichever file is read first."""
    good = synthetic_record(QualificationPolicy(domain=tiny_domain()), _bad_when)
    bad = synthetic_record(QualificationPolicy(domain=tiny_domain(), min_replications=1000),
                           lambda cell, b, d: 400 if cell[0] <= 30 else 40)
    small = synthetic_record(QualificationPolicy(domain=tiny_domain(clusters=IntAxis(lo=10, hi=30, grid=(10, 30)))),
                             lambda cell, b, d: 400)  # exceeds everywhere in K 10..30
    for rec, stem in ((good, "clustered_normal.a"), (bad, "clustered_normal.b"), (small, "clustered_normal.c")):
        _write(rec, tmp_path, stem)
    point = DesignPoint(clusters=30, margin=0.03, rho=0.0, cluster_size=FixedSize(trials=1))
    assert q.covers(good, point).covered and not q.covers(bad, point).covered
    got = q.find_coverage("clustered_normal", point, tmp_path)
    assert not got.covered and "sources disagree" in got.reason and got.record.endswith("clustered_normal.b.json")
    # K = 100: qualified in a and b, outside c's domain (c does not vote against it)
    k100 = point.model_copy(update={"clusters": 100})
    assert "not on the record's grid" in q.covers(small, k100).reason
    assert q.find_coverage("clustered_normal", k100, tmp_path).covered
