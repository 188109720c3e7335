"""The front door for the simulator: --json gives exactly one JSON object; bad input is a
clear error naming the field."""
import json

import pytest

from simlab.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_simulate_json_summary(capsys):
    p = _json(capsys, ["simulate", "--reps", "500", "--seed", "3", "--json"])
    assert p["replications"] == 500 and p["clusters"] == 30
    assert p["trial_pairs"] == 500 * 30 * 3
    assert set(p["cell_rates"]) == {"n11", "n10", "n01", "n00"}
    assert p["true_difference_trial"] == pytest.approx(-0.01)


def test_simulate_same_seed_same_output(capsys):
    a = _json(capsys, ["simulate", "--reps", "200", "--seed", "9", "--json"])
    b = _json(capsys, ["simulate", "--reps", "200", "--seed", "9", "--json"])
    assert a == b


def test_simulate_from_rates_and_text_output(capsys):
    assert main(["simulate", "--reps", "100", "--baseline", "0.9", "--difference", "-0.03",
                 "--discordance", "0.07"]) == 0
    out = capsys.readouterr().out
    assert "true_difference_trial" in out and "-0.03" in out


def test_simulate_bad_input_names_the_field(capsys):
    assert main(["simulate", "--rho", "1.5", "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]["message"]
    assert "rho" in err
    assert main(["simulate", "--cells", "0.5,0.5,0.5,0.5"]) == 2
    assert "cells must sum to 1" in capsys.readouterr().err


def test_bench_simulate_json_reports_ratio(capsys):
    p = _json(capsys, ["bench", "simulate", "--reps", "20000", "--numpy-reps", "5000", "--json"])
    names = [r["name"] for r in p["rows"]]
    assert names == ["numpy_vectorised", "simlab_numba_1thread"]
    assert p["ratio_vs_numpy"] > 0


def test_bench_simulate_defaults_fit_the_default_memory_limit(capsys, monkeypatch):
    """`simlab bench simulate` with no options was refused (5.59 GiB for 2,000,000
    replications held at once); both sides stream in chunks, so a chunk is what is held."""
    import studies.bench
    from simlab.cli import bench
    from simlab.cli.simulate import simulate_memory

    monkeypatch.delenv("SIMLAB_MAX_MEMORY", raising=False)
    seen = {}

    def fake(**kwargs):
        seen.update(kwargs)
        return {"clusters": 30, "trials": 3, "rho": 0.1, "cells": [0.9, 0.04, 0.03, 0.03], "rows": [],
                "ratio_vs_numpy": 1.0}

    monkeypatch.setattr(studies.bench, "bench_simulate", fake)
    assert main(["bench", "simulate", "--json"]) == 0
    assert seen["reps"] == 2_000_000 and seen["chunk_size"] == bench.SIMULATE_CHUNK
    assert seen["numpy_chunk"] == bench.NUMPY_CHUNK
    assert simulate_memory(2_000_000, 30) > 4 << 30 > simulate_memory(bench.SIMULATE_CHUNK, 30)
    capsys.readouterr()


def test_simulate_draws_in_chunks_with_progress_and_the_tables_of_one_call(capsys):
    """Issue 29.4: a long draw is priced by a pilot of its first replications, shows progress, and its
    chunks give exactly the tables of one call (counter-based draws)."""
    import numpy as np

    from simlab.cli import build_parser
    from simlab.cli._args import scenario_from_args
    from simlab.cli.simulate import draw_tables
    from simlab.generate import TableGenerator, simulate_tables

    args = build_parser().parse_args(["simulate", "--reps", "97", "--seed", "5"])
    scenario = scenario_from_args(args)
    chunked = draw_tables(TableGenerator(scenario, 5), 97, args, "simulate")
    err = capsys.readouterr().err
    assert "estimated" in err and "97/97 replications" in err and err.count("replications") == 20
    assert np.array_equal(chunked, simulate_tables(scenario, 5, 97))
