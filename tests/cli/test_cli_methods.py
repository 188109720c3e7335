"""``simlab interval``, ``simlab methods`` and ``simlab bench methods`` through
``simlab.cli.main``."""
from __future__ import annotations

from simlab.hashing import is_hash
import json
import math

import numpy as np
import pytest

from methods import registry
from studies.bench.methods import bench_methods, method_class, reference_functions
from simlab.cli import main

THYROID_ROWS = ["0,0,2,1", "2,0,1,0", "3,0,0,0", "1,0,0,0", "2,0,1,0", "4,0,0,0", "3,0,0,0"]


def run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def tables_args(rows):
    return [a for r in rows for a in ("--table", r)]


def test_interval_json_matches_analyze(capsys):
    rc, out, _ = run(capsys, ["interval", "--method", "obuchowski", *tables_args(THYROID_ROWS),
                              "--margin", "0.05", "--alpha", "0.05", "--json"])
    assert rc == 0
    payload = json.loads(out)
    table = np.array([[int(x) for x in r.split(",")] for r in THYROID_ROWS])
    want = registry.get("obuchowski").analyze(table, 0.05, 0.05)
    assert payload["lower"] == want.lower and payload["upper"] == want.upper
    assert payload["estimate"] == want.estimate and payload["status"] == want.status
    assert payload["clusters"] == 7 and payload["trials"] == 20 and payload["estimand"] == "trial_weighted"
    assert payload["options"] == {"min_clusters": 2.0} and is_hash(payload["source_sha256"])


def test_interval_text_and_options(capsys):
    ties = tables_args(["1,0,0,0"] * 12)
    rc, out, _ = run(capsys, ["interval", "--method", "clustered_normal", *ties])
    assert rc == 0 and "decision: inconclusive" in out and "12 clusters" in out
    rc, out, _ = run(capsys, ["interval", "--method", "clustered_normal", *ties, "--option", "min_clusters=12"])
    assert rc == 0 and "decision: pass" in out and "[0.000000, 0.000000]" in out


def test_interval_inconclusive_has_null_bounds_in_json(capsys):
    rc, out, _ = run(capsys, ["interval", "--method", "cluster_t", "--table", "3,1,0,0", "--json"])
    p = json.loads(out)
    assert rc == 0 and p["status"] == "inconclusive" and p["lower"] is None and p["upper"] is None
    assert math.isclose(p["estimate"], -0.25)


@pytest.mark.parametrize("argv, message", [
    (["--method", "no_such_method", "--table", "1,0,0,0"], "unknown method 'no_such_method'; registered methods:"),
    (["--method", "cluster_t", "--table", "1,0,0,0", "--table", "1,0,0"], "--table #2"),
    (["--method", "cluster_t", "--table", "1,-1,0,0"], "--table #1"),
    (["--method", "cluster_t"], "at least one --table"),
    (["--method", "cluster_t", "--table", "1,0,0,0", "--option", "bogus=1"], "--option: no option(s) ['bogus']"),
    (["--method", "cluster_t", "--table", "1,0,0,0", "--option", "min_clusters=1", "--option", "min_clusters=5"],
     "--option 'min_clusters' is given more than once"),
    (["--method", "cluster_t", "--table", "1,0,0,0", "--option", "min_clusters"], "key=value"),
    (["--method", "cluster_t", "--table", "1,0,0,0", "--margin", "0"], "margin must lie in (0, 1)"),
])
def test_interval_errors_are_clear(capsys, argv, message):
    rc, out, err = run(capsys, ["interval", *argv])
    assert rc == 2 and message in err and out == ""
    rc, out, _ = run(capsys, ["interval", *argv, "--json"])
    assert rc == 2 and message in json.loads(out)["error"]["message"]


def test_interval_refuses_sequential_methods(capsys):
    """Refused from the catalogue entry, before the method's kernel module is imported."""
    rc, _, err = run(capsys, ["interval", "--method", "likelihood_ratio", "--table", "1,0,0,0"])
    assert rc == 2 and "'likelihood_ratio' is sequential" in err
    rc, out, _ = run(capsys, ["interval", "--method", "likelihood_ratio", "--table", "1,0,0,0", "--json"])
    assert rc == 2 and json.loads(out)["error"]["field"] == "--method"


@pytest.mark.parametrize("argv, field, message", [
    (["--option", "bogus=1"], "--option", "no option(s) ['bogus'] in method 'cluster_t'"),
    (["--margin", "1.5"], "--margin", "margin must lie in (0, 1)"),
    (["--alpha", "0.4"], "--alpha", "alpha (the one-sided level) must lie in (0, 0.25]"),
    (["--calibration", "1,0,0,1"], "--calibration", "reads no judge calibration sets"),
])
def test_interval_input_errors_name_their_field(capsys, argv, field, message):
    rc, out, _ = run(capsys, ["interval", "--method", "cluster_t", "--table", "1,0,0,0", *argv, "--json"])
    err = json.loads(out)["error"]
    assert rc == 2 and err["field"] == field and message in err["message"]


