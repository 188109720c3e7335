"""Issue 30, item 3: certificates of a judge-corrected method over a label-noise domain
(``studies.qualify.certify_judge``): the domain is recorded and bound to the models searched,
the stream is derived from the design, and the calibrated route searches its level with
the calibration sets on a stream the certificate never sees."""
from __future__ import annotations

import json

import pytest

from methods import registry
from methods.qualification import load_certificate
from methods.qualification.certificate import CertifiedDesign
from methods.qualification.label_noise import LabelNoiseDomain
from studies.qualify import write_certificate
from studies.qualify.calibrate import SEARCH_OFFSET
from studies.qualify.certify_judge import calibrate_label_noise, certify_label_noise, label_noise_seed

POINT = dict(baseline=(0.8, 0.8), discordance=(0.3, 0.3))   # one nuisance point: quick


def _design(**kw):
    d = LabelNoiseDomain(**{"sensitivity": (0.9, 1.0), "specificity": (0.9, 1.0), "calibration_items": 200, **kw})
    return CertifiedDesign(clusters=100, trials=1, margin=0.05, rho_max=0.0, label_noise=d.models("edges"),
                           label_noise_domain=d)


def test_the_seed_is_a_pure_function_of_the_design_and_route():
    m = registry.get("judge_corrected").with_options(min_calibration=200)
    a = label_noise_seed(m, _design(), 0.025)
    assert a == label_noise_seed(m, _design(), 0.025) and 0 <= a < 2 ** 52
    others = {label_noise_seed(m, _design(), 0.025, route="calibrate"), label_noise_seed(m, _design(), 0.05),
              label_noise_seed(m, _design(specificity=(0.85, 1.0)), 0.025),
              label_noise_seed(m.with_options(min_calibration=100), _design(), 0.025)}
    assert a not in others and len(others) == 4


def test_a_label_noise_certificate_records_its_domain_and_reloads(tmp_path):
    cert = certify_label_noise("judge_corrected", 100, 1, 0.05, sensitivity=(0.9, 1.0), specificity=(0.9, 1.0),
                               calibration_items=200, alpha=0.1, allowed_excess=2.0, min_replications=300,
                               max_replications=300, **POINT)
    d = cert.design
    assert d.label_noise_domain.calibration_items == 200 and d.label_noise == d.label_noise_domain.models("edges")
    assert len(cert.points) == 49 and {p.noise for p in cert.points} == set(range(49))  # every node evaluated
    assert ("worst case over the 49 label-noise nodes the certificate lists (its corners, edge midpoints and centre), "
            "a search, not a proof between them (listed in design.label_noise)") in cert.search
    assert cert.method.options["min_calibration"] == 200.0 and cert.engine == "simulation"
    seed = label_noise_seed(registry.get("judge_corrected").with_options(min_calibration=200), d, 0.1)
    assert f"Stream seed {seed} (derived from the design)" in cert.search
    path = write_certificate(cert, tmp_path)
    again = load_certificate(path)
    assert again.certificate_sha256 == cert.certificate_sha256 and again.design == d
    assert json.loads(path.read_text())["design"]["label_noise_domain"]["sensitivity"] == [0.9, 1.0]


def test_the_corner_search_is_still_available_and_says_so():
    cert = certify_label_noise("judge_corrected", 100, 1, 0.05, sensitivity=(0.9, 1.0), specificity=(0.9, 1.0),
                               calibration_items=200, calibration_shared=True, nodes="corners", alpha=0.1,
                               allowed_excess=2.0, min_replications=300, max_replications=300, **POINT)
    d = cert.design
    assert d.label_noise == d.label_noise_domain.models("corners") and len(cert.points) == 5
    assert "worst case over the 5 label-noise nodes the certificate lists (its corners and centre)" in cert.search
    assert "one judge for both arms" in cert.assumptions


def test_label_noise_options_are_checked():
    with pytest.raises(ValueError, match="certified by simulation"):
        certify_label_noise("judge_corrected", 100, 1, 0.05, sensitivity=(0.9, 1.0), specificity=(0.9, 1.0),
                            calibration_items=200, engine="exact")
    with pytest.raises(ValueError, match="min_calibration: method 'cluster_robust' does not read a calibration set"):
        certify_label_noise("cluster_robust", 100, 1, 0.05, sensitivity=(0.9, 1.0), specificity=(0.9, 1.0),
                            calibration_items=200, min_calibration=100)
    with pytest.raises(ValueError, match="must exceed 1"):
        certify_label_noise("judge_corrected", 100, 1, 0.05, sensitivity=(0.5, 1.0), specificity=(0.5, 1.0),
                            calibration_items=200)


def test_the_calibrated_route_searches_with_calibration_sets_on_its_own_stream():
    cal = calibrate_label_noise("judge_corrected", 100, 1, 0.05, sensitivity=(0.95, 0.95), specificity=(0.95, 0.95),
                                calibration_items=200, alpha=0.1, search_replications=2000, min_replications=2000,
                                max_replications=32_000, **POINT)
    cert = cal.certificate
    assert cert.verdict == "qualified" and cert.alpha == 0.1 and cert.allowed_excess == 1.0
    assert cert.design.label_noise_domain.sensitivity == (0.95, 0.95) and len(cert.design.label_noise) == 1
    j = cal.search["levels"].index(cal.nominal_alpha)   # the largest level whose searched worst case is on target
    assert cal.search["worst"][j] <= cal.target == pytest.approx(0.096)
    assert all(w > cal.target for w in cal.search["worst"][j + 1:])
    assert cal.method.nominal_alpha == cal.nominal_alpha
    assert cal.method.label.startswith("judge_corrected@alpha=")
    assert float(cal.method.label.split("=")[1]) == pytest.approx(cal.nominal_alpha, rel=1e-5)
    assert cert.method.source_sha256 == cal.method.identity.source_sha256
    assert cal.method.options["min_calibration"] == 200.0
    seed = cal.search["search_seed"] - SEARCH_OFFSET          # the search ran beside, never on, the certificate
    assert f"Certification stream seed {seed} (derived from the design)" in cert.search
    assert f"the level search ran on seed {seed + SEARCH_OFFSET}" in cert.search


def test_cli_certifies_a_label_noise_domain_and_refuses_half_a_domain(tmp_path, capsys):
    from simlab.cli import main

    base = ["certify", "--method", "judge_corrected", "--clusters", "100", "--margin", "0.05", "--baseline", "0.8,0.8",
            "--discordance", "0.3,0.3", "--out", str(tmp_path), "--json"]
    assert main(base + ["--sensitivity", "0.9,1"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["field"] == "--specificity" and "needs --sensitivity, --specificity and --calibration-items" in \
        err["message"]
    assert main(base + ["--label-noise-nodes", "corners"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["field"] == "--sensitivity"
    assert main(base + ["--sensitivity", "0.95,0.95", "--specificity", "0.95,0.95", "--calibration-items", "200",
                        "--min-calibration", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["design"]["label_noise_domain"] == {"sensitivity": [0.95, 0.95], "specificity": [0.95, 0.95],
                                                   "calibration_items": 200, "calibration_shared": False}
    assert load_certificate(out["file"]).method.options["min_calibration"] == 100.0
