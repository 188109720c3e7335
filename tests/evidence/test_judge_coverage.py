"""Issue 30, items 2-4 on the evidence path with a certificate whose label-noise domain can
cover the registered judge: the judge-corrected comparison is accepted exactly where the
registered calibration lies inside that domain; a correction that is not identified holds
with its reason; a failed deterministic check blocks whatever the judge said, even under a
covering, trusted certificate."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from evidence.packet import population_artifact, run_experiment, trial_artifacts
from evidence.synthetic import demo_manifest, with_population, write_population, write_trials
from simlab.hashing import address

REVISION = "0123456789abcdef0123456789abcdef01234567"
PARTS = {"model": "judge-model@2026-11", "prompt": "judge-prompt-v2", "rubric": "rubric-v3", "parser": "parser-v2"}
INSIDE = [[380, 20, 20, 380], [380, 20, 20, 380]]     # Se = Sp = 0.95 per arm, 800 items: inside [0.9, 1]
OUTSIDE = [[380, 20, 40, 360], [380, 20, 20, 380]]    # baseline Sp 0.9: its interval reaches below 0.9


@pytest.fixture(scope="module")
def judge_cert(tmp_path_factory):
    """A small certificate of judge_corrected over a label-noise domain, signed.  A loose level
    (alpha 0.1, threshold 0.2, 300 replications per scenario) keeps it quick: the rules under
    test read the certificate's verdict and domain, whatever produced them."""
    from simlab import signing
    from studies.qualify import write_certificate
    from studies.qualify.certify_judge import certify_label_noise

    root = tmp_path_factory.mktemp("judge-cert")
    key = signing.generate_key()
    _, public = signing.save_keypair(key, root / "keys", "judge-test")
    cert = certify_label_noise("judge_corrected", 400, 1, 0.03, sensitivity=(0.9, 1.0), specificity=(0.9, 1.0),
                               calibration_items=800, alpha=0.1, allowed_excess=2.0, min_replications=300,
                               max_replications=300, baseline=(0.8, 0.8), discordance=(0.3, 0.3), sign_key=key)
    assert cert.verdict == "qualified", cert.worst_point
    qdir = root / "qualification"
    write_certificate(cert, qdir)
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(minutes=1)
    return {"qdir": qdir, "pin": address(cert.certificate_sha256), "trusted": signing.trusted_keys([public]),
            "now": now, "cert": cert}


def run(folder, jc, counts=INSIDE, *, name="exp", candidate_failed=0, **kw):
    m = demo_manifest(method="judge_corrected", margin=0.03, confidence=0.8, rho_max=0.5,
                      measurement_kind="measured", code_revision=REVISION, qualification_sha256=jc["pin"],
                      created=jc["now"] - dt.timedelta(hours=1),
                      judge={"identity_sha256": "sha256:" + "2" * 64, "components": PARTS,
                             "calibration_counts": counts, "calibration_shared": False, "min_calibration": 800},
                      **kw)
    m = with_population(m, 400)
    trials = write_trials(folder / f"{name}.jsonl", m, clusters=400, baseline=0.8, discordance=0.02, seed=3,
                          cost_provenance="measured", candidate_failed=candidate_failed)
    artifacts = trial_artifacts(trials) + [population_artifact(write_population(folder / f"{name}.pop.jsonl", 400))]
    return run_experiment(manifest=m, artifacts=artifacts, out=folder / f"{name}.packet.json",
                          qualification_dir=jc["qdir"], trusted=jc["trusted"], now=jc["now"])["receipt"]


def test_a_calibration_inside_the_certified_domain_is_covered_and_can_reach_the_ceiling(tmp_path, judge_cert):
    r = run(tmp_path, judge_cert)
    q = r["qualification"]
    assert q["covered"] and q["signature"]["signed_by"], q["reasons"]
    assert "and the registered judge calibration (inside its label-noise domain)" in q["reasons"][0]
    assert q["guarantee"] == "model-certified" and "judge sensitivity in [0.9, 1]" in q["assumptions"]
    assert ("worst case over the 49 label-noise nodes the certificate lists (its corners, edge midpoints and centre), "
            "a search, not a proof between them") in q["assumptions"]
    assert "passes with probability at most alpha/4 = 0.025" in q["assumptions"]
    assert r["comparison"]["status"] == "pass"
    assert (r["state"], r["action"], r["authority"]) == ("qualified", "canary_eligible", "canary"), r["reasons"]