def test_unknown_method_error_lists_registered_names(capsys):
    _, _, err = run(capsys, ["interval", "--method", "nope", "--table", "1,0,0,0"])
    for name in ("clustered_normal", "cluster_t", "cluster_robust", "obuchowski"):
        assert name in err


def test_methods_listing(capsys):
    rc, out, _ = run(capsys, ["methods", "--json"])
    rows = {r["name"]: r for r in json.loads(out)["methods"]}
    assert rc == 0 and set(rows) == set(registry.names(inputs=None))
    assert rows["judge_corrected"]["inputs"] == ["tables", "judge_calibration"]
    assert rows["cluster_robust"]["inputs"] == ["tables"]
    assert rows["cluster_robust"]["estimand"] == "trial_weighted"
    assert "Bell & McCaffrey" in rows["cluster_robust"]["citation"]
    assert rows["cluster_t"]["kind"] == "fixed" and rows["cluster_t"]["version"] == "1"
    assert rows["betting_ci"]["guarantee"] == "theorem" and rows["cluster_t"]["guarantee"] is None
    assert rows["dm_score"]["calibration"] == "exact-em"
    for name, row in rows.items():   # the listing (from the catalogue) is what the loaded method says
        m = registry.get(name)
        assert (row["version"], row["estimand"], row["citation"], row["options"]) == \
            (m.version, m.estimand.value, m.citation, m.options)
    rc, out, _ = run(capsys, ["methods"])
    assert rc == 0 and "obuchowski" in out and "Obuchowski (1998)" in out
    assert "guarantee" in out and any(line.startswith("betting_ci ") and line.rstrip().endswith("theorem")
                                      for line in out.splitlines())


def test_bench_methods_cli_json(capsys):
    rc, out, _ = run(capsys, ["bench", "methods", "--reps", "3000", "--reference-reps", "30",
                              "--methods", "cluster_t,obuchowski", "--json"])
    assert rc == 0
    p = json.loads(out)
    assert (p["clusters"], p["trials"], p["numba_threads"]) == (30, 3, 1)
    rows = {r["method"]: r for r in p["rows"]}
    assert set(rows) == {"cluster_t", "obuchowski"}
    for r in rows.values():
        assert r["replications"] == 3000 and r["decisions_per_s"] > 0 and r["class"] == "closed_form"
        assert r["reference"].startswith("methods.reference.cluster.")
        assert r["reference_replications"] == 30 and r["status_mismatches"] == 0
        assert r["max_abs_lower_difference"] < 1e-9
        assert r["speedup_vs_reference"] == pytest.approx(r["decisions_per_s"] / r["reference_decisions_per_s"])
    rc, out, err = run(capsys, ["bench", "methods", "--reps", "500", "--reference-reps", "5",
                                "--methods", "cluster_robust", "--method-seconds", "30", "--reference-seconds", "6"])
    assert rc == 0 and "cluster_robust" in out and "decisions/s" in out
    # the bound on the whole run is said before the first method (every method was: 28 x up to 70 s, unsaid)
    # and each method's steps as they start (bayes_hierarchical was silent 83 s after its name)
    assert (err.index("benchmarking 1 method(s)") < err.index("cluster_robust: compiling or loading its kernel")
            < err.index("cluster_robust: timing 500 replications") < err.index("cluster_robust: timing its reference"))
    assert "cut to about 30 s" in err and "to 6 s, so about 0.6 min at most" in err


def test_bench_covers_every_registered_fixed_method():
    """Methods are picked up from the registry at run time; one without a reference is
    reported as such, one whose kernel fails is reported, not fatal."""
    p = bench_methods(reps=256, bootstrap_reps=64, reference_reps=3, reference_seconds=0.5)
    names = [r["method"] for r in p["rows"]]
    assert names == registry.names("fixed")
    refs = reference_functions()
    for r in p["rows"]:
        if "error" in r:
            continue
        assert r["replications"] == (64 if r["class"] == "bootstrap" else 256)
        assert (r["reference"] == "none") == (r["method"] not in refs)
    assert {"clustered_normal", "cluster_t", "cluster_robust", "obuchowski"} <= set(refs)


def test_method_classes_and_bootstrap_reps():
    assert method_class("cluster_bootstrap") == "bootstrap"
    assert method_class("tango_score") == "root_found"
    assert method_class("cluster_robust") == "closed_form"
    assert method_class("something_new") == "other"
    with pytest.raises(KeyError, match="unknown method"):
        bench_methods(reps=10, names=["nope"])
