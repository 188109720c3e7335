"""Probe round 7 (issue 29), fields and speed: each input error names its field (it was null)
and, where the check can be made from the arguments or the method catalogue, answers before the
layers that run methods load (numba, scipy, xarray)."""
from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.cli import main
from tests.cli.test_probe_round6 import PROBE

HEAVY = ("numba", "scipy", "xarray")
ROOT = Path(__file__).resolve().parents[2]


def _probe(argv: list[str], env: dict | None = None) -> tuple[dict, list[str]]:
    """The command's JSON error and the heavy modules it loaded, from a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE, *argv, "--json"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["rc"] == 2, report
    return json.loads(report["out"])["error"], [m for m in report["modules"] if m.split(".")[0] in HEAVY]


def _error(argv, capsys) -> dict:
    assert main(argv + ["--json"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return json.loads(out)["error"]


STUDY = """name = "p"
methods = [METHODS]
margins = [0.03]
replications = 200
seed = 1
[scenario]
clusters = 30
trials = 3
rho = 0.1
baseline = 0.9
discordance = 0.1
difference = -0.03
"""

SEQUENTIAL = """name = "cli"
methods = [METHODS]
looks = [25, 50]
replications = 500
seed = 2
[scenario]
cells = [0.98, 0.02, 0.0, 0.0]
"""


def _spec(tmp_path: Path, template: str, methods: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(template.replace("METHODS", methods))
    return path


# ---------------------------------------------------------------- 1. a spec's methods, from the catalogue


@pytest.mark.parametrize("methods, words", [
    ('"nosuch"', "methods[0]: unknown method 'nosuch'; registered methods: "),
    ('{name = "clustered_score", options = {icc_floor = "x"}}',
     "methods[0]: option icc_floor of 'clustered_score' must be a finite number, got 'x'"),
    ('{name = "cluster_t", options = {bogus = 1}}',
     "methods[0]: no option(s) ['bogus'] in method 'cluster_t'; known: ['min_clusters']"),
    ('{name = "cluster_t", options = {min_clusters = -1}}',
     "methods[0]: option min_clusters of 'cluster_t' must be a whole number >= 0, got -1"),
    ('"cluster_t", "likelihood_ratio"', "methods[1]: method 'likelihood_ratio' is not a fixed-sample method"),
])
def test_study_run_names_the_spec_for_a_method_the_catalogue_refuses(tmp_path, methods, words):
    """The field was null and the engine had loaded (1.1-1.4 s): the catalogue answers now."""
    spec = _spec(tmp_path, STUDY, methods)
    err, heavy = _probe(["study", "run", str(spec), "--out", str(tmp_path / "o.nc")])
    assert err["field"] == "spec" and err["message"].startswith(f"{spec}: {words}"), err
    assert not heavy, heavy
    assert not (tmp_path / "o.nc").exists()


def test_a_declared_range_is_checked_with_the_spec_and_an_open_end_by_the_method(tmp_path, capsys):
    """clustered_score's icc_floor range was checked only where the method prepares (2.1 s, the
    file unnamed); the catalogue declares it now.  An open end of a range (betting_ci's
    truncation in (0, 1)) is still the method's own check: its error names the spec too."""
    spec = _spec(tmp_path, STUDY, '{name = "clustered_score", options = {icc_floor = -3}}')
    err = _error(["study", "run", str(spec), "--out", str(tmp_path / "o.nc")], capsys)
    assert err == {"field": "spec", "message": f"{spec}: methods[0]: option icc_floor of 'clustered_score' must be "
                                               "a number in [0, 1], got -3.0"}
    spec = _spec(tmp_path, STUDY, '{name = "betting_ci", options = {truncation = 0}}')
    err = _error(["study", "run", str(spec), "--out", str(tmp_path / "o.nc")], capsys)
    assert err == {"field": "spec", "message": "method 'betting_ci': option truncation must lie in (0, 1), got 0.0"}