def test_a_calibration_outside_the_domain_is_not_covered_and_says_why(tmp_path, judge_cert):
    r = run(tmp_path, judge_cert, OUTSIDE)
    assert not r["qualification"]["covered"]
    assert r["comparison"]["status"] == "pass" and r["action"] == "lab_pass"
    assert r["reasons"] == [
        "unqualified: design not covered: registered judge calibration outside the certified label-noise domain: the "
        "baseline set's specificity 0.9 has one-sided 0.975 Clopper-Pearson bounds [0.8663, 0.9276], not inside the "
        "certified [0.9, 1]"]   # each bound at 1 - alpha / 4, the certificate's alpha 0.1


def test_a_calibration_of_another_size_is_not_covered(tmp_path, judge_cert):
    r = run(tmp_path, judge_cert, [[570, 30, 30, 570], [380, 20, 20, 380]])
    assert r["action"] == "lab_pass"
    assert "the baseline calibration set has 1200 items, the certificate covers exactly 800" in r["reasons"][0]


def test_a_registered_minimum_other_than_the_certified_one_is_another_method(tmp_path, judge_cert):
    m = demo_manifest(method="judge_corrected", margin=0.03, confidence=0.8, rho_max=0.5,
                      qualification_sha256=judge_cert["pin"], created=judge_cert["now"] - dt.timedelta(hours=1),
                      judge={"identity_sha256": "sha256:" + "2" * 64, "components": PARTS,
                             "calibration_counts": INSIDE, "calibration_shared": False, "min_calibration": 200})
    trials = write_trials(tmp_path / "t.jsonl", m, clusters=400, baseline=0.8, discordance=0.02, seed=3)
    r = run_experiment(manifest=m, artifacts=trial_artifacts(trials), out=tmp_path / "p.json",
                       qualification_dir=judge_cert["qdir"], now=judge_cert["now"])["receipt"]
    assert not r["qualification"]["covered"]
    assert "options {'min_calibration': 800.0" in r["qualification"]["reasons"][0]


def test_a_failed_deterministic_check_blocks_under_a_covering_certificate(tmp_path, judge_cert):
    r = run(tmp_path, judge_cert, candidate_failed=1)
    assert r["qualification"]["covered"] and r["comparison"]["status"] == "pass"  # the judge's tables pass ...
    assert (r["state"], r["action"], r["authority"]) == ("evidence_ready", "block", "none")  # ... the check blocks
    assert r["hard_failures"]["candidate_trials_with_failed_checks"] == 1
    assert r["reasons"][0].startswith("1 candidate trial(s) with failed checks (e.g. case 'case-00000-00' trial 0: "
                                      "refund_over_limit); an average cannot hide them")


@pytest.mark.parametrize("counts,why", [
    ([[200, 200, 200, 200], [380, 20, 20, 380]],   # baseline judge Se = Sp = 0.5: Se + Sp - 1 = 0
     "not identified: estimated sensitivity + specificity <= 1 for an arm's judge"),
    ([[800, 0, 0, 0], [380, 20, 20, 380]],          # no human-labelled fail: specificity not estimable
     "a calibration set has no human-labelled pass or no human-labelled fail"),
])
def test_a_correction_that_is_not_identified_holds_with_the_reason_never_passes(tmp_path, judge_cert, counts, why):
    r = run(tmp_path, judge_cert, counts)
    c = r["comparison"]
    assert c["status"] == "inconclusive" and c["lower"] is None and why in c["judge"]["reason"]
    assert (r["state"], r["action"], r["authority"]) == ("evidence_ready", "hold", "none")
    assert f"statistical comparison inconclusive: {c['judge']['reason']}" in r["reasons"]


def test_the_certificate_file_states_its_domain_and_a_tampered_domain_is_refused(tmp_path, judge_cert):
    from methods.qualification import TamperedRecordError, load_certificate
    from simlab.hashing import content_hash

    path = next(judge_cert["qdir"].glob("*.cert.json"))
    data = json.loads(path.read_text())
    assert data["design"]["label_noise_domain"] == {"sensitivity": [0.9, 1.0], "specificity": [0.9, 1.0],
                                                    "calibration_items": 800, "calibration_shared": False}
    data["design"]["label_noise_domain"]["specificity"] = [0.8, 1.0]   # widen the domain, reseal consistently
    data["signature"] = None
    body = {k: v for k, v in data.items() if k not in ("certificate_sha256", "signature")}
    data["certificate_sha256"] = content_hash(body)
    forged = tmp_path / path.name
    forged.write_text(json.dumps(data))
    with pytest.raises(TamperedRecordError, match="label_noise must be the nodes of label_noise_domain"):
        load_certificate(forged)
