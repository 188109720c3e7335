"""`simlab bench latency` builds a command every method can answer: a judge-corrected method's
interval is given a calibration set (it used to end the bench with a traceback)."""
from __future__ import annotations

import subprocess

from studies.bench.latency import CALIBRATION, TABLES, _calibration, simlab_command


def test_judge_corrected_intervals_get_a_calibration_set_and_run():
    assert _calibration("clustered_normal") == ()
    assert _calibration("judge_corrected") == CALIBRATION
    argv = [*simlab_command(), "interval", "--method", "judge_corrected", *TABLES, *_calibration("judge_corrected")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "judge_corrected" in done.stdout
