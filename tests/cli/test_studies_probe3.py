"""Probe round 3, studies / records / datasets: damaged record files are reported, damaged
datasets are named, spec fields that form paths or hashes are checked, output folders and the
sizing files are checked before any work, policy and record errors are one clean line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from simlab.cli import main

RESULTS = Path(__file__).resolve().parents[2] / "results" / "qualification"

SPEC = """
name = "probe3"
methods = ["paired_wald"]
margins = [0.03]
alpha = 0.025
replications = 200
seed = 2

[scenario]
clusters = 10
trials = 2
baseline = 0.9
discordance = 0.1
difference = -0.03

[grid]
difference = [-0.05, 0.0]
"""


def run_json(capsys, argv):
    rc = main([*argv, "--json"])
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    assert len(lines) == 1, (out, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    return rc, json.loads(lines[0])


def refused(capsys, argv, field):
    """The one-line error of a refused command (exit 2, the field named)."""
    rc, p = run_json(capsys, argv)
    assert rc == 2 and set(p) == {"error"}, p
    assert p["error"]["field"] == field, p
    assert "\n" not in p["error"]["message"]
    return p["error"]["message"]


def boom(*args, **kwargs):
    raise AssertionError("the work started before the input was checked")


# ---------------------------------------------------------------- records verify / list
def test_records_verify_and_list_name_a_damaged_record(tmp_path, capsys):
    d = tmp_path / "records"
    d.mkdir()
    shutil.copy(RESULTS / "betting_ci.theorem.json", d)
    cut = (RESULTS / "betting_cs.theorem.json").read_bytes()
    (d / "betting_cs.theorem.json").write_bytes(cut[: len(cut) // 2])   # cut short
    (d / "notes.json").write_text('{"hello": 1}')                       # JSON, but no record
    message = refused(capsys, ["records", "verify", "--records", str(d)], None)
    assert message.startswith("2 of 3 files failed verification")
    assert "betting_cs.theorem.json: not valid JSON" in message and "notes.json: not a record" in message
    # --method cannot tell whose a damaged file was: it is reported all the same
    message = refused(capsys, ["records", "verify", "--records", str(d), "--method", "betting_ci"], None)
    assert "betting_cs.theorem.json: not valid JSON" in message

    rc, p = run_json(capsys, ["records", "list", "--records", str(d)])
    assert rc == 0 and [Path(f["file"]).name for f in p["files"]] == ["betting_ci.theorem.json"]
    assert [(Path(u["file"]).name, u["reason"][:14]) for u in p["unreadable"]] == [
        ("betting_cs.theorem.json", "not valid JSON"), ("notes.json", "not a record, ")]
    assert main(["records", "list", "--records", str(d)]) == 0
    out = capsys.readouterr().out
    assert "UNREADABLE" in out and "betting_cs.theorem.json" in out and "2 file(s) could not be read" in out


def test_records_verify_passes_a_sound_directory(tmp_path, capsys):
    d = tmp_path / "records"
    d.mkdir()
    shutil.copy(RESULTS / "betting_ci.theorem.json", d)
    rc, p = run_json(capsys, ["records", "verify", "--records", str(d)])
    assert rc == 0 and p["all_ok"] and [f["file"] for f in p["files"]] == ["betting_ci.theorem.json"]


# ---------------------------------------------------------------- damaged datasets
def _study_like(path: Path) -> Path:
    import xarray as xr

    from studies.datasets import make_attrs, save_dataset

    ds = xr.Dataset({"pass_rate": (("difference", "method"), np.full((2, 1), 0.5))},
                    coords={"difference": [-0.05, 0.0], "method": np.array(["m"], dtype=object)},
                    attrs=make_attrs("study", title="t", spec_json='{"a": 1}', created="2026-01-01T00:00:00+0000"))
    return save_dataset(ds, path)


@pytest.fixture
def damaged(tmp_path) -> Path:
    """A dataset with one byte of its HDF5 metadata flipped: the first flip, from the end, after
    which neither the reader nor the overwrite check can read it (the layout is the writer's; the
    search keeps the test independent of it)."""
    from studies.datasets import DamagedDataset, open_dataset, written_by_simlab

    good = _study_like(tmp_path / "good.nc").read_bytes()
    bad = tmp_path / "damaged.nc"
    for offset in range(len(good) - 16, 8, -31):
        b = bytearray(good)
        b[offset] ^= 0xFF
        bad.write_bytes(bytes(b))
        if written_by_simlab(bad):  # its root attrs still read: the damage lies elsewhere
            continue
        try:
            open_dataset(bad)
        except DamagedDataset:
            return bad
    pytest.fail("no flipped byte damaged the dataset")


def test_damaged_dataset_is_named_by_every_reader(damaged, tmp_path, capsys):
    for argv, field in ((["study", "show", str(damaged)], "file"),
                        (["study", "plot", str(damaged), "--out", str(tmp_path / "p.png")], "file"),
                        (["sequential", "show", str(damaged)], "path")):
        message = refused(capsys, argv, field)
        assert message.startswith(f"{damaged}: damaged or not a simlab dataset ("), message
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("error, reason", [
    (RuntimeError("Error iterating over attributes (incorrect metadata checksum)"),
     "a checksum does not match: a changed byte"),
    (KeyError("Unable to synchronously open object (incorrect metadata checksum)"),
     "a checksum does not match: a changed byte"),
    (OSError(5, "Unable to synchronously open file (truncated file)"), "cut short")])
def test_every_reader_error_becomes_one_message(error, reason, tmp_path, monkeypatch, capsys):
    """Each in plain words (probe round 5: HDF5's own text was passed through)."""
    import xarray as xr

    nc = _study_like(tmp_path / "s.nc")

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(xr, "open_dataset", fail)
    message = refused(capsys, ["study", "show", str(nc)], "file")
    assert message == f"{nc}: damaged or not a simlab dataset ({reason})"


def test_damaged_dataset_is_not_overwritten(damaged, tmp_path, capsys, monkeypatch):
    before = damaged.read_bytes()
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    import studies.engine

    monkeypatch.setattr(studies.engine, "run_study", boom)
    message = refused(capsys, ["study", "run", str(spec), "--out", str(damaged)], "--out")
    assert message.startswith(f"--out {damaged}: damaged or not a simlab dataset; refusing to overwrite it")
    message = refused(capsys, ["robustness", "--method", "cluster_t", "--clusters", "30", "--trials", "3",
                               "--margin", "0.05", "--reps", "200", "--dataset", str(damaged)], "--dataset")
    assert "damaged or not a simlab dataset; refusing to overwrite it" in message
    assert damaged.read_bytes() == before


# ---------------------------------------------------------------- study specs
@pytest.mark.parametrize("name", ["../../../tmp/evil", "", ".hidden", "a/b", "a..b", "-x", "sp ace", "x" * 101])
def test_spec_name_must_be_a_plain_file_stem(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace('name = "probe3"', f"name = {json.dumps(name)}"))
    message = refused(capsys, ["study", "run", str(spec), "--max-seconds", "10"], "spec")
    assert message.startswith(f"{spec}: name: {name!r} is not a plain file name"), message
    assert not (tmp_path / "simlab-out").exists()


@pytest.mark.parametrize("edit, words", [
    (('seed = 2', 'seed = 99999999999999999999'), "seed: Input should be less than or equal to 9007199254740991"),
    (('replications = 200', 'replications = "200"'), "replications: give a number, not the string '200'"),
    (('clusters = 10', 'clusters = "10"'), "scenario.clusters: give a number, not the string '10'"),
    (('clusters = 10', 'clusters = 0'),
     "grid point {'difference': -0.05}: scenario: clusters: Input should be greater than or equal to 1"),
    (('discordance = 0.1', 'rho = 1.0\ndiscordance = 0.1'), "scenario: rho: Input should be less than 1"),
])
def test_spec_values_are_refused_naming_the_file_and_field(edit, words, tmp_path, capsys, monkeypatch):
    import studies.engine

    monkeypatch.setattr(studies.engine, "study_estimate", boom)  # refused before any estimate or work
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace(*edit))
    message = refused(capsys, ["study", "run", str(spec), "--out", str(tmp_path / "o.nc")], "spec")
    assert message.startswith(f"{spec}: ") and words in message, message


