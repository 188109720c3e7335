"""One error contract for every subcommand (issue 14.1-14.3): malformed input or refused
work exits 2 with a one-line message naming the field; under ``--json`` stdout holds exactly
``{"error": {"message": ..., "field": ...}}``; never a traceback, never a URL."""
from __future__ import annotations

import json

import pytest

from simlab.cli import main

STUDY_SPEC = """
name = "huge"
methods = ["paired_wald"]
replications = 1000
seed = 1
[scenario]
clusters = 10
trials = 1
baseline = 0.9
discordance = 0.1
difference = -0.03
[grid]
clusters = {clusters}
difference = {differences}
rho = {rhos}
"""


@pytest.fixture
def files(tmp_path):
    text = tmp_path / "not_netcdf.nc"
    text.write_text("hello")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    huge = tmp_path / "huge.toml"  # 100 x 100 x 1000 = 10^7 grid points
    huge.write_text(STUDY_SPEC.format(clusters=list(range(10, 110)),
                                      differences=[round(-0.05 + 0.0005 * i, 6) for i in range(100)],
                                      rhos=[round(0.0009 * i, 6) for i in range(1000)]))
    small = tmp_path / "small.toml"
    small.write_text(STUDY_SPEC.format(clusters=[10], differences=[-0.03], rhos=[0.0]))
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"schema_version": 2, "method": "paired_wald", "record_sha256": "0" * 64}))
    empty = tmp_path / "empty.nc"
    empty.write_bytes(b"")
    from simlab import signing

    signed = tmp_path / "signed.json"
    signed.write_text('{"a": 1}')
    (tmp_path / "signed.json.sig").write_bytes(bytes(range(256)))  # garbage where the signature belongs
    _, public = signing.save_keypair(signing.generate_key(), tmp_path / "keys", "k")
    for sig_name, sig_text in MALFORMED_SIGNATURES.items():  # JSON, but not a signature envelope
        (tmp_path / f"{sig_name}.sig").write_text(sig_text)
    precious = tmp_path / "precious.txt"
    precious.write_text("a user's file")
    return {"text": str(text), "dir": str(tmp_path), "under_file": str(blocker / "out.nc"),
            "huge": str(huge), "small": str(small), "record": str(record), "empty": str(empty),
            "signed": str(signed), "pub": str(public)}


# JSON that is not a signature envelope: each is unreadable input (exit 2 naming the field), not a
# signature that failed to verify (exit 1), and never a traceback
MALFORMED_SIGNATURES = {
    "list": "[]", "number": "42", "no_kind": '{"subject_sha256": "x", "signature": {}}',
    "other_kind": '{"kind": "other", "subject_sha256": "x", "signature": {}}',
    "no_subject": '{"kind": "simlab.evidence.attestation", "signature": {}}',
    "signature_list": '{"kind": "simlab.evidence.attestation", "subject_sha256": "x", "signature": [1, 2]}',
}
SIGNATURE_WORDS = {"list": "a JSON object, got list", "number": "a JSON object, got int", "no_kind": "field 'kind'",
                   "other_kind": "field 'kind'", "no_subject": "field 'subject_sha256'",
                   "signature_list": "field 'signature'"}

