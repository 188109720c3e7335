"""Probe round 5, chunks and study datasets: a folder in the chunk folder is reported and left
(it failed a finished run with exit 2 after the dataset was written); damaged chunks are
rejected in plain words (numpy's allow_pickle hint invited an unsafe load); a flipped bit in a
dataset's data bytes (which HDF5 does not checksum) is refused, not shown as a valid rate; a
damaged .nc is named in plain words, not HDF5's internals."""
from __future__ import annotations

import json

import numpy as np
import pytest

from simlab.cli import main
from studies.datasets import DamagedDataset, open_dataset, same_data, save_dataset
from studies.engine import tally
from studies.engine.durable import load_chunk, save_chunk
from studies.engine.runner import run_key, run_study
from studies.engine.spec import parse_spec

SPEC = {"name": "probe5", "methods": ["clustered_normal", "paired_wald"],
        "scenario": {"clusters": 10, "trials": 2, "rho": 0.1, "baseline": 0.9, "discordance": 0.1,
                     "difference": -0.03},
        "grid": {"difference": [-0.03, 0.0]}, "replications": 400, "seed": 11}
CHUNK = 200  # 2 scenarios x 2 chunks


@pytest.fixture(scope="module")
def clean():
    return run_study(parse_spec(SPEC), chunk_size=CHUNK)


def _cli(capsys, argv):
    rc = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, json.loads(out.strip().splitlines()[-1]), err


def test_a_folder_in_the_chunk_folder_is_reported_and_left(tmp_path, capsys, clean):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    work, out = tmp_path / "work", tmp_path / "study.nc"
    run_dir = work / run_key(parse_spec(SPEC), CHUNK)
    run_study(parse_spec(SPEC), chunk_size=CHUNK, work_dir=work, keep_chunks=True)  # an interrupted run's chunks
    task_dir = run_dir / "t00000_0_200.npz"   # a task's chunk path
    task_dir.unlink()
    task_dir.mkdir()
    (run_dir / "t00000_1_2.npz").mkdir()      # named like a chunk, no task's
    cut = run_dir / "t00001_0_200.npz"
    cut.write_bytes(cut.read_bytes()[:300])   # an interrupted copy

    rc, payload, err = _cli(capsys, ["study", "run", str(spec_file), "--work-dir", str(work), "--chunk-size",
                                     str(CHUNK), "--out", str(out)])
    assert rc == 0, err
    assert f"chunk {task_dir} rejected (not a chunk file (a directory); left alone); computing it again" in err
    assert f"chunk {cut} rejected (damaged or unreadable: cut short); computing it again" in err
    assert f"work dir {run_dir} kept: it holds t00000_0_200.npz (a directory), t00000_1_2.npz (a directory)" in err
    assert payload["tasks_resumed"] == 2 and same_data(open_dataset(out), clean)
    assert sorted(p.name for p in run_dir.iterdir()) == ["t00000_0_200.npz", "t00000_1_2.npz"]  # simlab's went


