"""The pass^k comparison through the evidence path: the method's tables are cases by "all k
trials passed", built from the raw trials; it authorises only where a qualification covers
its design -- measured like any other method."""
from __future__ import annotations

import json

from simlab.hashing import content_hash
from evidence.packet import run_experiment, trial_artifacts
from evidence.synthetic import demo_manifest


def _trials(path, manifest, clusters=60, cases=3, reps=3):
    rows, truth = [], {}
    for k in range(clusters):
        for j in range(cases):
            outcome = {}
            for arm in ("baseline", "candidate"):
                # every 7th case fails one candidate trial; every 11th one baseline trial
                fail_at = 1 if (arm == "candidate" and (k * cases + j) % 7 == 0) or \
                    (arm == "baseline" and (k * cases + j) % 11 == 0) else None
                outcome[arm] = [t != fail_at for t in range(reps)]
                for t in range(reps):
                    rows.append({"case_id": f"c{k}-{j}", "trial_index": t, "cluster_id": f"u{k}", "arm": arm,
                                 "passed": outcome[arm][t], "failed_checks": [], "latency_ms": None, "cost": None,
                                 "cost_provenance": "absent", "manifest_sha256": manifest.sha256})
            truth.setdefault(f"u{k}", [0, 0, 0, 0])[{(True, True): 0, (True, False): 1, (False, True): 2,
                                                     (False, False): 3}[(all(outcome["baseline"]),
                                                                         all(outcome["candidate"]))]] += 1
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return list(truth.values())


def test_pass_hat_k_analyses_case_tables_built_from_the_trials(tmp_path):
    m = demo_manifest(method="pass_hat_k", repetitions=3, minimum_clusters=30, margin=0.1, rho_max=0.1)
    truth = _trials(tmp_path / "t.jsonl", m)
    r = run_experiment(manifest=m, artifacts=trial_artifacts(tmp_path / "t.jsonl"), out=tmp_path / "p.json")["receipt"]
    c = r["comparison"]
    assert c["unit"] == "case_all_trials" and c["method"]["name"] == "pass_hat_k"
    assert c["tables_sha256"] == content_hash(truth) and c["units_per_cluster"] == [3]
    cand, base = c["reliability"]["candidate"]["pass^k"]["3"], c["reliability"]["baseline"]["pass^k"]["3"]
    assert abs(c["estimate"] - (cand["estimate"] - base["estimate"])) < 1e-12  # the estimand: the pass^3 difference
    # not qualified for this design: lab work at most, and the receipt says why
    assert r["authority"] in ("lab_only", "none")
    assert any(x.startswith("unqualified: pinned qualification record") for x in r["reasons"] + r["other_findings"])


def test_pass_hat_k_reaches_the_ceiling_only_under_a_certificate_of_its_design(world, tmp_path):
    """Measured like any method: a certificate of pass_hat_k at exactly this design (300
    customers, one case each, margin 0.05), signed by a trusted key, lets the receipt reach
    canary_eligible; the same experiment under the world's binomial_loss record does not."""
    import datetime as dt

    from evidence.packet import population_artifact
    from evidence.synthetic import with_population, write_population
    from simlab import signing
    from studies.qualify.certify import certify, write_certificate

    key = signing.load_private_key(world.key)
    cert = certify("pass_hat_k", 300, 1, 0.05, rho_max=0.0, baseline=(0.9, 1.0), discordance=(0.01, 0.1),
                   sign_key=key, engine="exact")
    assert cert.verdict == "qualified"
    write_certificate(cert, tmp_path / "q")
    later = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(minutes=1)

    def manifest(pin):
        return with_population(demo_manifest(method="pass_hat_k", repetitions=3, minimum_clusters=30, margin=0.05,
                                             rho_max=0.0, measurement_kind="measured", code_revision="b" * 40,
                                             qualification_sha256=pin, created=later - dt.timedelta(minutes=5)), 300, 1)

    def run(m, qdir, name):
        rows = [{"case_id": f"case-{k:05d}-00", "trial_index": t, "cluster_id": f"customer-{k:05d}", "arm": arm,
                 "passed": not (arm == "baseline" and k % 50 == 0 and t == 1), "failed_checks": [],
                 "latency_ms": None, "cost": 0.001, "cost_provenance": "measured", "manifest_sha256": m.sha256}
                for k in range(300) for t in range(3) for arm in ("baseline", "candidate")]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        arts = trial_artifacts(tmp_path / f"{name}.jsonl") + [
            population_artifact(write_population(tmp_path / f"{name}.cases.jsonl", 300))]
        return run_experiment(manifest=m, artifacts=arts, out=tmp_path / f"{name}.json", qualification_dir=qdir,
                              trusted=world.trusted, now=later)["receipt"]

    r = run(manifest(cert.certificate_sha256), tmp_path / "q", "certified")
    assert r["comparison"]["status"] == "pass" and r["qualification"]["covered"]
    assert "covers K=300, 1 case(s) per cluster" in r["qualification"]["reasons"][0]
    assert (r["state"], r["action"]) == ("qualified", "canary_eligible")
    other = run(manifest(world.pin), world.qdir, "other")
    assert other["action"] == "lab_pass" and "record is for method 'binomial_loss', not the registered " \
                                              "'pass_hat_k'" in other["reasons"][0]