# (argv, field the error must name (None: any), words the message must contain)
CASES = [
    (["simulate", "--reps", "0"], "--reps", ">= 1"),
    (["simulate", "--reps", "x"], "--reps", "integer"),
    (["simulate", "--clusters", "0"], "--clusters", "in [1, 1,000,000]"),
    (["simulate", "--clusters", "2000000"], "--clusters", "in [1, 1,000,000]"),  # was the model's "clusters: ..."
    (["false-pass", "--method", "cluster_t", "--trials", "200000"], "--trials", "in [1, 100,000]"),
    (["simulate", "--rho", "1.5"], "--rho", "--rho: must be in [0, 1)"),  # checked as the flag, in its words
    (["simulate", "--cells", "0.5,0.5,0.5,0.5"], None, "cells"),
    (["simulate", "--baseline", "0.9"], "--difference", "go together"),
    (["simulate", "--cells", "0.9,0.05,0.03,0.02", "--baseline", "0.9", "--difference", "0", "--discordance", "0.1"],
     "--cells", "one way"),
    (["simulate", "--reps", "100000000"], "--max-memory", "GiB"),
    (["simulate", "--clusters", "1000000", "--reps", "1000"], "--max-memory", "GiB"),
    (["simulate", "--max-memory", "lots"], "--max-memory", "size"),
    (["simulate", "--clusters", "30", "--trials", "100000", "--reps", "1000000", "--max-seconds", "1"],
     "--max-seconds", "would take an estimated"),
    (["interval", "--method", "cluster_t", "--table", "-1,0,0,0"], "--table", "[0, 2^31)"),
    (["interval", "--method", "cluster_t", "--table", "99999999999999999999,0,0,0"], "--table", "[0, 2^31)"),
    (["interval", "--method", "cluster_t"], "--table", "at least one --table"),
    (["interval", "--method", "paired_wald", "--table", "5000000000000000000,0,0,0", "--table",
      "5000000000000000000,0,0,0"], "--table", "[0, 2^31)"),   # a cell as the kernels hold it (int32)
    (["interval", "--table", "1,0,0,0"], "--method", "required"),
    (["interval", "--method", "no_such", "--table", "1,0,0,0"], "--method", "unknown method"),
    (["interval", "--method", "cluster_t", "--table", "1,0,0,0", "--option", "bogus=1"], "--option",
     "no option(s) ['bogus']"),
    (["interval", "--method", "exact_discordant", "--table", "1000000000,300000000,300000000,300000000"],
     "--max-memory", "exact_discordant"),
    (["interval", "--method", "bayes_hierarchical", "--table", "1000000,50000,40000,10000"], "--max-memory",
     "bayes_hierarchical"),
    (["methods", "--bogus"], None, "unrecognized"),
    (["false-pass", "--method", "paired_wald", "--reps", "0"], "--reps", ">= 1"),
    (["false-pass", "--method", "paired_wald", "--exact-seconds", "-1"], "--exact-seconds", "> 0"),
    (["false-pass", "--method", "paired_wald", "--option", "x"], "--option", "key=value"),
    (["false-pass", "--method", "paired_wald", "--simulate", "--exact-seconds", "5"], "--exact-seconds", "--simulate"),
    (["demo", "--reps", "0"], "--reps", ">= 1"),
    (["demo", "--reps", "1e11"], "--reps", "at most 1,000,000"),  # it failed after two sections, naming "replications"
    (["demo", "--out", "{under_file}"], "--out", "not a directory"),
    (["study", "run", "{huge}"], "--max-memory", "10,000,000 grid points"),
    (["study", "run", "{small}", "--chunk-size", "0"], "--chunk-size", ">= 1"),
    (["study", "run", "{small}", "--n-jobs", "0"], "--n-jobs", "-1"),
    (["study", "run", "{small}", "--out", "{under_file}"], "--out", "not a directory"),
    (["study", "run", "{small}", "--no-checkpoint", "--restart"], "--restart", "--no-checkpoint"),
    (["study", "run", "{dir}/missing.toml"], None, "missing.toml"),
    (["study", "show", "{text}"], "file", "is a text file, not a netCDF dataset"),
    (["study", "show", "{dir}"], "file", "is a directory"),
    (["study", "show", "{record}"], "file", "qualification record (JSON), not a dataset"),
    (["study", "show", "{empty}"], "file", "empty file"),
    (["study", "plot", "{text}"], "file", "is a text file, not a netCDF dataset"),
    (["study", "run", "{small}", "--out", "{text}"], "--out", "refusing to overwrite"),
    (["false-pass", "--method", "paired_wald", "--simulate", "--reps", "1000", "--max-seconds", "1e-9"],
     "--max-seconds", "estimated"),
    (["sequential", "exact", "--looks", "10,20"], "--looks", "--loss"),
    (["sequential", "exact", "--alpha", "0.1"], "--alpha", "--loss"),
    (["sequential", "exact", "--methods", "bonferroni", "--inner", "paired_wald"], "--methods", "--loss"),
    (["sequential", "exact", "--loss", "0.03", "--looks", "1000000000"], "--max-memory", "GiB"),
    (["sequential", "exact", "--loss", "0.03", "--looks", "1:1000000000:1"], "--looks", "at most 10000"),
    (["sequential", "exact", "--loss", "0.03", "--looks", "200000"], "--max-seconds", "estimated"),
    (["sequential", "exact", "--loss", "abc"], "--loss", "probabilities"),
    (["sequential", "exact", "--loss", "0.03", "--methods", "msprt", "--inner", "paired_wald"], "--inner",
     "wrapping"),
    (["sequential", "exact", "--loss", "0.03", "--methods", "msprt", "--alternative", "0.01"], "--alternative",
     "likelihood_ratio"),
    (["sequential", "simulate", "--reps", "0"], "--reps", ">= 1"),
    (["sequential", "simulate", "--jobs", "0"], "--jobs", "-1"),
    (["sequential", "simulate", "--looks", "50:600:50"], "--looks", "--clusters"),
    (["sequential", "simulate", "--unit", "trials", "--looks", "10,20", "--clusters", "5", "--trials", "2"],
     "--looks", "--trials 2"),
    (["sequential", "run", "{dir}/missing.toml"], None, "missing.toml"),
    (["sequential", "run", "{small}", "--jobs", "0"], "--jobs", "-1"),
    (["sequential", "show", "{text}"], "path", "is a text file, not a netCDF dataset"),
    (["sequential", "simulate", "--reps", "100", "--no-exact", "--max-seconds", "1e-9"], "--max-seconds",
     "estimated"),
    (["sequential", "plot", "{text}", "--out", "{under_file}"], "--out", "not a directory"),
    (["sequential", "analyze", "--method", "likelihood_ratio", "--table", "-1,0,0,0"], "--table", "[0, 2^31)"),
    (["sequential", "boundaries", "--spending", "hsd", "--information", "0.5,x"], "--information", "fractions"),
    (["sequential", "boundaries", "--spending", "nope", "--information", "1"], "--spending", "invalid choice"),
    (["qualify"], "--method", "give --method"),
    (["qualify", "--method", "paired_wald", "--n-jobs", "0"], "--n-jobs", "-1"),
    (["qualify", "--method", "cluster_bootstrap", "--policy", "reduced-small", "--out", "{dir}/q",
      "--max-seconds", "1e-9"], "--max-seconds", "estimated"),
    (["qualify", "--max-seconds", "5", "show", "{text}"], "--max-seconds", "not to `qualify show`"),
    (["study", "run", "{small}", "--out", "{dir}/s.nc", "--max-seconds", "1e-9"], "--max-seconds", "estimated"),
    (["qualify", "--method", "paired_wald", "--policy", "no_such_policy"], None, "no_such_policy"),
    (["qualify", "show", "{dir}"], "record", "directory"),
    (["qualify", "--method", "paired_wald", "show", "{text}"], "--method", "not to `qualify show`"),
    (["qualify", "show", "{text}", "--png", "{under_file}"], "--png", "not a directory"),
    (["size", "--method", "paired_wald", "--margin", "0.1", "--true-difference", "0", "--discordance", "0"],
     "--discordance", "degenerate"),
    (["size", "--method", "paired_wald", "--margin", "0", "--true-difference", "0"], "--margin", "> 0"),
    (["recommend", "--clusters", "1", "--trials", "3", "--margin", "0.03", "--rho-max", "0.1"], "--clusters",
     "in [2, 1,000,000]"),
    (["recommend", "--clusters", "30", "--trials", "3", "--margin", "0.03", "--rho-max", "1.5"], "--rho-max",
     "[0, 1)"),
    (["recommend", "--clusters", "30", "--trials", "3", "--margin", "0.03", "--rho-max", "0.1", "--true-difference",
      "-0.05"], "--true-difference", "must exceed -margin"),
    (["size", "--method", "paired_wald", "--margin", "0.03", "--true-difference", "-0.05"], "--true-difference",
     "must exceed -margin"),
    (["size", "--method", "paired_wald", "--margin", "0.1", "--true-difference", "0", "--looks", "3"], "--looks",
     "sequential"),
    (["size", "--method", "paired_wald", "--margin", "0.1", "--true-difference", "0", "--power", "1"], "--power",
     "(0, 1)"),
    (["size", "--method", "cluster_t", "--margin", "0.03", "--true-difference", "0", "--alpha", "0.5"], "--alpha",
     "in (0, 0.25]"),
    (["recommend", "--clusters", "30", "--trials", "3", "--margin", "0.03", "--rho-max", "0.1", "--alpha", "0.5"],
     "--alpha", "in (0, 0.25]"),
    (["size", "--method", "cluster_t", "--margin", "0.03", "--true-difference", "0", "--rho-max", "1.5"], "--rho-max",
     "in [0, 1)"),  # it failed after 2 s of work, naming rho_max
    (["size", "--method", "cluster_t", "--margin", "0.03", "--true-difference", "0", "--rho", "0.2", "--rho-max",
      "0.1"], "--rho-max", "must be >= --rho"),
    (["size", "--method", "cluster_t", "--margin", "0.03", "--true-difference", "2"], "--true-difference",
     "|difference| <= 0.5"),
    (["size", "--method", "cluster_t", "--margin", "0.03", "--true-difference", "0", "--max-reps", "1000"],
     "--max-reps", ">= 2000"),
    (["certify", "--method", "paired_wald", "--clusters", "0", "--margin", "0.03"], "--clusters", "in [2, 1,000,000]"),
    # refused after a 4 s estimate (1e12) or by the design model, naming "clusters" (1)
    (["certify", "--method", "cluster_t", "--clusters", "1e12", "--trials", "3", "--margin", "0.03"], "--clusters",
     "in [2, 1,000,000]"),
    (["certify", "--method", "cluster_t", "--clusters", "1", "--margin", "0.03"], "--clusters", "in [2, 1,000,000]"),
    (["certify", "--method", "cluster_t", "--clusters", "10", "--trials", "100001", "--margin", "0.03"], "--trials",
     "in [1, 100,000]"),
    (["power-bound", "--clusters", "0", "--margin", "0.03"], "--clusters", ">= 1"),
    (["power-bound", "--clusters", "100", "--trials", "3", "--margin", "0.03", "--rho", "0.2"], "--rho", "<= --rho-max"),
    (["power-bound", "--clusters", "100", "--margin", "0.6"], "--q-hi", "must exceed --margin"),
    (["power-bound", "--clusters", "100000", "--trials", "3", "--margin", "0.03", "--max-seconds", "1"],
     "--max-seconds", "over the limit"),
    (["calibrate", "--method", "paired_wald", "--clusters", "0", "--margin", "0.03"], "--clusters", "in [2, 1,000,000]"),
    (["calibrate", "--method", "paired_wald", "--clusters", "30", "--margin", "0.03", "--search-reps", "0"],
     "--search-reps", ">= 1"),
    (["certify", "--method", "paired_wald", "--clusters", "30", "--margin", "0.03", "--n-jobs", "0"], "--n-jobs",
     "-1"),
    (["certify", "--method", "paired_wald", "--clusters", "30", "--margin", "0.03", "--baseline", "x"],
     "--baseline", "LO,HI"),
    (["records", "list", "--records", "{under_file}"], None, None),
    (["records", "verify", "--records", "{dir}/empty"], None, None),
    (["records", "sign", "--records", "{dir}", "--key", "{text}"], "--key", "not an Ed25519 private key"),
    (["certify", "--method", "paired_wald", "--clusters", "30", "--margin", "0.03", "--sign-key", "{text}"],
     "--sign-key", "not an Ed25519 private key"),
    (["records", "coverage", "--method", "paired_wald", "--clusters", "-3", "--margin", "0.03"], "--clusters", ">= 1"),
    (["records", "regenerate", "--records", "{dir}", "--n-jobs", "0"], "--n-jobs", "-1"),
    (["records", "theorem", "--method", "no_such_method"], "--method", "unknown method"),
    (["records", "restamp", "--records", "{dir}/missing"], "--records", "not a directory"),
    (["records", "theorem", "--method", "paired_wald", "--out", "{dir}/theorems"], "--method", "declares no theorem"),
    (["records", "restamp", "--records", "{text}"], "--records", "not a directory"),
    (["bench", "simulate", "--reps", "0"], "--reps", ">= 1"),
    (["bench", "methods", "--reps", "-5"], "--reps", ">= 1"),
    (["bench", "study", "--n-jobs", "0"], "--n-jobs", "-1"),
    (["bench", "sequential", "--repeats", "0"], "--repeats", ">= 1"),
    (["bench", "all", "--scale", "0"], "--scale", "in (0, 1]"),
    (["bench", "qualify", "--n-jobs", "0"], "--n-jobs", "-1"),
    (["bench", "gpu", "--reps", "0"], "--reps", ">= 1"),
    (["bench", "speedups", "--repeat", "0"], "--repeat", ">= 1"),
    (["bench", "study", "--limit-kernel", "{dir}/missing.py"], "--limit-kernel", "no such file"),
    (["bench", "evidence", "--trials", "0"], "--trials", ">= 1"),
    (["bench", "evidence-inspect", "--customers", "0"], "--customers", ">= 1"),
    (["evidence", "hash", "{dir}/missing.json"], "file", "no file at"),
    (["evidence", "hash", "{text}"], "file", "not valid JSON"),
    (["evidence", "sign-head", "{text}", "--key", "{text}", "--out", "{dir}/h.json"], "--key",
     "not an Ed25519 private key"),
    (["compare", "{text}", "{text}", "--manifest", "{text}"], "--manifest", "invalid manifest"),
    (["calibrate", "--search-reps", "0"], "--search-reps", ">= 1"),
    (["judge-study", "--judge", "bad"], "--judge", "NAME=Se_b,Sp_b,Se_c,Sp_c"),
    (["evidence", "init", "--out", "{text}"], "--out", "never overwritten"),
    (["evidence", "run", "--manifest", "{text}", "--trials", "{text}", "--out", "{dir}/p.json"], "--manifest",
     "invalid manifest"),
    (["evidence", "run", "--manifest", "{text}", "--out", "{dir}/p.json"], "--trials", "exactly one of"),
    (["evidence", "replay", "{text}"], "packet", "not valid JSON"),
    (["evidence", "resolve", "{text}", "--as-of", "yesterday"], "--as-of", "ISO 8601"),
    (["evidence", "verify-ledger", "{text}"], "ledger", "not a ledger"),
    (["evidence", "keygen", "--out", "{under_file}"], "--out", None),
    (["evidence", "sign", "{text}", "--key", "{text}"], "--key", "not an Ed25519 private key"),
    (["evidence", "verify", "{text}", "--trusted", "{text}"], "--trusted", None),
    (["evidence", "verify", "{signed}", "--trusted", "{pub}"], "--signature", "not a signature file"),
    *[(["evidence", "verify", "{signed}", "--trusted", "{pub}", "--signature", "{dir}/" + name + ".sig"],
       "--signature", words) for name, words in SIGNATURE_WORDS.items()],
    (["evidence", "sign", "{signed}", "--key", "{dir}/keys/k.key", "--out", "{dir}/precious.txt"], "--out",
     "refusing to overwrite"),
    (["records", "verify", "--records", "{dir}", "--trusted-keys", "{text}"], "--trusted-keys", "--trusted-keys"),
    (["evidence", "demo", "--out", "{under_file}"], "--out", None),
    (["bench"], None, "required"),
    (["robustness", "--method", "cluster_t", "--clusters", "10", "--trials", "3", "--margin", "0.03", "--laws",
      "t_copula"], "--laws", "comma-separated"),
    # issue 29.2: names and options checked against the method catalogue before the studies load
    (["false-pass", "--method", "nope"], "--method", "unknown method 'nope'; registered methods:"),
    (["false-pass", "--method", "likelihood_ratio"], "--method", "not a fixed-sample method"),
    (["false-pass", "--method", "cluster_t", "--option", "bogus=1"], "--option", "no option(s) ['bogus']"),
    (["certify", "--method", "nope", "--clusters", "30", "--margin", "0.03"], "--method", "unknown method 'nope'"),
    (["calibrate", "--method", "nope", "--clusters", "30", "--margin", "0.03"], "--method", "unknown method 'nope'"),
    (["certify", "--method", "cluster_t", "--clusters", "30", "--margin", "0.03", "--rho-max", "1"], "--rho-max",
     "in [0, 1)"),
    (["records", "coverage", "--method", "nope", "--clusters", "30", "--margin", "0.03"], "--method",
     "unknown method 'nope'"),
    (["qualify", "--method", "cluster_t,nope"], "--method", "unknown method 'nope'"),
    (["robustness", "--method", "nope", "--clusters", "10", "--trials", "3", "--margin", "0.03"], "--method",
     "unknown method 'nope'"),
    (["judge-study", "--methods", "nope"], "--methods", "unknown method 'nope'"),
    (["size", "--method", "nope", "--margin", "0.03", "--true-difference", "0"], "--method", "unknown method"),
    (["sequential", "simulate", "--methods", "cluster_t"], "--methods", "not a sequential method"),
    (["sequential", "simulate", "--methods", "bonferroni", "--inner", "nope"], "--inner", "unknown method 'nope'"),
    (["sequential", "analyze", "--method", "likelihood_ratio", "--table", "1,0,0,0", "--option", "bogus=1"],
     "--option", "no option(s) ['bogus']"),
    (["recommend", "--clusters", "100", "--trials", "3", "--margin", "0.03", "--rho-max", "0.1", "--true-difference",
      "-0.05"], "--true-difference", "must exceed -margin"),
    (["study", "run", "{dir}/missing.toml"], "spec", "cannot read spec"),
    (["sequential", "run", "{dir}/missing.toml"], "spec", "cannot read spec"),
    (["qualify", "show", "{dir}/missing.json"], "record", "no qualification record at"),
    (["bench", "methods", "--methods", "nope"], "--methods", "unknown method 'nope'"),
    (["bench", "latency", "--methods", "nope"], "--methods", "unknown method 'nope'"),
    # issue 29.4: every command that can run long estimates first and refuses beyond --max-seconds
    (["certify", "--method", "paired_wald", "--clusters", "30", "--margin", "0.03", "--out", "{dir}/c",
      "--max-seconds", "1e-9"], "--max-seconds", "would take an estimated"),
    (["calibrate", "--method", "clustered_score", "--clusters", "30", "--margin", "0.03", "--out", "{dir}/c",
      "--max-seconds", "1e-9"], "--max-seconds", "would take an estimated"),
    (["judge-study", "--reps", "200", "--items", "50", "--out-dir", "{dir}/j", "--max-seconds", "1e-9"],
     "--max-seconds", "would take an estimated"),
    (["size", "--method", "paired_wald", "--margin", "0.1", "--true-difference", "0", "--out", "",
      "--max-seconds", "1e-9"], "--max-seconds", "would take an estimated"),
    (["records", "regenerate", "--only", "paired_wald", "--out", "{dir}/regen", "--max-seconds", "1e-9"],
     "--max-seconds", "would take an estimated"),
]


