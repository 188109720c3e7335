"""``--device`` on the commands that simulate studies: same JSON figures on cpu and gpu
(the GPU under numba's CUDA simulator where none is installed)."""
from __future__ import annotations

import json

import pytest

from simlab import gpu
from simlab.cli import build_parser, main
from simlab.cli._output import UsageError

FALSE_PASS = ["false-pass", "--method", "cluster_t", "--clusters", "12", "--trials", "2", "--rho", "0",
              "--cells", "0.9,0.06,0.02,0.02", "--simulate", "--reps", "300", "--seed", "3", "--json"]


def _json(capsys, argv) -> dict:
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_device_option_is_on_the_simulating_commands():
    parser = build_parser()
    assert parser.parse_args(["false-pass", "--method", "cluster_t", "--device", "gpu"]).device == "gpu"
    assert parser.parse_args(["study", "run", "spec.toml"]).device == "cpu"
    with pytest.raises(UsageError, match="--device"):
        parser.parse_args(["study", "run", "spec.toml", "--device", "tpu"])


@pytest.mark.skipif(not gpu.available(), reason=f"no GPU and no CUDA simulator: {gpu.why_unavailable()}")
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_false_pass_same_figures_on_gpu(capsys):
    cpu = _json(capsys, FALSE_PASS)
    got = _json(capsys, FALSE_PASS + ["--device", "gpu"])
    assert got == cpu and cpu["replications"] == 300


def test_gpu_refusal_is_a_one_line_error(capsys):
    code = main(["false-pass", "--method", "paired_wald", "--simulate", "--reps", "10", "--device", "gpu", "--json"])
    assert code == 2
    assert "need tables" in json.loads(capsys.readouterr().out)["error"]["message"]
