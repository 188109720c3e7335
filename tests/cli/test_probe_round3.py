"""Probe findings of issue 29.4, a third round (front door): an option that takes one value
refuses a second, a power target at or below alpha is refused before any work, and an empty ``--table`` cluster is said to be left out.  Same contract as
``test_error_contract.py``: exit 2, one JSON object under --json naming the flag."""
from __future__ import annotations

import json

import pytest

from simlab.cli import main

TABLES = ["--table", "10,2,1,7", "--table", "8,1,2,9"]

CASES = [
    # the last value won silently: a 60% interval, another method, another margin
    (["interval", "--method", "cluster_t", *TABLES, "--alpha", "0.025", "--alpha", "0.2"], "--alpha", "more than once"),
    (["interval", "--method", "clustered_normal", "--method", "cluster_t", *TABLES], "--method", "more than once"),
    (["interval", "--method", "cluster_t", *TABLES, "--margin", "0.03", "--margin=0.05"], "--margin", "more than once"),
    (["simulate", "--cells", "0.9,0.05,0.05,0", "--cells", "0.8,0.1,0.1,0"], "--cells", "more than once"),
    (["evidence", "run", "--manifest", "a.json", "--manifest", "b.json", "--trials", "t.jsonl"], "--manifest",
     "more than once"),
    # a power target a level-alpha test meets with no data (1e-320 then searched past --max-seconds)
    (["size", "--method", "cluster_t", "--margin", "0.05", "--true-difference", "0", "--power", "1e-320"], "--power",
     "must exceed --alpha"),
    (["recommend", "--clusters", "100", "--trials", "3", "--margin", "0.03", "--rho-max", "0.1", "--power",
      "0.025"], "--power", "must exceed --alpha"),
    # refused after the estimate, naming `target`
    (["calibrate", "--method", "clustered_score", "--clusters", "30", "--margin", "0.05", "--target", "-1"],
     "--target", "must lie in (0, --alpha]"),
]


@pytest.mark.parametrize("argv, field, words", CASES, ids=[" ".join(c[0][:2]) + " " + c[1] for c in CASES])
def test_refused_naming_the_flag(argv, field, words, capsys):
    assert main([*argv, "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["error"]["field"] == field and words in payload["error"]["message"], payload


def test_a_repeatable_option_still_repeats_and_a_single_one_is_taken(capsys):
    assert main(["interval", "--method", "cluster_t", *TABLES, "--option", "min_clusters=2", "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["clusters"] == 2 and one["alpha"] == 0.025


def test_an_empty_table_is_said_to_be_left_out(capsys):
    assert main(["interval", "--method", "cluster_t", "--table", "0,0,0,0", "--table", "8,1,2,9"]) == 0
    out = capsys.readouterr().out
    assert "1 cluster," in out and "1 of the 2 --table clusters have no trials" in out
    assert main(["interval", "--method", "cluster_t", "--table", "0,0,0,0", "--table", "8,1,2,9", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["empty_clusters"] == 1 and payload["tables_given"] == 2 and payload["clusters"] == 1