def _argv(argv, files):
    return [a.format(**files) for a in argv]


@pytest.mark.parametrize("argv, field, words", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_error_contract(argv, field, words, files, capsys):
    argv = _argv(argv, files)
    rc = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    payload = json.loads(lines[0])
    assert set(payload) == {"error"} and set(payload["error"]) == {"message", "field"}
    message = payload["error"]["message"]
    assert "\n" not in message and "Traceback" not in message and "http" not in message
    if field is not None:
        assert payload["error"]["field"] == field, payload
    if words is not None:
        assert words in message, message

    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err


def test_every_subcommand_is_driven():
    """The table above covers every registered command and bench row."""
    from simlab.cli import build_parser

    parser = build_parser()
    covered = {tuple(a for a in c[0][:2] if not a.startswith("-") and "{" not in a) for c in CASES}
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        nested = [a for a in p._actions if a.dest.endswith("_command")]
        names = list(nested[0].choices) if nested else []
        if nested and name != "qualify":
            for n in names:
                assert (name, n) in covered, (name, n)
        else:
            assert any(c[:1] == (name,) for c in covered), name


def test_table_value_reaches_the_validator(capsys):
    """``--table -1,0,0,0`` is the table's value, refused by its validator (not 'expected one argument')."""
    assert main(["interval", "--method", "cluster_t", "--table", "-1,0,0,0"]) == 2
    assert "expected one argument" not in capsys.readouterr().err


def test_interval_inconclusive_says_why(capsys):
    rows = [a for r in ["1,0,0,0"] * 12 for a in ("--table", r)]
    assert main(["interval", "--method", "clustered_normal", *rows, "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["status"] == "inconclusive" and any("min_clusters=30" in r for r in p["reasons"])
    assert main(["interval", "--method", "clustered_normal", *rows]) == 0
    assert "why: 12 non-empty clusters, fewer than 30 (min_clusters=30" in capsys.readouterr().out


def test_false_pass_says_which_options_an_exact_answer_does_not_use(capsys):
    assert main(["false-pass", "--method", "clustered_normal", "--reps", "1000", "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["exact"] and p["notes"] == ["--reps not used: the exact engine applies (add --simulate to simulate)"]


def test_sequential_exact_honours_its_design_with_loss(capsys):
    """With --loss, --looks/--margin/--alpha/--methods/--inner/--alternative change the answer."""
    base = ["sequential", "exact", "--loss", "0.03", "--json"]
    assert main([*base, "--methods", "bonferroni", "--looks", "50,100"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main([*base, "--methods", "bonferroni", "--looks", "50,100", "--alpha", "0.2"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert a["looks"] == [50, 100] and a["alpha"] == 0.05 and b["alpha"] == 0.2
    assert b["rows"][0]["promote"] > a["rows"][0]["promote"]
    promote = {}
    for alt in ("0.01", "0.02"):  # the seed's likelihood-ratio rule (alternative 0.01) promotes 0.02396
        assert main([*base, "--methods", "likelihood_ratio", "--alternative", alt]) == 0
        promote[alt] = json.loads(capsys.readouterr().out)["rows"][0]["promote"]
    assert abs(promote["0.01"] - 0.02396) < 5e-6 and promote["0.02"] < promote["0.01"]


def test_the_parsers_design_bounds_are_the_models():
    """``--clusters`` / ``--trials`` of certify and calibrate are bounded by the parser with the
    bounds of the models that would refuse them later (naming a model field, not the flag)."""
    from annotated_types import Ge, Le

    from methods.qualification.certificate import CertifiedDesign
    from simlab.cli._args import DESIGN_CLUSTERS, DESIGN_TRIALS
    from simlab.scenario import FixedSize, PairedScenario

    def bound(model, field, kind):
        return next(m for m in model.model_fields[field].metadata if isinstance(m, kind))

    lo, hi = bound(CertifiedDesign, "clusters", Ge).ge, bound(PairedScenario, "clusters", Le).le
    assert DESIGN_CLUSTERS(str(lo)) == lo and DESIGN_CLUSTERS(str(hi)) == hi
    for outside in (lo - 1, hi + 1):
        with pytest.raises(Exception, match="must be an integer in"):
            DESIGN_CLUSTERS(str(outside))
    top = bound(FixedSize, "trials", Le).le
    assert DESIGN_TRIALS(str(top)) == top
    with pytest.raises(Exception, match="must be an integer in"):
        DESIGN_TRIALS(str(top + 1))


# ---------------------------------------------------------------- the evidence path's input (probe findings)


@pytest.fixture
def evidence_files(files, tmp_path):
    """Evidence input each refused by field, file and line: JSON nested past the parser's depth,
    a line of blanks, text that is not UTF-8, an unknown invalidation rule, a dangling link."""
    from evidence.manifest import template

    deep = "[" * 100_000 + "]" * 100_000
    row = {"case_id": "c1", "trial_index": 0, "cluster_id": "k1", "arm": "baseline", "passed": True,
           "failed_checks": [], "cost_provenance": "absent", "manifest_sha256": None}
    out = {"manifest": tmp_path / "m.json", "deep": tmp_path / "deep.json", "deep_rows": tmp_path / "deep.jsonl",
           "blank_line": tmp_path / "ws.jsonl", "latin_rows": tmp_path / "latin.jsonl",
           "latin_manifest": tmp_path / "latin1.json", "rules": tmp_path / "rules.json",
           "packet": tmp_path / "pk.json", "dangling": tmp_path / "dangling.json"}
    out["manifest"].write_text(json.dumps(template()))
    out["deep"].write_text(deep)
    out["deep_rows"].write_text(deep + "\n")
    out["blank_line"].write_text(json.dumps(row) + "\n \t\n" + json.dumps({**row, "arm": "candidate"}) + "\n")
    out["latin_rows"].write_bytes(json.dumps(row).replace("c1", "c\xe9").encode("latin-1") + b"\n")
    out["latin_manifest"].write_bytes(json.dumps(template()).replace("prompt-v1", "prompt-\xe9").encode("latin-1"))
    out["rules"].write_text(json.dumps({**template(), "invalidation_rules": ["bogus"]}))
    out["packet"].write_text(json.dumps({"kind": "simlab.evidence.packet", "receipt": {},
                                         "artifacts": [{"role": "trials", "path": "t.jsonl"}]}))
    out["dangling"].symlink_to(tmp_path / "nowhere.json")
    return {**files, **{k: str(v) for k, v in out.items()}}


RUN = ["evidence", "run", "--manifest", "{manifest}", "--out", "{dir}/p.json", "--trials"]
DEEP_WORDS = "nested too deeply to read"
EVIDENCE_CASES = [
    (["evidence", "hash", "{deep}"], "file", f"deep.json: {DEEP_WORDS}"),
    (["evidence", "run", "--trials", "{blank_line}", "--manifest", "{deep}", "--out", "{dir}/p.json"], "--manifest",
     f"deep.json: invalid manifest: {DEEP_WORDS}"),
    ([*RUN, "{deep_rows}"], "--trials", "deep.jsonl: 1 problem(s) in the trial rows, 1 root cause(s): nested too deeply"),
    ([*RUN, "{blank_line}", "--population", "{deep_rows}"], "--population", f"{DEEP_WORDS}"),
    (["evidence", "replay", "{deep}"], "packet", f"deep.json: {DEEP_WORDS}"),
    (["evidence", "resolve", "{deep}"], "receipt", f"deep.json: {DEEP_WORDS}"),
    (["evidence", "verify", "{deep}", "--trusted", "{pub}"], "file", f"deep.json: {DEEP_WORDS}"),
    (["evidence", "sign", "{deep}", "--key", "{dir}/keys/k.key", "--out", "{dir}/deep.sig"], "file",
     f"deep.json: {DEEP_WORDS}"),
    (["compare", "{blank_line}", "{blank_line}", "--manifest", "{deep}"], "--manifest", DEEP_WORDS),
    ([*RUN, "{blank_line}"], "--trials", "empty line (one trial per line; nothing is skipped silently) (line 2)"),
    (["evidence", "hash", "{rules}"], "file", "invalidation_rules.0: Input should be 'model_or_prompt_change', "
                                              "'tool_or_evaluator_change' or 'dataset_or_policy_change'"),
    (["evidence", "replay", "{packet}", "--artifact", "trials={dir}/missing.jsonl"], "--artifact", "no file there"),
    (["evidence", "replay", "{packet}", "--anchor", "xyz"], "--anchor", "expected sha256: and 64 lowercase hex"),
    (["evidence", "replay", "{manifest}"], "packet", "m.json: not an evidence packet"),
    # the packet's path is checked first: the bad trial file is never read
    (["evidence", "run", "--manifest", "{manifest}", "--trials", "{latin_rows}", "--out", "{dangling}"], "--out",
     "dangling.json is a symbolic link to nothing; a packet is never overwritten"),
    ([*RUN[:-3], "--out", "", "--trials", "{blank_line}"], "--out", "--out: an empty path"),
    ([*RUN[:-3], "--out", "{under_file}", "--trials", "{blank_line}"], "--out", "a_file is not a directory"),
    ([*RUN, "{latin_rows}"], "--trials", "latin.jsonl: 1 problem(s) in the trial rows, 1 root cause(s): not UTF-8 "
                                         "text: byte 0xe9 at column 15 (save the file as UTF-8) (line 1)"),
    (["evidence", "run", "--trials", "{blank_line}", "--manifest", "{latin_manifest}", "--out", "{dir}/p.json"],
     "--manifest", "latin1.json: invalid manifest: not UTF-8 text: byte 0xe9 at line 1, column"),
    (["evidence", "replay", "{latin_rows}"], "packet", "latin.jsonl: not UTF-8 text: byte 0xe9 at line 1, column 15"),
    (["evidence", "keygen", "--out", "{dir}/precious.txt"], "--out",
     "precious.txt exists and is not a directory; a file is never overwritten"),
    (["evidence", "keygen", "--out", ""], "--out", "--out: an empty path"),
    (["evidence", "keygen", "--out", "{dir}/k2", "--name", "../escape"], "--name", "a file name without a folder"),
    (["evidence", "init", "--out", ""], "--out", "--out: an empty path; name the manifest file to write"),
    (["evidence", "init", "--out", "{dangling}"], "--out", "is a symbolic link to nothing; a manifest is never"),
    (["evidence", "sign-head", "{text}", "--key", "{text}", "--out", ""], "--out", "an empty path"),
    ([*RUN, "{blank_line}", "--population", ""], "--population", "--population '': no file there"),
    ([*RUN, "{blank_line}", "--ledger", ""], "--ledger", "--ledger: an empty path"),
    ([*RUN, "{dir}/missing.jsonl"], "--trials", "missing.jsonl: no file there"),
    ([*RUN, "{text}"], "--trials", "trial records must be .jsonl/.ndjson or .csv, got '.nc'"),
    (["compare", "{text}", "{blank_line}", "--format", "trials", "--manifest", "{manifest}"], "baseline",
     "not_netcdf.nc: trial records must be .jsonl/.ndjson or .csv"),
    ([*RUN, "{blank_line}", "--component", "{deep}"], "--component", f"deep.json: {DEEP_WORDS}"),
    (["evidence", "resolve", "{packet}", "--anchor", "sha256:" + "0" * 64], "--anchor", "add --replay"),
]


@pytest.mark.parametrize("argv, field, words", EVIDENCE_CASES, ids=[" ".join(c[0])[:60] for c in EVIDENCE_CASES])
def test_evidence_input_error_contract(argv, field, words, evidence_files, capsys):
    test_error_contract(argv, field, words, evidence_files, capsys)
