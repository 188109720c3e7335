"""Probe, round 7: the files a command writes.

* Every plot writer replaced a user's own matplotlib PNG without --force: a PNG was taken for
  simlab's when matplotlib had written it.  Every PNG simlab draws now carries simlab's PNG
  text key (``studies.plots.stamp``), read from the PNG's chunks without matplotlib; only such
  a PNG is replaced unasked.
* An output path that cannot be written was found only after the work: ``os.access`` says yes
  to root everywhere, /proc included.  The path's folder is now tried with a probe file.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.cli import main

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "results" / "qualification" / "cluster_t.b2433391f9.json"
SPEC = """
name = "round7"
methods = ["cluster_t"]
margins = [0.03]
alpha = 0.025
replications = 1000
seed = 7

[scenario]
clusters = 30
trials = 1
rho = 0.0
baseline = 0.9
discordance = 0.1
difference = 0.0
"""


def _error(argv, capsys) -> dict:
    rc = main([*argv, "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 2 and len(out) == 1, (rc, out)
    return json.loads(out[0])["error"]


def _users_png(path: Path) -> bytes:
    """A PNG of the user's own, drawn by matplotlib (its Software chunk names matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    fig.gca().plot([1, 2, 3], [3, 1, 2])
    fig.savefig(path)
    plt.close(fig)
    data = path.read_bytes()
    assert b"Matplotlib" in data   # what was once taken for a plot simlab drew
    return data