def test_the_catalogue_check_is_the_spec_parser_s_and_leaves_good_specs_alone():
    from methods import MethodRef
    from studies.engine import StudySpec, check_method_refs, parse_spec

    data = {"methods": [{"name": "cluster_t", "options": {"min_clusters": 5}}, "clustered_normal"],
            "replications": 10, "scenario": {"cells": [0.9, 0.04, 0.03, 0.03]}}
    assert [m.key for m in parse_spec(data).methods] == ["cluster_t[min_clusters=5]", "clustered_normal"]
    with pytest.raises(ValueError, match=r"^x.toml: methods\[0\]: unknown method 'nope'"):
        parse_spec({**data, "methods": ["nope"]}, source="x.toml")
    assert StudySpec.method_kind == "fixed" and "method_kind" not in parse_spec(data).model_dump()
    check_method_refs([MethodRef(name="alpha_spending", options={"spending": "pocock"})], "sequential")   # a choice
    check_method_refs([MethodRef(name="repeated_fixed", inner="cluster_t", inner_options={"min_clusters": 3})])
    with pytest.raises(ValueError, match=r"methods\[0\].inner_options: no option\(s\) \['x'\] in method 'cluster_t'"):
        check_method_refs([MethodRef(name="repeated_fixed", inner="cluster_t", inner_options={"x": 3})])
    with pytest.raises(ValueError, match=r"methods\[0\]: method 'msprt' does not wrap a fixed-sample method"):
        check_method_refs([MethodRef(name="msprt", inner="cluster_t")])


@pytest.mark.parametrize("methods, words", [
    ('"cluster_t"', "methods[0]: method 'cluster_t' is not a sequential method; sequential methods: alpha_spending"),
    ('{name = "repeated_fixed", inner = "betting_cs"}',
     "methods[0].inner: 'repeated_fixed' wraps fixed-sample methods; 'betting_cs' is not one"),
    ('"msprt", {name = "likelihood_ratio", options = {alternative = 2}}',
     "methods[1]: likelihood_ratio's option alternative (2) must lie in (0, margin = 0.03): the alternative loss "
     "rate, below the margin it tests"),
    ('{name = "msprt", options = {tau = -1}}', "methods[0]: option tau of 'msprt' must be a number in [0, 100]"),
])
def test_sequential_run_names_the_spec_for_a_method_it_cannot_run(tmp_path, methods, words):
    """Field null after the engine and a pilot (0.8-1.3 s)."""
    spec = _spec(tmp_path, SEQUENTIAL, methods)
    err, heavy = _probe(["sequential", "run", str(spec)])
    assert err["field"] == "spec" and err["message"].startswith(f"{spec}: {words}"), err
    assert not heavy, heavy


def test_likelihood_ratio_s_default_alternative_is_checked_against_every_margin(tmp_path, capsys):
    spec = _spec(tmp_path, SEQUENTIAL.replace("seed = 2", "seed = 2\nmargins = [0.03, 0.005]"), '"likelihood_ratio"')
    err = _error(["sequential", "run", str(spec)], capsys)
    assert err["field"] == "spec"
    assert err["message"].startswith(f"{spec}: methods[0]: likelihood_ratio's option alternative (0.01) must lie in "
                                     "(0, margin = 0.005)")


# ---------------------------------------------------------------- certify's stream options


CERTIFY = ["certify", "--method", "cluster_t", "--clusters", "30", "--margin", "0.03"]


@pytest.mark.parametrize("extra, field, message", [
    (["--max-reps", "10"], "--max-reps", "--max-reps 10 must lie in [2,000, 100,000,000]: the largest replication "
                                         "stage per scenario, at least the first stage (2,000 replications)"),
    (["--max-reps", "200000000"], "--max-reps", "--max-reps 200,000,000 must lie in [2,000, 100,000,000]"),
    (["--allowed-excess", "0.5"], "--allowed-excess",
     "--allowed-excess 0.5 must lie in [1, 10]: the threshold is allowed-excess x alpha (1 holds alpha itself, as "
     "calibrate does)"),
    (["--seed", str(2 ** 53)], "--seed", f"--seed {2 ** 53} must lie in [0, {2 ** 53 - 1}]"),
])
def test_certify_refuses_stream_options_the_policy_cannot_hold_before_the_method_loads(tmp_path, extra, field,
                                                                                      message):
    """``--max-reps 10`` said "max_replications (10) must be >= min_replications (2000)" with no
    field after 1 s; ``--allowed-excess 0.5`` took 1.7 s and said pydantic's words."""
    err, heavy = _probe([*CERTIFY, *extra, "--out", str(tmp_path)])
    assert err["field"] == field and err["message"].startswith(message), err
    assert not heavy, heavy


