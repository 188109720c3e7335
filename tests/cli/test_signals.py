"""A command stopped by SIGTERM or SIGHUP shuts down cleanly (``simlab/cli/_signals.py``):
Python's default would end the process at once and leave its worker processes computing
(seen: loky workers of a killed ``simlab qualify`` still busy minutes later) and its
checkpoint lock in place."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simlab.cli._signals import Terminated, interrupt_exit_code, signals_as_interrupts


def test_sigterm_and_sighup_raise_terminated_inside_the_block_only():
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for s in (signal.SIGTERM, signal.SIGHUP):
        with pytest.raises(Terminated) as got, signals_as_interrupts():
            os.kill(os.getpid(), s)
            time.sleep(5)   # the handler runs at the next bytecode; never reached
        assert got.value.signum == s and isinstance(got.value, KeyboardInterrupt)
        assert interrupt_exit_code(got.value) == (signal.Signals(s).name, 128 + s)
    assert {s: signal.getsignal(s) for s in before} == before
    assert interrupt_exit_code(KeyboardInterrupt()) == ("SIGINT", 130)


def _children(pid: int) -> set[int]:
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process trees from /proc (Linux)")
def test_sigterm_stops_a_parallel_qualification_with_its_workers(tmp_path):
    cmd = [sys.executable, "-c", "import sys; from simlab.cli import main; sys.exit(main())", "qualify",
           "--method", "cluster_bootstrap", "--policy", "standard-coarse", "--n-jobs", "2", "--max-seconds",
           "100000", "--out", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "cp")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        workers: set[int] = set()
        while len(workers) < 2 and time.monotonic() < deadline:   # the pool is up (its workers busy)
            assert proc.poll() is None, proc.communicate()
            workers = _children(proc.pid)
            time.sleep(0.5)
        assert len(workers) >= 2, "no worker processes appeared"
        time.sleep(3)
        assert proc.poll() is None   # still qualifying (the run takes minutes)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted: stopped by SIGTERM" in err
    deadline = time.monotonic() + 20
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [w for w in workers if _alive(w)], "worker processes outlived their qualification"
    cp = list((tmp_path / "cp").iterdir())
    assert [p.name for p in cp] == ["bbb2e42340b6f41b.checkpoint.jsonl"]   # the lock is released
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.json"))


def test_an_interrupt_a_library_call_swallowed_still_stops_the_command(monkeypatch, capsys):
    """Ctrl-C during numba's compile lands in a ctypes callback, where Python prints "Exception
    ignored" and drops it; ``bench methods`` then recorded the failed compile and exited 0.  The
    handler notes the signal (``simlab.interrupts``): progress callbacks raise it again, and so
    does the front door when the command returns."""
    import simlab.cli.methods as command
    from simlab.cli import main
    from simlab.cli._output import log_to_stderr

    def swallowing(args):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler runs at the next bytecode; never reached
        except KeyboardInterrupt:
            pass  # lost, as in a ctypes callback
        return 0

    def reporting(args):
        swallowing(args)
        log_to_stderr(args)("next step")  # a long command's next progress line
        raise AssertionError("the progress line should have raised the interrupt")

    # the console script's SIGINT handler is Python's default (a pytest-xdist worker ignores SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        monkeypatch.setattr(command, "run_methods", swallowing)
        assert main(["methods"]) == 130
        assert capsys.readouterr().err.startswith("interrupted")
        monkeypatch.setattr(command, "run_methods", reporting)
        assert main(["methods"]) == 130
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        monkeypatch.undo()
        assert main(["methods", "--json"]) == 0  # the next command starts with no interrupt noted
    finally:
        signal.signal(signal.SIGINT, previous)
