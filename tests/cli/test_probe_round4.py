"""Probe rounds 3 and 4: findings closed this round, each with the reason asserted."""
from __future__ import annotations

import json

import numpy as np
import pytest

from simlab.cli import main


@pytest.mark.parametrize("argv, flag", [
    (["study", "plot", "x.nc", "--out", ""], "--out"),              # wrote the default x.png
    (["robustness", "--report", ""], "--report"),                   # wrote no report and said nothing
    (["robustness", "--dataset", " "], "--dataset"),
    (["qualify", "--method", "cluster_t", "--out", ""], "--out"),   # wrote into the shipped records folder
    (["qualify", "--method", "cluster_t", "--checkpoint", ""], "--checkpoint"),
    (["qualify", "show", "r.json", "--png", ""], "--png"),
    (["records", "regenerate", "--out", ""], "--out"),
    (["sequential", "plot", "x.nc", "--out", ""], "--out"),
    (["demo", "--out", ""], "--out"),
])
def test_an_empty_output_path_is_refused_naming_its_flag(argv, flag, capsys):
    assert main(argv + ["--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["field"] == flag and "an empty path" in err["message"]


def _error(argv, capsys) -> dict:
    assert main(argv + ["--json"]) == 2
    return json.loads(capsys.readouterr().out)["error"]


def test_keygen_names_a_dangling_link_in_the_keys_place(tmp_path, capsys):
    (tmp_path / "simlab.key").symlink_to(tmp_path / "nowhere")
    err = _error(["evidence", "keygen", "--out", str(tmp_path)], capsys)   # was "[Errno 17] File exists"
    assert err["field"] == "--out" and "simlab.key already exists (a link to" in err["message"]
    assert "never overwritten" in err["message"]


def test_sign_refuses_to_write_the_signature_over_the_file_it_signs_and_names_a_missing_key(tmp_path, capsys):
    assert main(["evidence", "keygen", "--out", str(tmp_path / "k"), "--json"]) == 0
    capsys.readouterr()
    doc = tmp_path / "doc.json"
    doc.write_text('{"a": 1}\n')
    err = _error(["evidence", "sign", "--key", str(tmp_path / "k" / "simlab.key"), "--force", "--out", str(doc),
                  str(doc)], capsys)                                      # replaced the document by its signature
    assert err["field"] == "--out" and "is the file being signed" in err["message"]
    assert doc.read_text() == '{"a": 1}\n'
    err = _error(["evidence", "sign", "--key", str(tmp_path / "no.key"), str(doc)], capsys)
    assert err["field"] == "--key" and "cannot read it (No such file or directory)" in err["message"]


def test_bench_gpu_without_a_gpu_names_itself_not_a_device_flag_it_lacks(capsys, monkeypatch):
    from simlab import gpu

    monkeypatch.setattr(gpu, "available", lambda: False)
    err = _error(["bench", "gpu"], capsys)
    assert err["message"].startswith("bench gpu needs a CUDA GPU") and "--device" not in err["message"]


@pytest.mark.parametrize("looks, why", [("0:10:0", "looks must be comma-separated integers or start:stop:step"),
                                        ("5,3", "looks must be strictly increasing")])
def test_a_bad_look_schedule_names_the_looks_flag(looks, why, capsys):
    err = _error(["sequential", "analyze", "--method", "alpha_spending", "--looks", looks, "--table", "1,0,0,1"],
                 capsys)
    assert err["field"] == "--looks" and err["message"].startswith(f"--looks {looks!r}: {why}")


def test_records_theorem_names_out_when_it_is_a_file(tmp_path, capsys):
    f = tmp_path / "F"
    f.write_text("mine\n")
    err = _error(["records", "theorem", "--out", str(f)], capsys)        # said "output F/...", field null
    assert err["field"] == "--out" and "is a file, not a directory" in err["message"]
    assert f.read_text() == "mine\n"


def test_a_work_dir_whose_run_folder_or_record_is_the_wrong_kind_is_refused_before_the_run(tmp_path, capsys):
    from studies.engine import load_spec
    from studies.engine.runner import run_key

    spec_file = tmp_path / "s.toml"
    spec_file.write_text('name = "w"\nmethods = ["paired_wald"]\nreplications = 200\nseed = 2\n\n[scenario]\n'
                         'clusters = 10\ntrials = 2\nbaseline = 0.9\ndiscordance = 0.1\ndifference = -0.03\n')
    spec = load_spec(spec_file)
    run = tmp_path / "W" / run_key(spec, spec.chunk_size)
    run.parent.mkdir()
    run.write_text("")                                                    # was a bare "File exists"
    argv = ["study", "run", str(spec_file), "--work-dir", str(tmp_path / "W"), "--out", str(tmp_path / "o.nc")]
    err = _error(argv, capsys)
    assert err["field"] == "--work-dir" and "is a file, not this run's chunk folder" in err["message"]
    run.unlink()
    (run / "run.json").mkdir(parents=True)                                # stopped the run at its end
    err = _error(argv, capsys)
    assert err["field"] == "--work-dir" and "run.json is not a file" in err["message"]
    assert not (tmp_path / "o.nc").exists()


def test_the_exact_engines_probes_are_priced_before_they_run():
    """false-pass --method bayes_hierarchical at 5003 x 11 --max-seconds 5 probed for minutes
    (deaf to Ctrl-C) before any estimate; the probes are now priced from the method's declared
    cost on the very tables they run, and not run beyond PROBE_MAX_SECONDS."""
    from methods import get
    from simlab.scenario import FixedSize, PairedScenario
    from studies.exact.fixed import PROBE_MAX_SECONDS, exact_engine, probe_seconds

    big = PairedScenario(cells=(0.96, 0.04, 0, 0), clusters=503, cluster_size=FixedSize(trials=5), rho=0.0)
    method = get("bayes_hierarchical")
    assert probe_seconds(method, np.full(503, 5)) > PROBE_MAX_SECONDS
    engine, why = exact_engine(big, method)
    assert engine is None and why.startswith("not probed: running the method on the probes' 32 tables")
    small = PairedScenario(cells=(0.96, 0.04, 0, 0), clusters=30, cluster_size=FixedSize(trials=1), rho=0.0)
    assert exact_engine(small, get("paired_wald"))[0] == "unit"   # cheap probes still run


def test_trial_bootstrap_declares_its_cost():
    """Its resamples x trial pairs were priced as a linear method's cells: its probes ran 46-78 s."""
    from methods import analysis_cost, get

    t = np.zeros((1, 5003, 4))
    t[..., 0] = 11
    cost = analysis_cost(get("trial_bootstrap"), t)
    assert cost.driver.startswith("resamples x trial pairs") and cost.seconds > 0.1


def test_false_pass_of_a_slow_method_at_a_big_design_is_refused_in_seconds(capsys):
    err = _error(["false-pass", "--method", "bayes_hierarchical", "--clusters", "503", "--trials", "5",
                  "--max-seconds", "5"], capsys)
    assert err["field"] == "--max-seconds" and err["message"].startswith("simulating 200,000 replications")


def test_size_keeps_the_whole_search_within_max_seconds(capsys):
    """Only the first frame was checked: --max-seconds 20 ran past 110 s.  The search now runs on a
    StepBudget of --max-seconds, and stops with what it found (or is refused by its estimate)."""
    err = _error(["size", "--method", "bayes_hierarchical", "--margin", "0.05", "--true-difference", "0",
                  "--trials-per-cluster", "3", "--max-seconds", "20", "--out", ""], capsys)
    assert err["field"] == "--max-seconds"
    assert err["message"].startswith("sizing bayes_hierarchical stopped within --max-seconds 20: ") or \
        "would take an estimated" in err["message"]


def _keys(tmp_path, capsys):
    assert main(["evidence", "keygen", "--out", str(tmp_path / "k"), "--json"]) == 0
    capsys.readouterr()
    doc = tmp_path / "doc.json"
    doc.write_text('{"a": 1}\n')
    return tmp_path / "k" / "simlab.key", doc


def test_sign_never_writes_over_its_own_key_files(tmp_path, capsys):
    """--out KEY --force replaced the private key with the signature: the key was gone for good."""
    key, doc = _keys(tmp_path, capsys)
    before = key.read_bytes(), key.with_suffix(".pub").read_bytes()
    for target, what in ((key, "is the private key (--key)"), (key.with_suffix(".pub"), "is the public key beside")):
        err = _error(["evidence", "sign", "--key", str(key), "--force", "--out", str(target), str(doc)], capsys)
        assert err["field"] == "--out" and what in err["message"]
    assert (key.read_bytes(), key.with_suffix(".pub").read_bytes()) == before


@pytest.mark.parametrize("argv, flag", [
    (["evidence", "verify", "--trusted", "", "doc.json"], "--trusted"),     # trusted every .pub in the cwd
    (["evidence", "verify", "--trusted", "k", "--signature", "", "doc.json"], "--signature"),
    (["evidence", "sign", "--key", "k.key", "--out", "", "doc.json"], "--out"),
    (["evidence", "replay", "p.json", "--qualification-dir", ""], "--qualification-dir"),
])
def test_an_empty_path_to_read_is_refused_too(argv, flag, capsys):
    err = _error(argv, capsys)
    assert err["field"] == flag and "an empty path" in err["message"]


def test_a_trusted_folder_without_keys_is_bad_input_not_a_verdict(tmp_path, capsys):
    key, doc = _keys(tmp_path, capsys)
    (tmp_path / "empty").mkdir()
    err = _error(["evidence", "verify", "--trusted", str(tmp_path / "empty"), str(doc)], capsys)  # was exit 1
    assert err["field"] == "--trusted" and "no *.pub public key" in err["message"]


def test_records_theorem_keeps_a_users_file_and_checks_records(tmp_path, capsys):
    (tmp_path / "betting_cs.theorem.json").write_text("my notes\n")
    err = _error(["records", "theorem", "--out", str(tmp_path)], capsys)     # replaced it without a word
    assert err["field"] == "--out" and "is not a theorem record simlab wrote" in err["message"]
    assert (tmp_path / "betting_cs.theorem.json").read_text() == "my notes\n"
    assert list(tmp_path.iterdir()) == [tmp_path / "betting_cs.theorem.json"]  # nothing written before the check
    err = _error(["records", "theorem", "--records", str(tmp_path / "none"), "--out", str(tmp_path)], capsys)
    assert err["field"] == "--records"


def test_qualify_show_keeps_a_users_file_in_the_pngs_place(tmp_path, capsys):
    from methods.qualification import records_dir

    record = str(next(records_dir().glob("cluster_t.*.json")))
    mine = tmp_path / "heat.png"
    mine.write_text("precious\n")
    err = _error(["qualify", "show", record, "--png", str(mine)], capsys)    # the text file became a PNG
    assert err["field"] == "--png" and "is not a plot simlab drew" in err["message"]
    err = _error(["qualify", "show", record, "--png", str(tmp_path / "heat.txt")], capsys)  # matplotlib's words
    assert err["field"] == "--png" and "give a path ending in .png" in err["message"]
    assert mine.read_text() == "precious\n"


def test_a_look_beyond_any_design_is_named(capsys):
    err = _error(["sequential", "analyze", "--method", "bonferroni", "--table", "1,1,1,1", "--looks",
                  "99999999999999999999"], capsys)                          # "Python int too large", field null
    assert err["field"] == "--looks" and "is beyond any design" in err["message"]


def test_judge_corrected_min_calibration_is_a_count(capsys):
    err = _error(["interval", "--method", "judge_corrected", "--table", "10,2,1,3", "--calibration", "40,5,5,50",
                  "--option", "min_calibration=2.5"], capsys)
    assert err["field"] == "--option" and "must be a whole number >= 0" in err["message"]


def _small_spec(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "w"\nmethods = ["paired_wald"]\nreplications = 200\nseed = 2\n\n[scenario]\n'
                    'clusters = 10\ntrials = 2\nbaseline = 0.9\ndiscordance = 0.1\ndifference = -0.03\n')
    return spec


def test_study_run_never_writes_its_dataset_over_its_own_spec(tmp_path, capsys):
    spec = _small_spec(tmp_path)
    text = spec.read_text()
    err = _error(["study", "run", str(spec), "--out", str(spec), "--force"], capsys)   # the spec became HDF5
    assert err["field"] == "--out" and "is the spec file being run" in err["message"]
    assert spec.read_text() == text


@pytest.mark.parametrize("work, out, why", [
    ("afile", "o.nc", "is a file, not a directory"),                 # a raw errno, after the estimate
    ("same.nc", "same.nc", "overlap"),                               # refused at the run's end, chunks left
    ("o2.nc/sub", "o2.nc", "overlap"),
])
def test_study_run_checks_its_work_dir_before_any_work(tmp_path, capsys, work, out, why):
    spec = _small_spec(tmp_path)
    (tmp_path / "afile").write_text("")
    err = _error(["study", "run", str(spec), "--work-dir", str(tmp_path / work), "--out", str(tmp_path / out)],
                 capsys)
    assert err["field"] == "--work-dir" and why in err["message"]
    assert not (tmp_path / out).exists()


def test_dask_workers_are_bounded_by_the_cores(tmp_path, capsys):
    err = _error(["study", "run", str(_small_spec(tmp_path)), "--dask-workers", "100000"], capsys)
    assert err["field"] == "--dask-workers" and "local workers on this machine's" in err["message"]


def test_the_text_error_names_the_field_json_gives(capsys):
    """The one line said "alpha (the one-sided level) must lie in (0, 0.25]" with no flag; --json
    named --alpha.  The text line now names it too."""
    assert main(["interval", "--method", "clustered_normal", "--table", "10,2,1,7", "--table", "8,1,2,9",
                 "--alpha", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: --alpha: alpha (the one-sided level) must lie in (0, 0.25]")
