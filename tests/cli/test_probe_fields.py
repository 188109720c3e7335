"""Probe findings of issue 29.4 (a second round): each input is refused before any work, exit
2, naming the flag the user typed -- not a model's field, not a positional of another command
-- or is now accepted where the help said it would be.  Same contract as
``test_error_contract.py`` (one JSON object under --json, one line on stderr without)."""
from __future__ import annotations

import json

import pytest

from simlab.cli import main

DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_TOML = "a = " + "[" * 50_000 + "]" * 50_000 + "\n"

CASES = [
    # an option's range is checked where the method prepares: it was reported as --method
    (["interval", "--method", "cluster_t", "--table", "10,2,1,3", "--table", "8,1,2,4", "--option",
      "min_clusters=-5"], "--option", "option min_clusters of 'cluster_t' must be a whole number >= 0"),
    (["interval", "--method", "cluster_bootstrap", "--table", "10,2,1,3", "--option", "resamples=2.5"], "--option",
     "option resamples of 'cluster_bootstrap' must be a whole number"),   # from the catalogue's declared range
    (["interval", "--method", "cluster_t", "--table", "10,2,1,3", "--option", "min_clusters="], "--option",
     "must be key=value"),
    (["sequential", "analyze", "--method", "alpha_spending", "--option", "spending=bogus", "--table", "10,2,1,3"],
     "--option", "must be one of hsd, obf, pocock"),
    # options the method's own code took whatever their value (a third round): declared ranges,
    # checked from the catalogue before anything runs
    (["sequential", "analyze", "--method", "alpha_spending", "--option", "min_clusters=-1", "--table", "10,2,1,3"],
     "--option", "option min_clusters of 'alpha_spending' must be a whole number >= 0"),
    (["sequential", "analyze", "--method", "msprt", "--option", "min_clusters=-1", "--table", "10,2,1,3"],
     "--option", "option min_clusters of 'msprt' must be a whole number >= 0"),
    # refused by the time it would take, not by its range (round 5)
    (["interval", "--method", "cluster_bootstrap", "--option", "resamples=1e30", "--table", "10,2,1,3"],
     "--option", "option resamples of 'cluster_bootstrap' must be a whole number in [1, 1e+07]"),
    # tau^2 overflowed and the bound was NaN (a probe of round 4)
    (["sequential", "analyze", "--method", "msprt", "--option", "tau=1e308", "--table", "10,2,1,3"],
     "--option", "option tau of 'msprt' must be a number in [0, 100]"),
    # a count of clusters is a whole number (2.5 acted as 3): declared for every method with the option
    (["interval", "--method", "clustered_normal", "--table", "10,2,1,3", "--option", "min_clusters=2.5"], "--option",
     "option min_clusters of 'clustered_normal' must be a whole number >= 0"),
    (["interval", "--method", "obuchowski", "--table", "10,2,1,3", "--option", "min_clusters=1.5"], "--option",
     "option min_clusters of 'obuchowski' must be a whole number >= 0"),
    (["sequential", "analyze", "--method", "alpha_spending", "--option", "spending=hsd", "--option", "gamma=-1000",
      "--table", "10,2,1,3"], "--option", "must be a number in [-40, 40]"),  # it said "math range error"
    (["sequential", "analyze", "--method", "betting_cs", "--option", "all_bounds=0.5", "--table", "10,2,1,3"],
     "--option", "must be a whole number in [0, 1]"),
    (["sequential", "boundaries", "--spending", "hsd", "--gamma", "1000", "--information", "0.5,1"], "--gamma",
     "must lie in [-40, 40]"),  # its boundary was NaN
    (["sequential", "analyze", "--method", "repeated_fixed", "--inner", "judge_corrected", "--table", "10,2,1,3"],
     "--inner", "calibration counts"),
    # a model's field filled by the command's own flag names the flag (it named "cells.2", "rho")
    (["false-pass", "--method", "cluster_t", "--cells", "0.9,0.1,nan,0"], "--cells", "--cells (cells.2)"),
    (["false-pass", "--method", "cluster_t", "--rho", "1"], "--rho", "argument --rho: must be in [0, 1)"),
    (["simulate", "--cells", "0.9,0.04,0.03,0.03,0.0"], "--cells", "--cells"),
    # compare's positional "baseline" made false-pass's --baseline a bare "baseline"
    (["false-pass", "--method", "cluster_t", "--baseline", "1.2", "--difference", "-0.03", "--discordance", "0.1"],
     "--baseline", "argument --baseline: must be in [0, 1]"),
    (["judge-study", "--items", "0", "--out-dir", "{dir}/j"], "--items", "calibration_items[0]"),
    (["judge-study", "--judge", "x=0.9,0.85,0.9,1.5", "--out-dir", "{dir}/j"], "--judge", "candidate_specificity"),
    (["judge-study", "--differences", "0.5", "--out-dir", "{dir}/j"], "--differences", "cannot exceed"),
    (["judge-study", "--shared", "--judge", "lenient=0.9,0.85,0.95,0.7", "--out-dir", "{dir}/j"], "--shared",
     "one calibration set serves both arms"),
    (["judge-study", "--clusters", "1000000", "--out-dir", "{dir}/j"], "--clusters", "in [2, 100,000]"),
    (["judge-study", "--out-dir", "{file}"], "--out-dir", "is not a directory"),  # was found after the work
    (["robustness", "--method", "cluster_t", "--clusters", "100", "--trials", "20000", "--margin", "0.05"],
     "--trials", "in [1, 10,000]"),
    (["study", "run", "{spec_nan}"], "spec", "replications: Input should be a finite number"),
    (["simulate", "--max-memory", "1e400"], "--max-memory", "finite size"),  # int(inf) was a raw error
    # refused after seconds of work before
    (["size", "--method", "alpha_spending", "--margin", "0.05", "--true-difference", "0", "--out", ""], "--looks",
     "is sequential: give --looks"),
    (["size", "--method", "alpha_spending", "--margin", "0.05", "--true-difference", "0", "--looks", "100000",
      "--out", ""], "--looks", "in [1, 10,000]"),
    (["sequential", "exact", "--loss", "0.01", "--win", "-0.1"], "--win", "in [0, 1)"),
    (["sequential", "exact", "--loss", "0.01", "--win", "1.5"], "--win", "in [0, 1)"),
    (["sequential", "simulate", "--candidate-sensitivity", "1.5"], "--candidate-sensitivity", "in [0, 1]"),
    (["sequential", "simulate", "--loss-rate", "1"], "--loss-rate", "in [0, 1)"),
    # silently the default, or duplicate rows
    (["sequential", "exact", "--methods", "", "--loss", "0.01"], "--methods", "lists no method"),
    (["sequential", "exact", "--methods", "repeated_fixed,repeated_fixed", "--loss", "0.01"], "--methods",
     "more than once"),
    (["sequential", "exact", "--loss", "0.01,0.01"], "--loss", "twice"),
    # a missing or wrong records directory was read as no records (exit 0)
    (["recommend", "--clusters", "30", "--trials", "3", "--margin", "0.05", "--rho-max", "0.1", "--directory",
      "{dir}/nowhere"], "--directory", "no such directory"),
    (["recommend", "--clusters", "30", "--trials", "3", "--margin", "0.05", "--rho-max", "0.1", "--directory",
      "{file}"], "--directory", "no such directory"),
    # nested thousands deep: a RecursionError traceback
    (["study", "run", "{deep_json}"], "spec", "nested too deeply"),
    (["study", "run", "{deep_toml}"], "spec", "nested too deeply"),
    (["sequential", "run", "{deep_json}"], "spec", "nested too deeply"),
    (["qualify", "--method", "cluster_t", "--policy", "{deep_json}", "--out", "{dir}/q"], "--policy",
     "nested too deeply"),
    (["qualify", "show", "{deep_json}"], "record", "nested too deeply"),
]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "deep.json").write_text(DEEP_JSON)
    (tmp_path / "deep.toml").write_text(DEEP_TOML)
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "nan.toml").write_text('name = "n"\nmethods = ["paired_wald"]\nreplications = nan\nseed = 1\n'
                                       '[scenario]\nclusters = 10\ntrials = 1\nbaseline = 0.9\ndiscordance = 0.1\n'
                                       'difference = -0.03\n')
    return {"dir": str(tmp_path), "file": str(tmp_path / "a_file"), "deep_json": str(tmp_path / "deep.json"),
            "deep_toml": str(tmp_path / "deep.toml"), "spec_nan": str(tmp_path / "nan.toml")}


