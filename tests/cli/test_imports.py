"""Heavy imports happen where the work needs them (issues 10.2, 29.2): ``simlab --help``
imports no scipy.stats, numba or xarray; ``simlab methods`` lists the registry from the
catalogue (methods/catalogue.json) without numpy, numba, scipy or pydantic; ``simlab
interval`` imports the one method it runs; an input error answers before any of them.  Each
runs in a fresh interpreter so nothing imported by the test session counts."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


PROBE = """
import contextlib, io, json, sys
from simlab.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:
        rc = exc.code
print(json.dumps({"rc": rc, "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                  ("scipy", "numba", "xarray", "numpy", "pydantic", "methods", "matplotlib"))}))
"""


def loaded(*argv: str, rc: int = 0) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["rc"] == rc
    return set(report["modules"])


def test_help_imports_no_heavy_module():
    mods = loaded("--help")
    assert not mods & {"scipy.stats", "numba", "xarray"}, sorted(mods)


def test_every_command_help_is_light():
    mods = loaded("sequential", "exact", "--help")
    assert not mods & {"scipy.stats", "numba", "xarray"}, sorted(mods)


HEAVY = {"numpy", "numba", "scipy", "scipy.stats", "xarray", "pydantic"}
TABLES = ("--table", "3,1,0,6", "--table", "4,0,1,5")


def method_modules(mods: set[str]) -> set[str]:
    """The public method modules loaded (``methods.fixed.cluster_t``; helpers start with ``_``)."""
    return {m for m in mods if m.startswith(("methods.fixed.", "methods.sequential."))
            and not m.rsplit(".", 1)[1].startswith("_")}


def test_methods_lists_the_registry_without_heavy_imports():
    mods = loaded("methods")
    assert not mods & HEAVY and not method_modules(mods), sorted(mods)
    mods = loaded("methods", "--json")
    assert not mods & HEAVY and not method_modules(mods), sorted(mods)


def test_interval_imports_only_the_method_it_runs():
    mods = loaded("interval", "--method", "cluster_t", *TABLES)
    assert method_modules(mods) == {"methods.fixed.cluster_t"}, sorted(method_modules(mods))
    assert not mods & {"xarray", "pydantic"}, sorted(mods)


@pytest.mark.parametrize("argv", [
    ("interval", "--method", "nope", *TABLES),                                  # unknown method
    ("interval", "--method", "cluster_t", *TABLES, "--option", "bogus=1"),      # unknown option
    ("interval", "--method", "cluster_t", *TABLES, "--margin", "2"),            # margin out of range
    ("interval", "--method", "cluster_t", "--table", "1,2,3"),                  # malformed table
    ("interval", "--method", "likelihood_ratio", *TABLES),                      # a sequential method
    ("interval", "--method", "judge_corrected", *TABLES),                       # calibration sets missing
])
def test_an_interval_input_error_answers_before_heavy_imports(argv):
    mods = loaded(*argv, rc=2)
    assert not mods & HEAVY and not method_modules(mods), (argv, sorted(mods))


def test_a_file_that_is_not_a_dataset_is_refused_before_xarray(tmp_path):
    """Issue 29.2: an input error answers before the heavy imports (study show of a JSON
    record took 3.4 s, most of it importing xarray and the summary code)."""
    record = tmp_path / "r.json"
    record.write_text('{"record_sha256": "sha256:00"}')
    for argv in (["study", "show", str(record)], ["sequential", "show", str(record)]):
        mods = loaded(*argv, rc=2)
        assert not mods & {"scipy.stats", "numba", "xarray"}, (argv, sorted(mods))


@pytest.mark.parametrize("out", ["plot.txt", "plot.png"])
def test_a_plots_bad_path_or_input_is_refused_before_matplotlib(tmp_path, out):
    """Probe 5, L11: ``sequential plot`` imported the plotting code (matplotlib, 1.7 s) before
    it checked that --out ends in .png or that the input is a dataset."""
    text = tmp_path / "notes.nc"
    text.write_text("not a dataset")
    mods = loaded("sequential", "plot", str(text), "--out", str(tmp_path / out), rc=2)
    assert not mods & {"matplotlib", "xarray", "numba"}, sorted(mods)


BYTECODE_PROBE = """
import contextlib, io, sys
from simlab.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main()                      # as the console script calls it: argv from sys.argv
print(sys.dont_write_bytecode)
"""


@pytest.mark.parametrize("opt_out, writes", [(None, True), ("0", False)])
def test_the_console_script_stores_bytecode_unless_told_not_to(tmp_path, opt_out, writes):
    """Issue 29.2: under PYTHONDONTWRITEBYTECODE every run compiled every module again; the
    console script stores bytecode (here into a private PYTHONPYCACHEPREFIX), unless
    SIMLAB_WRITE_BYTECODE=0."""
    import os

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path / "pyc")}
    env.pop("SIMLAB_WRITE_BYTECODE", None)
    if opt_out is not None:
        env["SIMLAB_WRITE_BYTECODE"] = opt_out
    done = subprocess.run([sys.executable, "-c", BYTECODE_PROBE, "methods"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(not writes)
    stored = {p.name.split(".")[0] for p in (tmp_path / "pyc").rglob("*.pyc")}
    assert ("catalogue" in stored) == writes, sorted(stored)   # methods/catalogue.py: imported after main starts