def test_spec_with_a_byte_order_mark(tmp_path, capsys):
    for suffix in (".toml", ".json"):
        spec = tmp_path / f"bom{suffix}"
        body = SPEC if suffix == ".toml" else json.dumps({"methods": ["paired_wald"], "replications": 200})
        spec.write_bytes(b"\xef\xbb\xbf" + body.encode())
        message = refused(capsys, ["study", "run", str(spec), "--out", str(tmp_path / "o.nc")], "spec")
        assert message == (f"spec {spec}: the file starts with a UTF-8 byte-order mark (BOM), which a spec file "
                           "may not hold; save it as UTF-8 without a BOM")


def test_sound_spec_values_still_load():
    from studies.engine.spec import parse_spec

    spec = parse_spec({"name": "a-b_c.1", "methods": ["paired_wald"], "replications": 200, "seed": 2 ** 53 - 1,
                       "margins": [1e-2], "scenario": {"clusters": 10, "baseline": 0.9, "discordance": 0.1,
                                                       "difference": 0}})
    assert spec.scenario.difference == 0.0 and spec.seed == 2 ** 53 - 1 and spec.hash.startswith("sha256:")
    assert len(spec.points()) == 1


# ---------------------------------------------------------------- outputs checked before the work
def test_certify_and_calibrate_refuse_a_file_as_out_before_the_work(tmp_path, capsys, monkeypatch):
    import studies.qualify

    for name in ("certify", "certify_estimate", "calibrate", "calibrate_estimate"):
        monkeypatch.setattr(studies.qualify, name, boom)
    precious = tmp_path / "precious.txt"
    precious.write_text("mine")
    message = refused(capsys, ["certify", "--method", "clustered_normal", "--clusters", "60", "--trials", "3",
                               "--rho-max", "0.1", "--margin", "0.05", "--out", str(precious)], "--out")
    assert message == f"--out {precious} is a file, not a directory; give the folder to write in"
    message = refused(capsys, ["calibrate", "--method", "clustered_score", "--clusters", "30", "--margin", "0.05",
                               "--out", str(precious / "sub")], "--out")
    assert message == f"--out {precious / 'sub'}: {precious} is a file, not a directory"
    assert precious.read_text() == "mine"