def test_certify_s_first_stage_is_the_policy_s_default():
    """The CLI reads the first stage from ``QualificationPolicy``; certify passes its own default."""
    from methods.qualification import QualificationPolicy
    from studies.qualify import certify

    assert inspect.signature(certify).parameters["min_replications"].default == \
        QualificationPolicy.model_fields["min_replications"].default


def test_calibrate_s_refusal_names_the_method(tmp_path, capsys):
    """"refused: even at nominal level ..." had no field.  Whether a method can be calibrated at
    a design is what the calibration computes (cluster_t's catalogue entry says it is calibrated
    by searching its levels), so this answer is the search's, now under --method."""
    err = _error(["calibrate", "--method", "cluster_t", "--clusters", "30", "--margin", "0.03", "--out",
                  str(tmp_path)], capsys)
    assert err["field"] == "--method"
    assert err["message"].startswith("--method cluster_t cannot be calibrated at this design (K=30, M=1, margin 0.03, "
                                     "rho <= 0): even at nominal level 0.00125 the exact worst case is not below "
                                     "0.025")


# ---------------------------------------------------------------- robustness


ROBUST = ["robustness", "--method", "cluster_t", "--clusters", "30", "--trials", "3", "--margin", "0.03",
          "--reps", "100"]


def test_robustness_names_a_method_given_twice_before_the_studies_load():
    err, heavy = _probe([*ROBUST, "--method", "cluster_t"])
    assert err == {"field": "--method", "message": "--method cluster_t is given more than once: give each method once"}
    assert not heavy, heavy


def test_robustness_refuses_a_law_family_given_twice(capsys):
    """``--laws model,model`` was accepted silently."""
    err = _error([*ROBUST, "--laws", "model,logit_normal,model"], capsys)
    assert err["field"] == "--laws"
    assert err["message"] == ("simlab robustness: argument --laws: lists model more than once "
                              "('model,logit_normal,model'): each family once")


def test_robustness_checks_its_report_path_before_any_work(tmp_path):
    """``--report /proc/x.json`` failed after 5.7 s of work with no field."""
    (tmp_path / "file").write_text("x")
    for report in ("/proc/x.json", str(tmp_path / "file" / "r.json")):
        err, heavy = _probe([*ROBUST, "--report", report])
        assert err["field"] == "--report" and report in err["message"], err
        assert not heavy, heavy


# ---------------------------------------------------------------- sequential show / plot / boundaries