@pytest.mark.parametrize("argv, field, words", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_refused_naming_the_flag(argv, field, words, files, capsys):
    argv = [a.format(**files) for a in argv]
    rc = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    payload = json.loads(out.strip())
    assert set(payload) == {"error"}
    message = payload["error"]["message"]
    assert payload["error"]["field"] == field, payload
    assert words in message and "\n" not in message and "Traceback" not in message, message
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, err


def test_a_named_choice_is_an_option_value_as_the_help_says(capsys):
    # `sequential analyze --help` says "e.g. spending=pocock", which was refused as not a number
    table = ["--table", "10,2,1,3", "--table", "8,1,2,4"]
    assert main(["sequential", "analyze", "--method", "alpha_spending", "--option", "spending=pocock", *table,
                 "--json"]) == 0
    by_name = json.loads(capsys.readouterr().out)
    assert main(["sequential", "analyze", "--method", "alpha_spending", "--option", "spending=1", *table,
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_name  # pocock is choice 1


def test_the_interrupt_line_names_what_is_kept_only_where_something_is(capsys):
    import argparse

    from simlab.cli._output import report_interrupt

    stop = KeyboardInterrupt()
    report_interrupt(stop, False, argparse.Namespace(reps=10))
    plain = capsys.readouterr().err
    assert plain.startswith("interrupted: stopped by") and "checkpoint" not in plain and "kept" not in plain
    report_interrupt(stop, False, argparse.Namespace(checkpoint="ck"))
    assert "finished in --checkpoint are kept" in capsys.readouterr().err
    report_interrupt(stop, False, argparse.Namespace(work_dir=None, no_checkpoint=False))
    assert "work directory are kept" in capsys.readouterr().err


def test_one_cluster_is_said_in_the_singular(capsys):
    assert main(["interval", "--method", "paired_wald", "--table", "1,0,0,0"]) == 0
    assert ", 1 cluster, 1 trial\n" in capsys.readouterr().out
