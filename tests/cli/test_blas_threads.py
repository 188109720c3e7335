"""The console script runs OpenBLAS on one thread unless the user chose otherwise; library
callers of ``main(argv)`` keep their environment (``simlab/cli/__init__``, "BLAS threads")."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from simlab.cli import BLAS_THREADS_ENV, main

# the console script's path through main(): argv is None; prints what numpy then sees
SCRIPT = ("import os, sys; sys.argv = ['simlab', 'methods']; from simlab.cli import main; "
          "main(); import numpy; print('BLAS', os.environ.get('{env}'))").format(env=BLAS_THREADS_ENV)


def _console(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != BLAS_THREADS_ENV}
    if env_value is not None:
        env[BLAS_THREADS_ENV] = env_value
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("given, seen", [(None, "BLAS 1"), ("3", "BLAS 3")])
def test_the_console_script_sets_one_blas_thread_unless_the_user_chose(given, seen):
    assert _console(given) == seen


def test_a_library_caller_keeps_its_environment(monkeypatch, capsys):
    monkeypatch.delenv(BLAS_THREADS_ENV, raising=False)
    assert main(["methods"]) == 0
    capsys.readouterr()
    assert BLAS_THREADS_ENV not in os.environ