def test_damaged_chunks_are_rejected_in_plain_words(tmp_path):
    arr = np.arange(3 * tally.NF, dtype=np.int64).reshape(3, tally.NF)
    good = tmp_path / "good.npz"
    save_chunk(good, arr, "run-a", (0, 0, 10))
    data = good.read_bytes()
    bad = tmp_path / "bad.npz"

    def why(content=None):
        if content is not None:
            bad.write_bytes(content)
        got, reason = load_chunk(bad, "run-a", (0, 0, 10), arr.shape)
        assert got is None
        return reason

    flipped = bytearray(data)
    flipped[data.find(arr.tobytes()) + 5] ^= 0x01       # one bit of the tallies: the zip's CRC catches it
    reasons = {"cut": why(data[:len(data) // 2]), "empty": why(b""), "flip": why(bytes(flipped)),
               "garbage": why(b"not a chunk at all")}
    np.savez(bad, tally=np.array([{"n": 1}], dtype=object), meta=np.zeros(3, np.uint8))
    reasons["objects"] = why()
    bad.unlink()
    bad.mkdir()
    reasons["folder"] = why()
    bad.rmdir()
    assert reasons == {"cut": "damaged or unreadable: cut short", "empty": "damaged or unreadable: cut short",
                       "flip": "damaged or unreadable: checksum mismatch (a changed byte)",
                       "garbage": "damaged or unreadable: not a simlab chunk",
                       "objects": "damaged or unreadable: holds objects, not counts",
                       "folder": "not a chunk file (a directory)"}
    for i in range(0, len(data), 7):  # no library text passes through, whatever byte is changed
        b = bytearray(data)
        b[i] ^= 0xFF
        bad.write_bytes(bytes(b))
        reason = load_chunk(bad, "run-a", (0, 0, 10), arr.shape)[1]
        assert not any(w in reason for w in ("pickle", "Error", "BadZip", "Errno", "'")), (i, reason)


def _flip(src, dst, var, byte, bit=0):
    import h5py

    dst.write_bytes(src.read_bytes())
    with h5py.File(dst, "r") as f:
        off = f[var].id.get_offset()
    with open(dst, "r+b") as fh:
        fh.seek(off + byte)
        b = fh.read(1)[0]
        fh.seek(off + byte)
        fh.write(bytes([b ^ (1 << bit)]))
    return dst


def test_a_flipped_bit_in_a_rate_or_a_count_is_refused(tmp_path, capsys, clean):
    nc = save_dataset(clean, tmp_path / "study.nc")
    rc, payload, err = _cli(capsys, ["study", "show", str(nc)])
    assert rc == 0 and len(payload["rows"]) == 4, err
    first = "difference=-0.03, method=clustered_normal, margin=0.03, alpha=0.025"
    cases = {"pass_rate": f"pass_rate disagrees with n_pass / n_reps at {first}",
             "n_pass": f"n_pass + n_fail + n_inconclusive do not add up to n_reps at {first}",
             "coverage": "coverage disagrees with n_cover / n_interval at difference=-0.03, method=paired_wald"}
    at = {"pass_rate": 6, "n_pass": 0, "coverage": 8 + 6}  # clustered_normal's coverage is NaN (no intervals)
    for var, words in cases.items():
        bad = _flip(nc, tmp_path / f"{var}.nc", var, at[var])
        for argv in (["study", "show", str(bad)], ["study", "plot", str(bad), "--out", str(tmp_path / "p.png")]):
            rc, payload, err = _cli(capsys, argv)
            assert rc == 2 and payload["error"]["field"] == "file", (var, payload)
            assert payload["error"]["message"].startswith(f"{bad}: damaged or not a simlab dataset ({words}"), \
                payload["error"]["message"]
    assert not (tmp_path / "p.png").exists()


def test_a_damaged_nc_is_named_in_plain_words(tmp_path, capsys, clean):
    nc = save_dataset(clean, tmp_path / "study.nc")
    cut = tmp_path / "cut.nc"
    cut.write_bytes(nc.read_bytes()[:40000])
    rc, payload, err = _cli(capsys, ["study", "show", str(cut)])
    assert rc == 2 and payload["error"]["message"] == f"{cut}: damaged or not a simlab dataset (cut short)", payload
    other = tmp_path / "other.nc"
    other.write_bytes(b"CDF\x01" + bytes(200))  # netCDF-3 (not HDF5): the reader's own loader, not file_kind
    with pytest.raises(DamagedDataset) as info:
        open_dataset(other)
    assert str(info.value) == f"{other}: damaged or not a simlab dataset (not a netCDF/HDF5 file)"


def test_a_chunk_files_cost_is_measured_on_the_disk_and_leaves_nothing(tmp_path):
    """study run prices each task's durable chunk (written, fsync'd, removed) on the disk it
    uses: at --chunk-size 1 that was 30 s of a run estimated at 9 (probe round 5)."""
    from studies.engine import chunk_file_seconds

    work = tmp_path / "w"
    s = chunk_file_seconds(work)
    assert 0.0 < s < 5.0
    assert work.is_dir() and not list(work.iterdir())


def test_a_workers_table_source_is_reused_for_the_next_chunk_of_its_scenario():
    """Each chunk built its scenario's table source again (12 ms at 10 x 2): kept per worker,
    the same tables either way."""
    import numpy as np

    from simlab.sampling import table_source
    from simlab.scenario import FixedSize, PairedScenario
    from studies.engine import runner

    sc = PairedScenario.from_rates(0.9, 0.0, 0.1, clusters=10, cluster_size=FixedSize(trials=2), rho=0.1)
    a = runner._source(sc, 5, "auto")
    assert runner._source(sc.model_copy(), 5, "auto") is a
    assert np.array_equal(a.tables(3, 9), table_source(sc, 5, "auto").tables(3, 9))
    assert runner._source(sc, 6, "auto") is not a