def test_qualify_refuses_a_file_as_checkpoint_before_the_work(tmp_path, capsys, monkeypatch):
    import studies.engine
    import studies.qualify

    monkeypatch.setattr(studies.engine, "qualify_estimate", boom)
    monkeypatch.setattr(studies.qualify, "finished_ranges", boom)
    precious = tmp_path / "precious.txt"
    precious.write_text("mine")
    message = refused(capsys, ["qualify", "--method", "clustered_normal", "--policy", "reduced-small", "--out",
                               str(tmp_path / "qo"), "--checkpoint", str(precious)], "--checkpoint")
    assert message == f"--checkpoint {precious} is a file, not a directory; give the folder to write in"
    message = refused(capsys, ["qualify", "--method", "clustered_normal", "--policy", "reduced-small", "--out",
                               str(precious)], "--out")
    assert message.startswith(f"--out {precious} is a file")
    assert precious.read_text() == "mine" and not (tmp_path / "qo").exists()


SIZE = ["size", "--method", "cluster_t", "--margin", "0.05", "--true-difference", "0"]


def test_size_keeps_a_users_file_of_the_name_it_picks(tmp_path, capsys, monkeypatch):
    import studies.sizing

    monkeypatch.setattr(studies.sizing, "size_estimate", boom)
    monkeypatch.setattr(studies.sizing, "size", boom)
    stem = "size-cluster_t-m0.05-d0-M1-rho0-seed20261129"
    for suffix in (".nc", ".png"):
        d = tmp_path / suffix[1:]
        d.mkdir()
        mine = d / f"{stem}{suffix}"
        mine.write_bytes(b"my own file\n")
        message = refused(capsys, [*SIZE, "--out", str(d)], "--out")
        assert message.startswith(f"--out {mine} exists and is not a ") and "--force" in message, message
        assert mine.read_bytes() == b"my own file\n"