@pytest.fixture(scope="module")
def sequential_nc(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("seq")
    spec = _spec(folder, SEQUENTIAL, '"msprt"')
    out = folder / "s.nc"
    assert main(["sequential", "run", str(spec), "--out", str(out), "--json"]) == 0
    return out


@pytest.mark.parametrize("command", ["show", "plot"])
def test_a_margin_the_sequential_dataset_lacks_is_named_from_its_coordinates(sequential_nc, command, tmp_path):
    """``sequential show SEQ.nc --margin 0.5`` read the dataset first (1.6 s)."""
    extra = ["--out", str(tmp_path / "p.png")] if command == "plot" else []
    err, heavy = _probe(["sequential", command, str(sequential_nc), "--margin", "0.5", *extra])
    assert err == {"field": "--margin", "message": f"--margin 0.5: not in {sequential_nc} (it holds margin 0.03)"}
    assert not heavy, heavy
    assert not (tmp_path / "p.png").exists()


def test_a_margin_the_dataset_holds_is_shown(sequential_nc, capsys):
    assert main(["sequential", "show", str(sequential_nc), "--margin", "0.03", "--json"]) == 0
    assert {r["margin"] for r in json.loads(capsys.readouterr().out)["rows"]} == {0.03}


@pytest.mark.parametrize("extra, field, message", [
    (["--alpha", "0.5"], "--alpha", "--alpha 0.5 must lie in (0, 0.5): the one-sided level"),
    (["--information", "0.5,0.4,1"], "--information",
     "--information '0.5,0.4,1': fractions must increase strictly in (0, 1] and end at 1"),
    (["--information", ","], "--information", "--information ',' lists no fraction; give e.g. 0.5,1"),
    (["--gamma", "2"], "--gamma", "--gamma 2: the obf family has no parameter"),
])
def test_boundaries_check_the_design_before_the_spending_code_loads(extra, field, message):
    """``--alpha 0.5`` was refused after 1 s (numba and the spending recursion loaded)."""
    information = [] if "--information" in extra else ["--information", "0.5,1"]
    argv = ["sequential", "boundaries", "--spending", "obf", *information, *extra]
    err, heavy = _probe(argv)
    assert err == {"field": field, "message": message}
    assert not heavy, heavy


def test_boundaries_s_power_family_needs_a_positive_exponent(capsys):
    err = _error(["sequential", "boundaries", "--spending", "power", "--information", "0.5,1", "--gamma", "-1"], capsys)
    assert err == {"field": "--gamma", "message": "--gamma -1: the power family's exponent rho must be > 0"}


# ---------------------------------------------------------------- false-pass --device gpu


@pytest.mark.parametrize("argv", [
    ["false-pass", "--method", "cluster_t", "--simulate"],
    ["false-pass", "--method", "cluster_t"],   # an exact engine applies: it was run on the CPU, said unused
    ["study", "run", "{spec}", "--out", "{tmp}/o.nc"],
])
def test_a_missing_gpu_is_refused_before_the_studies_load(argv, tmp_path):
    """3.0 s: the method, the studies and a pilot came first (false-pass --simulate), or the
    request was dropped with a note (an exact engine applied).  The GPU probe loads numba (and
    numba.cuda, scipy) itself; the studies' engine and xarray are not loaded.  Run without the
    CUDA simulator the test session sets (tests/conftest.py)."""
    import os
    import shutil

    spec = tmp_path / "s.toml"
    spec.write_text('methods = ["cluster_t"]\nreplications = 100\n[scenario]\nclusters = 30\ntrials = 3\n'
                    'cells = [0.9, 0.04, 0.03, 0.03]\n')
    argv = [a.replace("{spec}", str(spec)).replace("{tmp}", str(tmp_path)) for a in argv] + ["--device", "gpu"]

    if shutil.which("nvidia-smi") is not None:
        pytest.skip("this machine may have a GPU")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    probe = PROBE.replace('m.startswith("methods.qualification")',
                          'm.startswith(("methods.fixed.", "studies.engine."))')
    assert probe != PROBE
    done = subprocess.run([sys.executable, "-c", probe, *argv, "--json"], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=env)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    err = json.loads(report["out"])["error"]
    assert report["rc"] == 2 and err["field"] == "--device" and err["message"].startswith("--device gpu: "), err
    assert "NUMBA_ENABLE_CUDASIM is not set" in err["message"] or "numba.cuda" in err["message"], err
    loaded = [m for m in report["modules"] if m.startswith(("xarray", "methods.fixed.", "studies.engine."))]
    light = ("studies.engine.device", "studies.engine.spec", "studies.engine.spec_file")   # selecting, parsing
    assert not [m for m in loaded if m not in light], loaded   # no method, no engine, no xarray


# ---------------------------------------------------------------- records coverage --rho-max


def test_records_coverage_refuses_rho_max_below_rho(capsys):
    """It answered covered: true; ``size`` refuses the same design."""
    err = _error(["records", "coverage", "--records", str(ROOT / "results" / "qualification"), "--method",
                  "binomial_loss", "--clusters", "500", "--margin", "0.03", "--rho", "0.05", "--rho-max", "0.01"],
                 capsys)
    assert err == {"field": "--rho-max", "message": "--rho-max 0.01 must be >= --rho 0.05: the nuisance domain the "
                                                    "coverage must reach holds the design's own correlation"}
