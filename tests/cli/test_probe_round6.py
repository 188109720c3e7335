"""Probe round 6 (issue 29): each finding closed with the reason asserted (message and field)."""
from __future__ import annotations

import datetime as dt
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.cli import build_parser, main

NOW = "2026-12-01T12:00:00Z"


def _error(argv, capsys) -> dict:
    assert main(argv + ["--json"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return json.loads(out)["error"]


# ---------------------------------------------------------------- 1. recommend's `simlab size` suggestion


SCENARIO = dict(margin=0.03, difference=-0.0125, power=0.9, alpha=0.0125, trials=3, baseline=0.85,
                discordance=0.123456789, rho=0.07, rho_max=0.1, seed=7)


def _parsed(command: str):
    words = shlex.split(command)
    assert words[:2] == ["simlab", "size"]
    return build_parser().parse_args(words[1:])


def test_the_suggested_size_command_parses_and_carries_the_recommendations_scenario():
    """It said `simlab size --method M --margin 0.03 --trials 3 --rho-max 0.1`: exit 2 for the
    missing --true-difference, and size's defaults (rho 0, baseline 0.9 ...) in place of the
    alternative the recommendation priced."""
    from simlab.cli.size import run_size
    from studies.recommend import size_command

    args = _parsed(size_command("betting_ci_horizon", **SCENARIO))
    assert args.func is run_size and args.method == "betting_ci_horizon"
    assert (args.margin, args.true_difference, args.power, args.alpha, args.trials_per_cluster, args.baseline,
            args.discordance, args.rho, args.rho_max, args.seed) == \
        (0.03, -0.0125, 0.9, 0.0125, 3, 0.85, 0.123456789, 0.07, 0.1, 7)   # every value exactly, not to 6 digits


def test_recommend_names_a_runnable_size_command_for_a_skipped_sizing(tmp_path):
    from studies.recommend import recommend

    p = recommend(clusters=100, trials=3, margin=0.03, rho_max=0.1, methods=["betting_ci"], calibrate=(),
                  certify_missing=False, max_seconds=0.5, certify_dir=tmp_path)
    skipped = [s for s in p["skipped"] if s["what"] == "sizing"]
    assert skipped, p["skipped"]
    s = skipped[0]
    assert s["why"].endswith(f"run: {s['command']}")
    args = _parsed(s["command"])
    a = p["alternative"]
    assert (args.true_difference, args.baseline, args.discordance, args.rho, args.power) == \
        (a["difference"], a["baseline"], a["discordance"], a["rho"], a["target_power"]) == (0.0, 0.9, 0.1, 0.1, 0.8)
    assert (args.margin, args.trials_per_cluster, args.rho_max, args.alpha) == (0.03, 3, 0.1, 0.025)


# ---------------------------------------------------------------- 2. log options with trial files


from tests.cli.test_evidence_probe3 import _write_inputs   # manifest, population and trial files of both arms


@pytest.fixture
def inputs(tmp_path):
    _write_inputs(tmp_path)
    return tmp_path


def _compare(folder: Path, *extra) -> list[str]:
    return ["compare", str(folder / "baseline.jsonl"), str(folder / "candidate.jsonl"), "--manifest",
            str(folder / "m.json"), "--population", str(folder / "cases.jsonl"), "--now", NOW,
            "--out", str(folder / "p.json"), *extra]


def _run(folder: Path, *extra) -> list[str]:
    return ["evidence", "run", "--trials", str(folder / "both.jsonl"), "--manifest", str(folder / "m.json"),
            "--population", str(folder / "cases.jsonl"), "--now", NOW, "--out", str(folder / "p.json"), *extra]


@pytest.mark.parametrize("option, flag, applies", [
    (["--judge-scored"], "--judge-scored", "applies to Inspect logs, not to trial files"),
    (["--score", "nosuch"], "--score", "applies to Inspect / lm-eval logs, not to trial files"),
    (["--cluster-field", "customer"], "--cluster-field", "applies to Inspect / lm-eval logs, not to trial files"),
    (["--filter", "strict"], "--filter", "applies to lm-eval logs, not to trial files"),
])
def test_log_options_with_trial_files_are_refused_not_ignored(inputs, option, flag, applies, capsys):
    """They were accepted and ignored: --judge-scored dropped silently gave an unlabelled run."""
    for argv in (_compare(inputs, *option), _compare(inputs, "--format", "trials", *option), _run(inputs, *option)):
        err = _error(argv, capsys)
        assert err["field"] == flag and applies in err["message"], err
        assert "(--trials / --format trials)" in err["message"]
        assert not (inputs / "p.json").exists()
    # without the option the same inputs run (the refusal is the option's, not the inputs')
    assert main(_compare(inputs, "--json")) in (0, 1)   # a decision, not an input error
    assert "verdict" in json.loads(capsys.readouterr().out)


def test_filter_with_inspect_logs_is_refused_too(capsys):
    from simlab.cli._evidence_run import check_log_options
    from simlab.cli._output import UsageError

    args = build_parser().parse_args(["compare", "a.eval", "b.eval", "--manifest", "m.json", "--filter", "x"])
    with pytest.raises(UsageError) as exc:
        check_log_options("inspect", args)
    assert exc.value.field == "--filter" and "applies to lm-eval logs, not to Inspect logs" in str(exc.value)
    check_log_options("lm-eval", args)  # where it applies


# ---------------------------------------------------------------- 3. an inconclusive interval


def test_an_interval_without_bounds_says_none_and_why_not_nan(capsys):
    argv = ["interval", "--method", "clustered_normal", "--table", "5,0,0,5", "--table", "5,0,0,5"]
    assert main(argv + ["--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["status"] == "inconclusive" and p["lower"] is None and p["upper"] is None   # numbers as before
    assert p["bounds_text"] == ["none", "none"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "nan" not in out
    assert "95% interval (one-sided alpha 0.025): none (inconclusive: 2 non-empty clusters, fewer than 30" in out


# ---------------------------------------------------------------- 4. --qualification-dir


@pytest.mark.parametrize("argv", [
    ["evidence", "run", "--trials", "t.jsonl", "--manifest", "m.json", "--out", "p.json"],
    ["compare", "a.jsonl", "b.jsonl", "--manifest", "m.json"],
    ["evidence", "replay", "p.json"],
    ["evidence", "resolve", "r.json", "--replay"],
])
def test_a_missing_qualification_dir_is_an_input_error(argv, tmp_path, capsys):
    """It was read as a folder without records: the run went on, the receipt said "record not found"."""
    err = _error(argv + ["--qualification-dir", str(tmp_path / "nonexist")], capsys)
    assert err["field"] == "--qualification-dir" and "nonexist: no such directory" in err["message"]
    (tmp_path / "file").write_text("x")
    err = _error(argv + ["--qualification-dir", str(tmp_path / "file")], capsys)
    assert err["field"] == "--qualification-dir" and "file: is not a directory" in err["message"]


def test_resolve_without_replay_refuses_a_qualification_dir_it_would_not_read(tmp_path, capsys):
    err = _error(["evidence", "resolve", "r.json", "--qualification-dir", str(tmp_path)], capsys)
    assert err["field"] == "--qualification-dir" and "add --replay" in err["message"]


# ---------------------------------------------------------------- 5. recommend's reference table


def test_the_reference_tables_why_is_wrapped_between_words(capsys):
    from simlab.cli.recommend import _print_reference

    why = ("exceeds at the nearest grid cell (K=100, rho=0.1: false-pass upper bound 0.0893); calibrate it for this "
           "design: simlab calibrate --method paired_wald --clusters 100 --trials 3 --margin 0.03 --rho-max 0.1 "
           "--alpha 0.025")
    _print_reference([{"method": "paired_wald", "power": {"value": 0.3967}, "coverage": why}])
    out = capsys.readouterr().out
    cells = [line.split("│")[3].strip() for line in out.splitlines() if line.count("│") == 4]
    assert " ".join(c for c in cells if c and c != "why") == why    # every word, none cut ("calibrat")
    assert len(cells) > 2


# ---------------------------------------------------------------- 6. unknown and ambiguous flags


@pytest.mark.parametrize("argv, field, words", [
    (["interval", "--method", "clustered_normal", "--table", "5,0,0,5", "--bogus", "1"], "--bogus",
     "unrecognized arguments: --bogus 1"),
    (["interval", "--method", "clustered_normal", "--table", "5,0,0,5", "--bogus=1"], "--bogus",
     "unrecognized arguments: --bogus=1"),
    (["size", "--tr", "1"], "--tr", "ambiguous option: --tr could match"),
    (["recommend", "--tr=1"], "--tr", "ambiguous option: --tr=1 could match"),
    (["--json", "methods"], "--json", "give it after the command"),
])
def test_unknown_and_ambiguous_flags_name_the_flag(argv, field, words, capsys):
    """The field was null."""
    assert main(argv if "--json" in argv else argv + ["--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["field"] == field and words in err["message"], err


def test_an_unknown_flag_is_named_in_the_text_line_too(capsys):
    assert main(["methods", "--bogus"]) == 2
    assert capsys.readouterr().err == "error: simlab: unrecognized arguments: --bogus\n"


# ---------------------------------------------------------------- 7. records coverage --certificate junk


PROBE = """
import contextlib, io, json, sys
from simlab.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "out": out.getvalue(), "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                  ("scipy", "numba", "xarray", "numpy", "pydantic") or m.startswith("methods.qualification"))}))
"""


@pytest.mark.parametrize("content, words", [
    ("junk\n", "not valid JSON"),
    ("[1]", "not a JSON object"),
    ('{"a": 1}', "not a certificate (no certificate_sha256)"),
    ('{"record_sha256": "x"}', "a qualification record, not a certificate"),
])
def test_a_file_that_is_not_a_certificate_is_refused_before_the_qualification_layer(tmp_path, content, words):
    """It took 2.6 s: pydantic, numpy, scipy.stats and numba were loaded to read a junk file."""
    junk = tmp_path / "junk.json"
    junk.write_text(content)
    done = subprocess.run([sys.executable, "-c", PROBE, "records", "coverage", "--method", "cluster_t", "--clusters",
                           "30", "--margin", "0.03", "--certificate", str(junk), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    err = json.loads(report["out"])["error"]
    assert report["rc"] == 2 and err["field"] == "--certificate" and words in err["message"], err
    assert not report["modules"], report["modules"]


def test_qualify_show_names_a_records_dataset_as_what_it_is(tmp_path, capsys):
    """``qualify show`` of a record's .nc said "not valid JSON ('utf-8' codec can't decode byte 0x89 ...)"."""
    from pathlib import Path

    nc = sorted(Path(__file__).resolve().parents[2].joinpath("results", "qualification").glob("*.nc"))[0]
    assert main(["qualify", "show", str(nc), "--png", str(tmp_path / "m.png"), "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["field"] == "record"
    assert err["message"] == (f"{nc}: not a qualification record: a netCDF dataset (a record's scenario data is its "
                              ".nc; give the record's .json)")
    assert not (tmp_path / "m.png").exists()


@pytest.mark.parametrize("argv, message", [
    (["certify", "--method", "cluster_t", "--looks", "5"], "--looks 5: method 'cluster_t' is fixed-sample: it takes "
                                                           "no looks"),
    (["calibrate", "--method", "likelihood_ratio"], "--looks: method 'likelihood_ratio' is sequential: give its "
                                                    "number of looks"),
])
def test_looks_that_do_not_fit_the_methods_kind_are_named_before_the_studies_load(argv, message, capsys, tmp_path):
    """``certify --looks 5`` of a fixed-sample method took 1.3 s and named --method."""
    err = _error(argv + ["--clusters", "30", "--trials", "3", "--margin", "0.03", "--rho-max", "0.1", "--out",
                         str(tmp_path)], capsys)
    assert err == {"message": message, "field": "--looks"}


def test_sequential_inputs_that_the_catalogue_can_check_answer_before_the_engines_load(capsys):
    """``sequential simulate --alternative 2`` (2.4 s) and ``sequential run`` of a fixed-sample
    spec (1.4 s, "schedule: Field required; target_mcse: Extra inputs ...") were refused only
    where the method or the spec parser loaded."""
    err = _error(["sequential", "simulate", "--alternative", "2"], capsys)
    assert err == {"field": "--alternative", "message": "--alternative 2 must lie in (0, --margin = 0.03): "
                   "likelihood_ratio's alternative loss rate, below the margin it tests"}
    spec = Path(__file__).resolve().parents[2] / "studies" / "specs" / "cluster_valid.toml"
    err = _error(["sequential", "run", str(spec)], capsys)
    assert err["field"] == "spec" and err["message"].startswith(f"{spec}: a fixed-sample study spec (it has no "
                                                                "looks): run it with simlab study run")


def test_study_show_and_plot_check_the_level_from_the_coordinates_before_reading(tmp_path, capsys):
    """``study show --margin 0.07`` read the whole dataset (2 s) before saying the margin was not in it."""
    from studies.engine.runner import run_study
    from studies.engine.spec import parse_spec
    from studies import save_dataset, stored_values

    spec = {"name": "levels", "methods": ["clustered_normal"], "margins": [0.03, 0.05],
            "scenario": {"clusters": 10, "trials": 2, "rho": 0.1, "baseline": 0.9, "discordance": 0.1,
                         "difference": -0.03}, "replications": 200, "seed": 3}
    path = tmp_path / "s.nc"
    save_dataset(run_study(parse_spec(spec)), path)
    assert stored_values(path, "margin") == [0.03, 0.05] and stored_values(path, "nothing") is None
    err = _error(["study", "show", str(path), "--margin", "0.07"], capsys)
    assert err == {"field": "--margin", "message": f"--margin 0.07: not in {path} (it holds margin 0.03, 0.05)"}
    err = _error(["study", "plot", str(path), "--alpha", "0.3", "--out", str(tmp_path / "p.png")], capsys)
    assert err == {"field": "--alpha", "message": f"--alpha 0.3: not in {path} (it holds alpha 0.025)"}
    assert main(["study", "show", str(path), "--margin", "0.05", "--json"]) == 0
    assert {r["margin"] for r in json.loads(capsys.readouterr().out)["rows"]} == {0.05}