def test_size_may_replace_its_own_files(tmp_path, capsys, monkeypatch):
    import matplotlib
    import xarray as xr

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import studies.sizing
    from studies.datasets import make_attrs, save_dataset

    stem = tmp_path / "size-cluster_t-m0.05-d0-M1-rho0-seed20261129"
    save_dataset(xr.Dataset({"power": ("clusters", [0.5])}, coords={"clusters": [10]},
                            attrs=make_attrs("sizing", title="t")), f"{stem}.nc")
    from studies.plots import save_png

    save_png(plt.figure(), f"{stem}.png")   # simlab's own plot carries its key (a user's matplotlib PNG is refused)
    plt.close("all")

    def reached(*args, **kwargs):
        raise RuntimeError("the search started")

    monkeypatch.setattr(studies.sizing, "size_estimate", reached)
    with pytest.raises(RuntimeError, match="the search started"):  # past the output checks
        main([*SIZE, "--out", str(tmp_path)])
    message = refused(capsys, [*SIZE, "--out", str(tmp_path / f"{stem.name}.nc")], "--out")
    assert "is a file, not a directory" in message


# ---------------------------------------------------------------- policy and record errors
def test_policy_file_errors_are_one_clean_line(tmp_path, capsys):
    from methods.qualification.policy import POLICY_DIR

    text = (POLICY_DIR / "reduced-small.toml").read_text()
    cases = [(("grid = [10, 30]", "grid = [10, 10, 30]"),
              "domain.clusters: grid must be strictly increasing, got [10, 10, 30]"),
             (("max_replications = 8000", "max_replications = 100"),
              "max_replications (100) must be >= min_replications (1000)"),
             (("seed = 20261129", "seed = 99999999999999999999"),
              "seed: Input should be less than or equal to 9007199254740991")]
    for (old, new), words in cases:
        assert old in text
        policy = tmp_path / "p.toml"
        policy.write_text(text.replace(old, new))
        message = refused(capsys, ["qualify", "--method", "clustered_normal", "--policy", str(policy), "--out",
                                   str(tmp_path / "o")], "--policy")
        assert message == f"policy file {policy}: {words}"


def test_qualify_show_of_a_record_with_a_nan_names_the_file(tmp_path, capsys):
    record = tmp_path / "nan.json"
    data = json.loads((RESULTS / "cluster_t.b2433391f9.json").read_text())
    data["cells"][0]["upper"] = float("nan")
    record.write_text(json.dumps(data))
    message = refused(capsys, ["qualify", "show", str(record), "--png", str(tmp_path / "x.png")], "record")
    assert message == "record nan.json: $.cells[0].upper: non-finite number nan cannot be content-addressed"


def test_study_show_refuses_impossible_counts(tmp_path, capsys):
    import xarray as xr

    from studies.datasets import make_attrs, save_dataset

    dims = ("difference", "method")
    base = {"pass_rate": (dims, np.full((2, 1), 0.5)), "n_reps": (dims, np.full((2, 1), 100)),
            "n_pass": (dims, np.full((2, 1), 50))}
    coords = {"difference": [-0.05, 0.0], "method": np.array(["m"], dtype=object)}
    for name, value, where in (("n_reps", -5, "n_reps holds negative counts"),
                               ("n_pass", 101, "n_pass holds counts outside [0, n_reps]")):
        data = dict(base)
        data[name] = (dims, np.full((2, 1), value))
        nc = save_dataset(xr.Dataset(data, coords=coords, attrs=make_attrs("study", title="t")), tmp_path / "c.nc")
        message = refused(capsys, ["study", "show", str(nc)], "file")
        assert message == f"{nc}: damaged or not a simlab dataset ({where})"
