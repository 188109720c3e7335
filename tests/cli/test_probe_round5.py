"""Probe rounds 4 and 5: findings closed this session (issue 29), each with the reason asserted."""
from __future__ import annotations

import json

import pytest

from simlab.cli import main


def _error(argv, capsys) -> dict:
    assert main(argv + ["--json"]) == 2
    return json.loads(capsys.readouterr().out)["error"]


def test_signing_a_document_that_cannot_be_content_addressed_names_the_document(tmp_path, capsys):
    assert main(["evidence", "keygen", "--out", str(tmp_path / "k"), "--json"]) == 0
    capsys.readouterr()
    doc = tmp_path / "nan.json"
    doc.write_text('{"a": NaN}\n')                  # said "$.a: non-finite number ..." and no file
    err = _error(["evidence", "sign", "--key", str(tmp_path / "k" / "simlab.key"), str(doc)], capsys)
    assert err["field"] == "file" and err["message"].startswith(f"{doc}: $.a: non-finite number")
    assert not (tmp_path / "nan.json.sig").exists()


def test_false_pass_says_when_an_exact_answer_leaves_device_gpu_unused(capsys):
    """The exact engines run on the CPU: --device gpu is named as not used (it said nothing)."""
    assert main(["false-pass", "--method", "cluster_t", "--clusters", "30", "--trials", "1", "--device", "gpu",
                 "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["exact"] and p["notes"] == ["--device gpu not used: the exact engine applies (add --simulate to "
                                         "simulate)"]


def test_n_jobs_is_capped_at_four_processes_per_core_like_dask_workers(capsys):
    """--n-jobs 1000 started a thousand worker processes before any estimate (probe round 5)."""
    import os

    err = _error(["study", "run", "nothing.toml", "--n-jobs", "1000"], capsys)
    assert err["field"] == "--n-jobs"
    assert f"at most {4 * (os.cpu_count() or 1)} worker processes" in err["message"]


def test_an_unbounded_interval_is_shown_as_infinite_not_as_nan(capsys):
    """cluster_t at alpha 1e-20 gives [-inf, inf] (no information at that level; the decision
    fail is right): the text said "100% interval [nan, nan]"."""
    argv = ["interval", "--method", "cluster_t", "--table", "10,2,1,3", "--table", "5,1,0,4", "--alpha", "1e-20"]
    assert main(argv + ["--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["bounds_text"] == ["-inf", "inf"] and p["lower"] is None and p["status"] == "fail"
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "1 - 2e-20 interval [-inf, inf]" in out and "nan" not in out


def test_certify_names_a_discordance_range_below_the_margin_before_any_estimate(capsys):
    """--discordance 0,0 was blamed on --margin, after the estimate line."""
    for cmd in (["certify", "--method", "cluster_t"], ["calibrate", "--method", "dm_score"]):
        err = _error(cmd + ["--clusters", "30", "--margin", "0.03", "--discordance", "0,0"], capsys)
        assert err["field"] == "--discordance" and "lies below the margin 0.03" in err["message"]
        assert "estimated" not in capsys.readouterr().err


def test_an_output_folder_that_cannot_be_created_is_refused_before_the_work(tmp_path, capsys):
    """certify --out /proc/x ran the certification, then failed with errno text; --out '' wrote
    into the records folder."""
    err = _error(["certify", "--method", "cluster_t", "--clusters", "30", "--margin", "0.03", "--out",
                  "/proc/simlab-no-such-folder"], capsys)
    assert err["field"] == "--out" and "cannot create a folder in /proc" in err["message"]
    assert "certifying" not in capsys.readouterr().err
    err = _error(["certify", "--method", "cluster_t", "--clusters", "30", "--margin", "0.03", "--out", ""], capsys)
    assert err["field"] == "--out" and "an empty path" in err["message"]


def test_a_look_that_spends_no_alpha_has_an_infinite_boundary_not_nan(capsys):
    argv = ["sequential", "boundaries", "--spending", "obf", "--information", "0.000001,1"]
    assert main(argv + ["--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["no_stop_looks"] == [1] and p["z"][1] > 1.9
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "inf (spends nothing)" in out and "nan" not in out


def test_sequential_analyze_says_when_there_is_no_bound_and_no_data(capsys):
    empty = ["--table", "0,0,0,0"] * 3
    assert main(["sequential", "analyze", "--method", "alpha_spending", *empty, "--looks", "1,2,3"]) == 0
    out = capsys.readouterr().out
    assert "bound none (too few clusters)" in out and "nan" not in out
    assert "every --table is empty (no trials)" in out


def test_a_label_noise_certificate_is_estimated_and_refused_beyond_max_seconds(tmp_path, capsys):
    """certify / calibrate over a judge's label noise had no estimate: --max-seconds 5 ran 51 s."""
    noise = ["--clusters", "30", "--margin", "0.03", "--sensitivity", "0.8,0.9", "--specificity", "0.8,0.9",
             "--calibration-items", "50", "--max-seconds", "0.5", "--out", str(tmp_path)]
    for cmd in (["certify", "--method", "judge_corrected"], ["calibrate", "--method", "judge_corrected"]):
        err = _error(cmd + noise, capsys)
        assert err["field"] == "--max-seconds" and "over the judge's label noise would take an estimated" \
            in err["message"]
    assert not list(tmp_path.iterdir())


def test_judge_study_and_demo_do_not_replace_a_users_files(tmp_path, capsys):
    """judge-study --out-dir and demo --out replaced a user's files of their output names."""
    from studies import JudgeStudySpec, judge_study_paths

    nc, _ = judge_study_paths(JudgeStudySpec(calibration_items=(50,), replications=100), tmp_path / "j")
    nc.parent.mkdir()
    nc.write_text("user data\n")
    err = _error(["judge-study", "--reps", "100", "--items", "50", "--out-dir", str(tmp_path / "j")], capsys)
    assert err["field"] == "--out-dir" and "is not a dataset simlab wrote" in err["message"]
    for name in ("demo.nc", "demo.png", "power_k.png"):
        d = tmp_path / name.replace(".", "_")
        d.mkdir()
        (d / name).write_text("user data\n")
        err = _error(["demo", "--reps", "100", "--out", str(d)], capsys)
        assert err["field"] == "--out" and name in err["message"] and "refusing to overwrite" in err["message"]
        assert (d / name).read_text() == "user data\n"


def test_size_names_the_flag_whose_value_makes_the_alternative_impossible(capsys):
    """--true-difference 0.5 at the default baseline 0.9 was blamed on --baseline."""
    err = _error(["size", "--method", "cluster_t", "--margin", "0.03", "--true-difference", "0.5"], capsys)
    assert err["field"] == "--true-difference" and "baseline + difference = 1.4" in err["message"]
    err = _error(["size", "--method", "cluster_t", "--margin", "0.03", "--true-difference", "0.05",
                  "--discordance", "0.9"], capsys)
    assert err["field"] == "--discordance"


@pytest.mark.parametrize("value", ["nan", "-1", "0", "abc", "inf"])
def test_a_bad_max_seconds_setting_is_refused_naming_the_variable(value, capsys, monkeypatch):
    monkeypatch.setenv("SIMLAB_MAX_SECONDS", value)     # nan disabled every limit
    err = _error(["simulate", "--reps", "100"], capsys)
    assert err["field"] == "SIMLAB_MAX_SECONDS" and "finite number of seconds > 0" in err["message"]


def test_a_records_setting_that_names_no_folder_is_refused(tmp_path, capsys, monkeypatch):
    """SIMLAB_RECORDS=/typo made every method "not covered"."""
    monkeypatch.setenv("SIMLAB_RECORDS", str(tmp_path / "typo"))
    err = _error(["records", "list"], capsys)
    assert err["field"] == "SIMLAB_RECORDS" and "no such folder" in err["message"]


def test_a_record_cut_short_is_named_not_read_as_no_record(tmp_path, capsys):
    import shutil
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "results" / "qualification"
    rec = tmp_path / "rec"
    rec.mkdir()
    for p in src.glob("agresti_min.*"):
        shutil.copy(p, rec / p.name)
    (stem,) = [p for p in rec.glob("agresti_min.*.json")]
    stem.write_text(stem.read_text()[:1000])
    err = _error(["records", "coverage", "--records", str(rec), "--method", "agresti_min", "--clusters", "20",
                  "--trials", "1", "--margin", "0.03", "--rho", "0.1"], capsys)
    assert err["field"] == "--records" and err["message"].startswith(f"{stem.name}: damaged (cut short")


def test_robustness_does_not_replace_another_kind_of_dataset_nor_its_own_report(tmp_path, capsys):
    """robustness --dataset replaced a study's results, and --report/--dataset on one path left
    the dataset where the report was."""
    study = tmp_path / "s.nc"
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\nmethods = ["cluster_t"]\nreplications = 100\nseed = 1\n'
                    '[scenario]\nclusters = 10\ntrials = 1\nbaseline = 0.9\ndiscordance = 0.1\ndifference = 0.0\n')
    assert main(["study", "run", str(spec), "--out", str(study), "--no-checkpoint", "--json"]) == 0
    capsys.readouterr()
    before = study.read_bytes()
    base = ["robustness", "--method", "cluster_t", "--clusters", "30", "--trials", "3", "--margin", "0.03",
            "--reps", "200"]
    err = _error(base + ["--dataset", str(study)], capsys)
    assert err["field"] == "--dataset" and "holds a study dataset, not a robustness one" in err["message"]
    assert study.read_bytes() == before
    same = tmp_path / "r.json"
    err = _error(base + ["--dataset", str(same), "--report", str(same)], capsys)
    assert err["field"] == "--dataset" and "is also --report" in err["message"] and not same.exists()


def test_small_wordings_of_round_5(tmp_path, capsys):
    """qualify names a method given twice before any estimate; keygen names the key file in the
    way (it named the folder); a --table cell is an int32 as the kernels hold it (it promised
    2^63, then failed with no flag)."""
    err = _error(["qualify", "--method", "cluster_t,cluster_t", "--policy", "reduced-small"], capsys)
    assert err["field"] == "--method" and "lists cluster_t more than once" in err["message"]
    assert main(["evidence", "keygen", "--out", str(tmp_path), "--name", "mine", "--json"]) == 0
    capsys.readouterr()
    err = _error(["evidence", "keygen", "--out", str(tmp_path), "--name", "mine"], capsys)
    assert f"{tmp_path / 'mine.key'} already exists" in err["message"]
    err = _error(["interval", "--method", "paired_wald", "--table", f"{2 ** 31},0,0,0"], capsys)
    assert err["field"] == "--table" and "[0, 2^31)" in err["message"]


def test_a_study_and_a_sequential_dataset_are_told_apart_from_their_attrs(tmp_path, capsys):
    """study show of a sequential dataset (and back) was refused only after reading it: 3.5-5.8 s."""
    seq, st = tmp_path / "q.toml", tmp_path / "s.toml"
    scenario = '[scenario]\nclusters = 20\ntrials = 1\nbaseline = 0.9\ndiscordance = 0.1\ndifference = 0.0\n'
    seq.write_text('name = "q"\nmethods = ["alpha_spending"]\nlooks = [10, 20]\nreplications = 50\nseed = 1\n'
                   + scenario)
    st.write_text('name = "s"\nmethods = ["cluster_t"]\nreplications = 50\nseed = 1\n' + scenario)
    assert main(["sequential", "run", str(seq), "--out", str(tmp_path / "q.nc"), "--json"]) == 0
    assert main(["study", "run", str(st), "--out", str(tmp_path / "s.nc"), "--no-checkpoint", "--json"]) == 0
    capsys.readouterr()
    err = _error(["study", "show", str(tmp_path / "q.nc")], capsys)
    assert err["field"] == "file" and "a sequential study's; show it with `simlab sequential show`" in err["message"]
    err = _error(["sequential", "show", str(tmp_path / "s.nc")], capsys)
    assert err["field"] == "path" and "not a sequential study dataset (a study dataset" in err["message"]


def test_judge_study_shared_names_the_judge_whose_arms_differ_in_plain_words(capsys):
    """``judge-study --shared`` failed on the default judges with pydantic's own text ("1
    validation error for LabelNoise Value error, ...")."""
    err = _error(["judge-study", "--shared", "--judge", "odd=0.9,0.8,0.7,0.8"], capsys)
    assert err["field"] == "--shared"
    assert err["message"] == ("--shared: judge odd's error differs between the arms (sensitivity 0.9 vs 0.7, "
                              "specificity 0.8 vs 0.8); one calibration set serves both arms only when it is the same")


def test_judge_study_shared_on_the_default_judges_keeps_those_that_can_share():
    from studies import JudgeStudySpec

    assert [j.name for j in JudgeStudySpec(shared_calibration=True).judges] == ["equal"]
    assert [j.name for j in JudgeStudySpec().judges] == ["equal", "lenient_candidate"]
