"""The receipt's asymmetric rules, each asserting the reason, not just the outcome."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from evidence.receipt import PrerequisiteReceipt, TestReceipt, action_strength

from evidence.manifest import Manifest
from evidence.packet import population_artifact, run_experiment, trial_artifacts
from evidence.synthetic import with_population, write_population, write_trials

REVISION = "0123456789abcdef0123456789abcdef01234567"  # the world's pinned revision (conftest)


def reasons(packet) -> str:
    return " | ".join(packet["receipt"]["reasons"])


def findings(packet) -> str:
    """Every finding, also those a more restrictive one outranked."""
    return " | ".join(packet["receipt"]["reasons"] + packet["receipt"]["other_findings"])


def test_qualified_pass_reaches_canary_eligible_and_never_more(good):
    _, packet = good
    r = packet["receipt"]
    assert (r["state"], r["action"], r["authority"], r["authority_ceiling"]) == \
        ("qualified", "canary_eligible", "canary", "canary")
    assert r["comparison"]["status"] == "pass"
    assert r["comparison"]["method"]["name"] == "binomial_loss"
    assert r["qualification"]["covered"] and r["qualification"]["signature"]["signed_by"]
    assert action_strength("canary_eligible") == max(action_strength(a) for a in
                                                     ("block", "hold", "lab_pass", "canary_eligible"))


def test_receipt_binds_every_component(good, world):
    folder, packet = good
    c = packet["receipt"]["components"]
    assert c["manifest"] == Manifest.parse(packet["manifest"]).sha256
    assert c["qualification"] == world.pin
    assert set(c["raw_artifacts"]) == {"trials", "population"}
    assert all(h.startswith("sha256:") for h in c["raw_artifacts"].values())
    assert packet["receipt"]["population"] == {"sha256": c["population"], "cases": 300, "checked": True}
    assert c["comparison"].startswith("sha256:") and c["method"]["source_sha256"]
    assert packet["receipt"]["receipt_sha256"].startswith("sha256:")


def test_synthetic_evidence_cannot_claim_canary(world, tmp_path):
    packet = world.run(tmp_path, world.manifest(measurement_kind="synthetic", code_revision=REVISION))
    assert packet["receipt"]["action"] == "lab_pass" and packet["receipt"]["authority"] == "lab_only"
    assert "synthetic evidence authorises lab work only" in reasons(packet)


def test_unsigned_qualification_cannot_reach_canary(world, tmp_path):
    packet = world.run(tmp_path, trusted=None)
    assert packet["receipt"]["action"] == "lab_pass"
    assert "not signed by a trusted key" in reasons(packet)


def test_signature_from_untrusted_key_cannot_reach_canary(world, tmp_path):
    from simlab import signing
    stranger = signing.generate_key()
    _, pub = signing.save_keypair(stranger, tmp_path / "k", "stranger")
    packet = world.run(tmp_path, trusted=signing.trusted_keys([pub]))
    assert packet["receipt"]["action"] == "lab_pass"
    assert "not in the trusted key set" in reasons(packet)


def test_too_few_clusters_disguised_as_repeated_trials_holds(world, tmp_path):
    m = world.manifest(repetitions=3)
    packet = world.run(tmp_path, m, clusters=10, cases=10)
    r = packet["receipt"]
    assert r["evidence"]["pairs"] == 300 and r["evidence"]["clusters"] == 10
    assert r["action"] == "hold" and r["authority"] == "none"
    assert "10 independent clusters < the registered minimum 30" in reasons(packet)


def test_hard_failure_hidden_by_favourable_average_blocks(world, tmp_path):
    packet = world.run(tmp_path, draw={"candidate_failed": 1})
    r = packet["receipt"]
    assert r["comparison"]["status"] == "pass"
    assert r["action"] == "block" and r["hard_failures"]["candidate_trials_with_failed_checks"] == 1
    assert "candidate trial(s) with failed checks" in reasons(packet)
    assert r["hard_failures"]["examples"][0]["failed_checks"] == ["refund_over_limit"]


def test_statistical_fail_blocks(world, tmp_path):
    packet = world.run(tmp_path, draw={"difference": -0.08, "discordance": 0.1})
    assert packet["receipt"]["comparison"]["status"] == "fail"
    assert packet["receipt"]["action"] == "block" and "statistical fail" in reasons(packet)


@pytest.mark.parametrize("kind,provenance", [("measured", "synthetic"), ("synthetic", "measured")])
def test_fabricated_cost_provenance_blocks(world, tmp_path, kind, provenance):
    m = world.manifest(measurement_kind=kind)
    packet = world.run(tmp_path, m, draw={"cost_provenance": provenance})
    assert packet["receipt"]["action"] == "block"
    assert "fabricated cost provenance" in reasons(packet)


def test_qualification_for_another_method_is_lab_only(world, tmp_path):
    m = world.manifest(method="exact_discordant")
    packet = world.run(tmp_path, m, draw={"discordance": 0.1})
    assert packet["receipt"]["action"] in ("lab_pass", "hold", "block")
    assert "record is for method 'binomial_loss', not the registered 'exact_discordant'" in findings(packet)


def test_qualification_for_the_same_label_with_other_options_is_lab_only(world, tmp_path):
    """A label carries no options: a certificate of ``dm_score@alpha=0.02`` calibrated with table
    ICC 0.2 is not evidence for the registered ``dm_score@alpha=0.02`` (ICC 0.1) the comparison runs."""
    import dataclasses

    from methods import registry
    from studies.qualify.certify import certify, write_certificate

    other = registry.get("dm_score").with_options(rho_max=0.2).calibrated(0.02)
    assert other.label == "dm_score@alpha=0.02" != other.identity.source_sha256
    cert = certify(other, 300, 1, 0.03, rho_max=0.5)
    write_certificate(cert, tmp_path / "q")
    # a run after the certificate was made (the session's world.now may predate it: "created in the future")
    later = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(minutes=1)
    w = dataclasses.replace(world, qdir=tmp_path / "q", pin=cert.certificate_sha256, now=later)
    packet = w.run(tmp_path, w.manifest(method="dm_score@alpha=0.02"), draw={"discordance": 0.1})
    assert packet["receipt"]["action"] in ("lab_pass", "hold", "block")
    assert not packet["receipt"]["qualification"]["covered"]
    assert ("qualification record is for 'dm_score@alpha=0.02' with options {'em_q_hi': 0.5, 'rho_max': 0.2, "
            "'robust': 0.0}, another method than the registered 'dm_score@alpha=0.02'") in findings(packet)


def test_qualification_for_another_design_is_lab_only(world, tmp_path):
    m = world.manifest(margin=0.05)  # the record qualified margin 0.03 only
    packet = world.run(tmp_path, m)
    assert packet["receipt"]["action"] == "lab_pass"
    assert "margin=0.05 is not on the record's grid" in reasons(packet)


def test_design_with_rho_beyond_qualified_cells_is_lab_only(world, tmp_path):
    # 3 trial pairs per cluster and rho only bounded by rho_max: a grid record covers rho grid
    # values only, so the design needs a certificate
    m = world.manifest(repetitions=3, rho_max=0.5)
    packet = world.run(tmp_path, m, clusters=300)
    assert packet["receipt"]["action"] in ("lab_pass", "hold")
    assert "design not covered: rho is unknown: a grid record covers rho grid values only" in findings(packet)


def test_observed_icc_above_rho_max_holds(world, tmp_path):
    m = world.manifest(repetitions=3, rho_max=0.0)
    packet = world.run(tmp_path, m, clusters=300, draw={"rho": 0.5, "discordance": 0.01})
    r = packet["receipt"]
    assert r["comparison"]["icc"]["upper"] > 0.0
    assert r["action"] == "hold" and "exceeds the registered rho_max 0" in reasons(packet)


def test_missing_prerequisite_locks(world, tmp_path):
    m = world.manifest(required_prerequisites=("rollback_plan",))
    packet = world.run(tmp_path, m)
    assert (packet["receipt"]["state"], packet["receipt"]["action"]) == ("locked", "block")
    assert "prerequisite 'rollback_plan' is missing" in reasons(packet)


def test_unsatisfied_prerequisite_locks(world, tmp_path):
    m = world.manifest(required_prerequisites=("rollback_plan",))
    packet = world.run(tmp_path, m, prerequisites=(PrerequisiteReceipt(name="rollback_plan", satisfied=False),))
    assert packet["receipt"]["state"] == "locked" and "not satisfied" in reasons(packet)


def test_failed_deterministic_test_is_buildable_block(world, tmp_path):
    m = world.manifest(required_tests=("unit",))
    t = TestReceipt(name="unit", code_revision=REVISION, passed=False, ran_at=world.now)
    packet = world.run(tmp_path, m, tests=(t,))
    assert (packet["receipt"]["state"], packet["receipt"]["action"]) == ("buildable", "block")
    assert "deterministic test 'unit' failed" in reasons(packet)


def test_test_receipt_from_another_revision_blocks(world, tmp_path):
    m = world.manifest(required_tests=("unit",))
    t = TestReceipt(name="unit", code_revision="f" * 40, passed=True, ran_at=world.now)
    packet = world.run(tmp_path, m, tests=(t,))
    assert packet["receipt"]["action"] == "block"
    assert f"from code revision {'f' * 40}, not the manifest's {REVISION}" in reasons(packet)


def test_passing_prerequisites_and_tests_keep_canary(world, tmp_path):
    m = world.manifest(required_tests=("unit",), required_prerequisites=("rollback_plan",))
    unit = TestReceipt(name="unit", code_revision=REVISION, passed=True, ran_at=world.now)
    packet = world.run(tmp_path, m, tests=(unit,),
                       prerequisites=(PrerequisiteReceipt(name="rollback_plan", satisfied=True),))
    assert packet["receipt"]["action"] == "canary_eligible"
    assert set(packet["receipt"]["components"]["tests"]) == {"unit"}


def test_packet_is_never_overwritten(world, tmp_path):
    world.run(tmp_path)
    with pytest.raises(ValueError, match="never overwritten"):
        world.run(tmp_path)


def test_receipt_is_deterministic(world, tmp_path):
    a = world.run(tmp_path / "a")
    b = world.run(tmp_path / "b")
    assert json.dumps(a["receipt"], sort_keys=True) == json.dumps(b["receipt"], sort_keys=True)


def test_sequential_method_runs_its_registered_look_schedule(world, tmp_path):
    m = world.manifest(method="likelihood_ratio", margin=0.03,
                       sequential_policy={"kind": "group_sequential", "looks": [60, 120, 180, 240, 300]})
    packet = world.run(tmp_path, m)
    c = packet["receipt"]["comparison"]
    assert c["kind"] == "sequential" and c["detail"]["looks"] == [60, 120, 180, 240, 300]
    assert c["status"] in ("pass", "fail", "inconclusive")
    assert "record is for method 'binomial_loss', not the registered 'likelihood_ratio'" in findings(packet)
    assert packet["receipt"]["action"] != "canary_eligible"


def test_fixed_method_with_interim_looks_is_refused(world, tmp_path):
    m = world.manifest(sequential_policy={"kind": "group_sequential", "looks": [150, 300]})
    with pytest.raises(ValueError, match="fixed-sample method: the manifest registers interim looks"):
        world.run(tmp_path, m)


def test_records_cannot_be_shopped(world, tmp_path):
    """A second record of the same method, whose grid holds the design and which could not
    qualify it, makes the design not covered, whichever record was pinned."""
    import shutil

    from methods import registry
    from methods.qualification import load_record
    from studies.qualify.run import qualify

    qdir = tmp_path / "q"
    shutil.copytree(world.qdir, qdir)
    # 200 replications against a 0.025 threshold: no cell can be shown qualified (undetermined)
    thin = load_record(world.record).policy.model_copy(update={"min_replications": 200, "max_replications": 200,
                                                                "allowed_excess": 1.0})
    other = qualify([registry.get("binomial_loss")], thin, out_dir=qdir).outcomes[0].record
    assert other.cell_map()[(300, 0, 0.0, 0.03, 0)].verdict != "qualified"
    manifest = world.manifest()
    trials = write_trials(tmp_path / "t.jsonl", manifest, clusters=300, baseline=0.9, discordance=0.01, seed=7,
                          cost_provenance="measured")
    later = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(minutes=1)  # after both records
    packet = run_experiment(manifest=manifest, artifacts=trial_artifacts(trials), out=tmp_path / "p.json",
                            qualification_dir=qdir, trusted=world.trusted, now=later)
    assert packet["receipt"]["action"] == "lab_pass"
    assert "another record of binomial_loss disagrees: sources disagree" in reasons(packet)


def test_pinned_certificate_covers_an_off_grid_design(world, tmp_path):
    """K = 250 is off the record's grid: only a certificate at exactly that design covers it."""
    from simlab import signing
    from studies.qualify.certify import certify, write_certificate

    grid_only = world.run(tmp_path / "grid", clusters=250)
    assert "clusters=250 is not on the record's grid" in findings(grid_only)
    key = signing.load_private_key(world.key)
    cert = certify("binomial_loss", 250, 1, 0.03, rho_max=0.0, baseline=(0.9, 1.0), discordance=(0.01, 0.1),
                   sign_key=key, engine="exact")
    qdir = tmp_path / "q"
    path = write_certificate(cert, qdir)
    later = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(minutes=1)
    manifest = with_population(world.manifest(qualification_sha256=cert.certificate_sha256), 250)
    trials = write_trials(tmp_path / "t.jsonl", manifest, clusters=250, baseline=0.9, discordance=0.01, seed=7,
                          cost_provenance="measured")
    cases = population_artifact(write_population(tmp_path / "cases.jsonl", 250))
    packet = run_experiment(manifest=manifest, artifacts=trial_artifacts(trials) + [cases], out=tmp_path / "p.json",
                            qualification_dir=qdir, trusted=world.trusted, now=later)
    r = packet["receipt"]
    assert r["qualification"]["record_file"] == path.name and r["qualification"]["covered"]
    assert r["qualification"]["signature"]["signed_by"] == signing.key_id(key)
    assert r["comparison"]["status"] == "pass" and r["action"] == "canary_eligible"