def _simlab_png(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from studies.plots import save_png

    fig = plt.figure()
    save_png(fig, path)
    plt.close(fig)


def _refused_png(err: dict, flag: str, path: Path) -> None:
    assert err["field"] == flag, err
    assert err["message"].startswith(f"{flag} {path} exists and is not a plot simlab drew"), err
    assert "'simlab-plot' text key" in err["message"] and "--force" in err["message"], err


def boom(*args, **kwargs):
    raise AssertionError("the work started")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("round7")
    spec = d / "s.toml"
    spec.write_text(SPEC)
    nc = d / "d.nc"
    assert main(["study", "run", str(spec), "--out", str(nc), "--no-checkpoint", "--json"]) == 0
    return nc


# ---------------------------------------------------------------- the PNG mark
def test_every_png_simlab_draws_goes_through_the_marking_helper():
    """Each of the six savefig sites (studies/plots/*.py, studies/sizing/curve.py) saves with
    simlab's key: no other ``savefig`` is left in the studies layer."""
    sites = {str(p.relative_to(ROOT)) for p in (ROOT / "studies").rglob("*.py")
             if re.search(r"\.savefig\(", p.read_text()) and p.name != "stamp.py"}
    assert not sites, sites
    users = {str(p.relative_to(ROOT)) for p in (ROOT / "studies").rglob("*.py")
             if "save_png(fig" in p.read_text() and p.name != "stamp.py"}
    assert users == {"studies/plots/power_k.py", "studies/plots/study.py", "studies/plots/judge.py",
                     "studies/plots/qualification.py", "studies/plots/sequential.py", "studies/sizing/curve.py"}


def test_the_mark_is_read_from_the_png_chunks(tmp_path):
    from studies.plots import PNG_KEY, is_simlab_png, png_text

    mine, ours = tmp_path / "mine.png", tmp_path / "ours.png"
    _users_png(mine)
    _simlab_png(ours)
    assert PNG_KEY not in png_text(mine) and not is_simlab_png(mine)
    text = png_text(ours)
    assert text[PNG_KEY] == "1" and text["Software"].startswith("simlab ") and "matplotlib" in text["Software"]
    assert is_simlab_png(ours)
    cut = tmp_path / "cut.png"     # a PNG cut short is not taken for a plot
    cut.write_bytes(ours.read_bytes()[:60])
    forged = tmp_path / "forged.png"   # the key's words outside a text chunk are not the mark
    forged.write_bytes(mine.read_bytes() + b"simlab-plot\x001")
    text_file = tmp_path / "notes.png"
    text_file.write_text("my notes\n")
    for other in (cut, forged, text_file, tmp_path / "missing.png"):
        assert not is_simlab_png(other), other


def test_the_qualification_heatmap_carries_the_mark(tmp_path):
    from methods.qualification import load_record
    from studies.plots import heatmap, is_simlab_png

    assert is_simlab_png(heatmap(load_record(RECORD, check_current=False), tmp_path / "h.png"))


def test_the_check_reads_no_matplotlib():
    probe = ("import sys, tempfile, pathlib\n"
             "from simlab.cli.study import check_plot_out\n"
             "d = pathlib.Path(tempfile.mkdtemp())\n"
             "(d / 'x.png').write_bytes(b'\\x89PNG\\r\\n\\x1a\\n')\n"
             "try:\n    check_plot_out(d / 'x.png', '--out', False)\nexcept Exception as e:\n    print(type(e).__name__)\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'PIL', 'numpy')))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["UsageError", "[]"], done.stdout


# ---------------------------------------------------------------- each writer keeps a user's PNG
def test_study_plot_keeps_a_users_matplotlib_png_and_replaces_its_own(dataset, tmp_path, capsys):
    mine = tmp_path / "u.png"
    before = _users_png(mine)
    _refused_png(_error(["study", "plot", str(dataset), "--out", str(mine)], capsys), "--out", mine)
    assert mine.read_bytes() == before
    ours = tmp_path / "ours.png"
    for _ in range(2):   # a rerun replaces the plot simlab drew
        assert main(["study", "plot", str(dataset), "--out", str(ours), "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == {"plot": str(ours)}
    from studies.plots import is_simlab_png

    assert is_simlab_png(ours)
    assert main(["study", "plot", str(dataset), "--out", str(mine), "--force", "--json"]) == 0   # asked: replaced
    capsys.readouterr()
    assert mine.read_bytes() != before and is_simlab_png(mine)


def test_qualify_show_keeps_a_users_matplotlib_png(tmp_path, capsys):
    mine = tmp_path / "heat.png"
    before = _users_png(mine)
    _refused_png(_error(["qualify", "show", str(RECORD), "--png", str(mine)], capsys), "--png", mine)
    assert mine.read_bytes() == before
    ours = tmp_path / "ours.png"
    _simlab_png(ours)
    assert main(["qualify", "show", str(RECORD), "--png", str(ours), "--json"]) == 0   # its own: replaced
    assert json.loads(capsys.readouterr().out)["png"] == str(ours)


def test_sequential_plot_keeps_a_users_matplotlib_png(dataset, tmp_path, capsys):
    mine = tmp_path / "s.png"
    before = _users_png(mine)
    _refused_png(_error(["sequential", "plot", str(dataset), "--out", str(mine)], capsys), "--out", mine)
    assert mine.read_bytes() == before


def test_judge_study_keeps_a_users_matplotlib_png(tmp_path, capsys, monkeypatch):
    import studies

    from studies import JudgeStudySpec, judge_study_paths

    monkeypatch.setattr(studies, "judge_study_estimate", boom)
    monkeypatch.setattr(studies, "judge_study", boom)
    _nc, png = judge_study_paths(JudgeStudySpec(), tmp_path)
    before = _users_png(png)
    _refused_png(_error(["judge-study", "--out-dir", str(tmp_path)], capsys), "--out-dir", png)
    assert png.read_bytes() == before


def test_demo_keeps_a_users_matplotlib_png(tmp_path, capsys):
    for name in ("demo.png", "power_k.png"):
        d = tmp_path / name.split(".")[0]
        d.mkdir()
        mine = d / name
        before = _users_png(mine)
        _refused_png(_error(["demo", "--out", str(d)], capsys), "--out", mine)
        assert mine.read_bytes() == before


def test_size_keeps_a_users_matplotlib_png_and_passes_its_own(tmp_path, capsys, monkeypatch):
    import studies.sizing

    from studies.sizing import sizing_paths

    size = ["size", "--method", "cluster_t", "--margin", "0.05", "--true-difference", "0"]
    inputs = {"method": "cluster_t", "margin": 0.05, "difference": 0.0, "trials_per_cluster": 1, "rho": 0.0,
              "seed": 20261129}
    monkeypatch.setattr(studies.sizing, "size", boom)
    monkeypatch.setattr(studies.sizing, "size_estimate", boom)
    _nc, png = sizing_paths(tmp_path, inputs)
    before = _users_png(png)
    _refused_png(_error([*size, "--out", str(tmp_path)], capsys), "--out", png)
    assert png.read_bytes() == before
    _simlab_png(png)     # its own plot: past the output checks, to the search
    with pytest.raises(AssertionError, match="the work started"):
        main([*size, "--out", str(tmp_path)])


def test_check_plot_out_is_the_one_gate(tmp_path):
    from simlab.cli._output import UsageError
    from simlab.cli.study import check_plot_out

    mine, ours = tmp_path / "mine.png", tmp_path / "ours.png"
    _users_png(mine)
    _simlab_png(ours)
    check_plot_out(ours, "--out", False)
    check_plot_out(mine, "--out", True)
    with pytest.raises(UsageError) as exc:
        check_plot_out(mine, "--out", False)
    assert exc.value.args[0].startswith(f"--out {mine} exists and is not a plot simlab drew")


# ---------------------------------------------------------------- a path that cannot be written
def _proc_unwritable() -> bool:
    import tempfile

    if not Path("/proc").is_dir():
        return False
    try:
        fd, name = tempfile.mkstemp(dir="/proc")
    except OSError:
        return True
    import os

    os.close(fd)
    os.unlink(name)
    return False


needs_proc = pytest.mark.skipif(not _proc_unwritable(), reason="no /proc here, or /proc takes files")

PROBE = """
import contextlib, io, json, sys
from simlab.cli import main
out = io.StringIO()
err = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "out": out.getvalue(), "err": err.getvalue(),
                  "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "xarray", "matplotlib"))}))
"""


@needs_proc
def test_study_run_into_proc_is_refused_in_the_argument_checks(tmp_path):
    """It said "/proc/.x.nc.lock: No such file or directory" (field null) after the estimate."""
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    done = subprocess.run([sys.executable, "-c", PROBE, "study", "run", str(spec), "--out", "/proc/x.nc", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    err = json.loads(report["out"])["error"]
    assert report["rc"] == 2 and err["field"] == "--out", err
    assert err["message"].startswith("--out /proc/x.nc: /proc cannot be written here ("), err
    assert "estimated" not in report["err"] and not report["modules"], report


@needs_proc
@pytest.mark.parametrize("argv, flag, message", [
    (["sequential", "plot", "d.nc", "--out", "/proc/x.png"], "--out", "--out /proc/x.png: /proc cannot be written"),
    (["study", "plot", "d.nc", "--out", "/proc/sub/x.png"], "--out", "--out /proc/sub/x.png: /proc cannot be written"),
    (["certify", "--method", "cluster_t", "--clusters", "30", "--margin", "0.03", "--out", "/proc"], "--out",
     "--out /proc: /proc cannot be written here"),   # an existing folder: os.access said yes
])
def test_other_outputs_under_proc_are_refused_naming_the_flag(argv, flag, message, capsys):
    err = _error(argv, capsys)
    assert err["field"] == flag and err["message"].startswith(message), err
    assert "estimated" not in capsys.readouterr().err


@needs_proc
def test_check_writable_and_check_folder_probe_proc():
    from simlab.cli._output import UsageError
    from simlab.cli.study import check_folder, check_writable

    for check, path in ((check_writable, "/proc/x.json"), (check_folder, "/proc"), (check_folder, "/proc/new")):
        with pytest.raises(UsageError) as exc:
            check(path, "--report")
        assert exc.value.args[0].startswith(f"--report {path}: "), exc.value.args


def test_the_probe_leaves_nothing_behind(tmp_path):
    from simlab.cli.study import check_folder, check_writable

    check_writable(tmp_path / "a" / "b.nc", "--out")
    check_folder(tmp_path, "--out")
    check_folder(tmp_path / "new", "--out")
    assert list(tmp_path.iterdir()) == []
