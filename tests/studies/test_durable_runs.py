"""No lost or trusted-blindly work (issue 14.4): runs killed at random points resume to
the clean result; corrupted, foreign or inconsistent chunk files are detected and
recomputed; the output path is checked before any work; a second run on the same
output or work directory is refused at once; chunks go only after the output is written."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from studies.engine import tally
from studies.datasets import open_dataset, same_data
from studies.engine.durable import exclusive, load_chunk, save_chunk
from studies.engine.runner import run_key, run_study
from studies.engine.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
SPEC = {"name": "durable", "methods": ["clustered_normal", "paired_wald"],
        "scenario": {"clusters": 10, "trials": 2, "rho": 0.1, "baseline": 0.9, "discordance": 0.1,
                     "difference": -0.03},
        "grid": {"difference": [-0.03, 0.0]}, "replications": 6000, "seed": 11}
CHUNK = 500  # 2 scenarios x 12 chunks


@pytest.fixture(scope="module")
def clean():
    return run_study(parse_spec(SPEC), chunk_size=CHUNK)


def _runner_code(spec_file: Path, work: Path, out: Path, kill_after: int | None = None) -> str:
    hook = "None"
    if kill_after is not None:
        hook = f"lambda done, total: done == {kill_after} and os.kill(os.getpid(), signal.SIGKILL)"
    return textwrap.dedent(f"""
        import os, signal
        from studies.engine.spec import load_spec
        from studies.engine.runner import run_study
        run_study(load_spec({str(spec_file)!r}), chunk_size={CHUNK}, work_dir={str(work)!r}, out={str(out)!r},
                  on_task_done={hook})
    """)


def _spawn(code: str) -> subprocess.Popen:
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_killed_at_random_points_then_resumed_equals_a_clean_run(tmp_path, clean):
    """SIGKILL at seeded random delays (anywhere: start-up, a chunk write, the output
    write), then a run to completion: the output equals the clean run, and no chunk,
    temporary or lock file is left behind."""
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    work, out = tmp_path / "work", tmp_path / "out" / "study.nc"
    code = _runner_code(spec_file, work, out)
    rng = np.random.default_rng(20261130)
    for delay in rng.uniform(0.5, 5.0, size=3):
        proc = _spawn(code)
        time.sleep(float(delay))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=120)
        if out.exists():  # a finished (or killed after its output rename) run left a whole file
            assert same_data(open_dataset(out), clean)
    proc = _spawn(code)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert same_data(open_dataset(out), clean)
    assert not [p for p in work.rglob('*') if p.is_file()]  # chunks, run.json and lock removed
    assert not [p for p in out.parent.iterdir() if p.name != out.name]  # no .tmp or .lock left


def test_killed_after_chunks_resumes_and_rejects_corrupt_chunks(tmp_path, clean):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    work, out = tmp_path / "work", tmp_path / "study.nc"
    proc = _spawn(_runner_code(spec_file, work, out, kill_after=6))
    proc.communicate(timeout=300)
    assert proc.returncode == -9 and not out.exists()
    run_dir = next(work.iterdir())
    chunks = sorted(run_dir.glob("t*.npz"))
    assert len(chunks) == 6
    key = run_key(parse_spec(SPEC), CHUNK)
    task_of = {c: tuple(int(x) for x in c.stem[1:].split("_")) for c in chunks}

    # 1. right shape, wrong values, counts still consistent: the checksum catches it
    with np.load(chunks[0]) as z:
        arr, meta = z["tally"].copy(), z["meta"].copy()
    arr[..., tally.F["n_pass"]] += 1
    arr[..., tally.F["n_fail"]] -= 1
    np.savez(chunks[0], tally=arr, meta=meta)
    # 2. wrong values with a matching checksum: the count check catches it (n_reps off)
    with np.load(chunks[1]) as z:
        arr2 = z["tally"].copy()
    arr2[..., tally.F["n_reps"]] -= 7
    arr2[..., tally.F["n_fail"]] -= 7
    save_chunk(chunks[1], arr2, key, task_of[chunks[1]])
    # 3. another task's chunk under this task's name: the task key catches it
    chunks[3].write_bytes(chunks[2].read_bytes())
    # 4. garbage
    chunks[4].write_bytes(b"not a chunk")

    rejected = []
    ds = run_study(parse_spec(SPEC), chunk_size=CHUNK, work_dir=work, out=out,
                   on_rejected=lambda p, why: rejected.append((p.name, why)))
    why = dict(rejected)
    assert set(why) == {chunks[i].name for i in (0, 1, 3, 4)}
    assert why[chunks[0].name] == "checksum mismatch"
    assert "replications" in why[chunks[1].name]
    assert why[chunks[3].name].startswith("belongs to run")
    assert why[chunks[4].name].startswith("damaged or unreadable")
    assert ds.attrs["run_tasks_resumed"] == 2
    assert same_data(ds, clean) and same_data(open_dataset(out), clean)
    assert not run_dir.exists()


def test_every_truncation_and_flipped_byte_of_a_chunk_is_rejected_or_harmless(tmp_path):
    """A damaged chunk file (an interrupted copy, a bad disk) never raises (it used to end
    every rerun with zipfile.BadZipFile): cut at any length it is rejected; with any one
    byte flipped it is rejected, or -- a byte the zip format does not check, outside the
    data -- read back as exactly the tallies that were saved."""
    arr = np.arange(3 * tally.NF, dtype=np.int64).reshape(3, tally.NF)
    good = tmp_path / "good.npz"
    save_chunk(good, arr, "run-a", (0, 0, 10))
    data = good.read_bytes()
    bad = tmp_path / "bad.npz"
    for n in range(len(data)):
        bad.write_bytes(data[:n])
        got, why = load_chunk(bad, "run-a", (0, 0, 10), arr.shape)
        assert got is None and why, n
    accepted = 0
    for i in range(len(data)):
        flipped = bytearray(data)
        flipped[i] ^= 0xFF
        bad.write_bytes(bytes(flipped))
        got, why = load_chunk(bad, "run-a", (0, 0, 10), arr.shape)
        if got is None:
            assert why, i
        else:
            accepted += 1
            assert why == "" and np.array_equal(got, arr), i
    assert accepted < len(data) // 4  # almost every byte is checked (CRC, checksum, keys)


def test_chunk_round_trip_and_foreign_run():
    arr = np.arange(2 * tally.NF, dtype=np.int64).reshape(2, tally.NF)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "c.npz"
        save_chunk(p, arr, "run-a", (0, 0, 10))
        got, why = load_chunk(p, "run-a", (0, 0, 10), arr.shape)
        assert why == "" and np.array_equal(got, arr)
        assert load_chunk(p, "run-b", (0, 0, 10), arr.shape)[1].startswith("belongs to run run-a")
        assert load_chunk(p, "run-a", (0, 0, 10), (3, tally.NF))[1].startswith("shape")
        assert not [q for q in Path(d).iterdir() if q.name != "c.npz"]


def test_output_path_is_checked_before_any_work(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    calls = []
    with pytest.raises(ValueError, match="is not a directory"):
        run_study(parse_spec(SPEC), chunk_size=CHUNK, out=blocker / "study.nc",
                  on_task_done=lambda d, t: calls.append(d))
    with pytest.raises(ValueError, match="is a directory"):
        run_study(parse_spec(SPEC), chunk_size=CHUNK, out=tmp_path, on_task_done=lambda d, t: calls.append(d))
    assert calls == []


def test_concurrent_runs_on_one_output_or_work_dir_are_refused(tmp_path):
    spec = parse_spec(SPEC)
    out = tmp_path / "study.nc"
    with exclusive(out.with_name(f".{out.name}.lock"), "output"):
        with pytest.raises(ValueError, match=f"output {out} is in use by another run \\(pid {os.getpid()}"):
            run_study(spec, chunk_size=CHUNK, out=out)
    run_dir = tmp_path / "work" / run_key(spec, CHUNK)
    with exclusive(run_dir / ".lock", "work"):
        with pytest.raises(ValueError, match="work directory .* is in use by another run"):
            run_study(spec, chunk_size=CHUNK, work_dir=tmp_path / "work")
    # a lock whose holder died is no obstacle (the kernel released it)
    code = (f"import os, signal\nfrom studies.engine.durable import exclusive\n"
            f"with exclusive({str(run_dir / '.lock')!r}, 'w'):\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == -9
    assert (run_dir / ".lock").exists()
    ds = run_study(spec, chunk_size=CHUNK, work_dir=tmp_path / "work", out=out)
    assert int(ds.n_reps.min()) == 6000 and out.exists()


def test_chunks_survive_a_failed_output_write(tmp_path, monkeypatch):
    """If writing the output fails, the chunks stay and the next run resumes from them."""
    import studies.datasets as datasets

    spec = parse_spec(SPEC)
    work, out = tmp_path / "work", tmp_path / "study.nc"

    def broken(ds, path, compress=False):
        raise OSError("disk full")

    monkeypatch.setattr(datasets, "save_dataset", broken)
    with pytest.raises(OSError, match="disk full"):
        run_study(spec, chunk_size=CHUNK, work_dir=work, out=out)
    run_dir = work / run_key(spec, CHUNK)
    assert len(list(run_dir.glob("t*.npz"))) == 24 and not out.exists()
    monkeypatch.undo()
    ds = run_study(spec, chunk_size=CHUNK, work_dir=work, out=out)
    assert ds.attrs["run_tasks_resumed"] == 24 and out.exists() and not run_dir.exists()


def test_a_dead_writers_temporary_is_removed_and_a_live_ones_kept(tmp_path):
    """A writer killed between creating its temporary and renaming it leaves
    ``.<name>.<pid>.tmp``; the next write removes it if that pid is dead, and keeps a
    temporary whose writer is still alive."""
    from studies.datasets import save_json

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "result.json"
    stale = tmp_path / f".result.json.{dead.pid}.tmp"
    live = tmp_path / f".result.json.{os.getppid()}.tmp"
    stale.write_text("partial")
    live.write_text("in progress")
    save_json({"a": 1}, out)
    assert json.loads(out.read_text()) == {"a": 1}
    assert not stale.exists()
    assert live.exists()
