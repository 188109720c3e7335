"""Heavy imports happen where the work needs them (issue 10.2): ``simlab --help`` imports
no scipy.stats, numba or xarray; ``simlab methods`` no scipy.stats or xarray.  Each runs in
a fresh interpreter so nothing imported by the test session counts."""
from __future__ import annotations

import json
import subprocess
import sys


PROBE = """
import contextlib, io, json, sys
from simlab.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:
        rc = exc.code
print(json.dumps({"rc": rc, "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                  ("scipy", "numba", "xarray"))}))
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


def test_methods_imports_no_xarray_and_no_scipy_stats():
    mods = loaded("methods")   # one fresh interpreter for both checks
    assert "xarray" not in mods
    assert "scipy.stats" not in mods


def test_a_file_that_is_not_a_dataset_is_refused_before_xarray(tmp_path):
    """Issue 29.2: an input error answers before the heavy imports (study show of a JSON
    record took 3.4 s, most of it importing xarray and the summary code)."""
    record = tmp_path / "r.json"
    record.write_text('{"record_sha256": "sha256:00"}')
    for argv in (["study", "show", str(record)], ["sequential", "show", str(record)]):
        mods = loaded(*argv, rc=2)
        assert not mods & {"scipy.stats", "numba", "xarray"}, (argv, sorted(mods))
