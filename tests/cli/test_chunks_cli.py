"""``simlab study run`` on an interrupted run's chunks (issue 29.4): a truncated chunk, one
with a flipped byte and one of another task are each reported by name with the reason and
computed again -- never a ``zipfile.BadZipFile`` traceback -- and the dataset equals a
clean run's."""
from __future__ import annotations

import json

from simlab.cli import main
from studies.datasets import open_dataset, same_data
from studies.engine.runner import run_study
from studies.engine.spec import parse_spec

SPEC = {"name": "chunks", "methods": ["clustered_normal", "paired_wald"],
        "scenario": {"clusters": 10, "trials": 2, "rho": 0.1, "baseline": 0.9, "discordance": 0.1,
                     "difference": -0.03},
        "grid": {"difference": [-0.03, 0.0]}, "replications": 2000, "seed": 11}
CHUNK = 500  # 2 scenarios x 4 chunks


def test_damaged_and_foreign_chunks_are_named_and_recomputed(tmp_path, capsys):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    work = tmp_path / "work"
    clean = run_study(parse_spec(SPEC), chunk_size=CHUNK, work_dir=work, keep_chunks=True)  # the chunks stay
    chunks = sorted(next(work.iterdir()).glob("t*.npz"))
    assert len(chunks) == 8
    chunks[0].write_bytes(chunks[0].read_bytes()[:100])       # truncated: an interrupted copy
    data = bytearray(chunks[1].read_bytes())
    data[len(data) // 2] ^= 0xFF                              # one flipped byte in the data
    chunks[1].write_bytes(bytes(data))
    chunks[2].write_bytes(chunks[3].read_bytes())             # another task's chunk under this one's name

    out = tmp_path / "study.nc"
    rc = main(["study", "run", str(spec_file), "--work-dir", str(work), "--chunk-size", str(CHUNK), "--out", str(out),
               "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    said = [line for line in captured.err.splitlines() if "rejected" in line]
    assert any(f"chunk {chunks[0]} rejected (damaged or unreadable" in line for line in said), said
    assert any(f"chunk {chunks[1]} rejected (" in line for line in said), said
    assert any(f"chunk {chunks[2]} rejected (belongs to" in line for line in said), said
    assert all(line.endswith("computing it again") for line in said) and len(said) == 3
    payload = json.loads(captured.out)
    assert payload["tasks_resumed"] == 5 and same_data(open_dataset(out), clean)


def test_a_damaged_run_record_is_named_and_written_again(tmp_path, capsys):
    """Probe round 6: a truncated ``run.json`` in the work folder was passed over in silence."""
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    work = tmp_path / "work"
    clean = run_study(parse_spec(SPEC), chunk_size=CHUNK, work_dir=work, keep_chunks=True)
    meta = next(work.iterdir()) / "run.json"
    whole = meta.read_bytes()
    meta.write_bytes(whole[:20])
    out = tmp_path / "study.nc"
    rc = main(["study", "run", str(spec_file), "--work-dir", str(work), "--chunk-size", str(CHUNK), "--out", str(out),
               "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    said = [line for line in captured.err.splitlines() if "run.json" in line]
    assert len(said) == 1 and f"{meta}: damaged (JSONDecodeError" in said[0], said
    assert said[0].endswith("written again (the chunks are checked one by one)")
    assert json.loads(captured.out)["tasks_resumed"] == 8 and same_data(open_dataset(out), clean)
