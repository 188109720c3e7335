"""A qualification or certification stops at its deadline (probe round 6 of issue 29: certify
compared --max-seconds with the low end of a "5 min to 79 min" estimate and then ran on for as
long as it took): before a round whose time, priced from the rounds before it, would overrun,
or at the end of a batch once the deadline has passed; what finished stays in a checkpoint."""
from __future__ import annotations

import json
import time

import pytest

from methods import registry
from studies.qualify import DeadlineReached, qualify
from studies.qualify.escalation import Escalation
from studies.qualify.run import RoundRunner
from studies.qualify.scenarios import ScenarioPoint, Task, method_key, task_cost
from studies.engine.executor import as_executor
from simlab.cli import main

from tests.studies.test_qualify_batch import small_policy


def test_a_deadline_already_past_stops_before_the_first_round():
    with pytest.raises(DeadlineReached, match=r"stopped before grid round 1 \(\d+ scenarios at 300 replications\): "
                                              r"0 s of the time limit left"):
        qualify([registry.get("cluster_t")], small_policy(), out_dir=None, deadline=time.monotonic() - 1.0)


def _tasks(policy, n=4):
    key = (method_key(registry.get("cluster_t")),)
    return [Task(ScenarioPoint(10, 0, 0.0, 0.03, 0, 0.9, 0.05 * (i + 1)), key, 0, 300) for i in range(n)]


def test_a_round_priced_over_the_time_left_is_not_started():
    pol = small_policy()
    tasks = _tasks(pol)
    cost = sum(task_cost(pol, t) for t in tasks)
    esc = Escalation([registry.get("cluster_t")], pol, deadline=time.monotonic() + 1000.0)
    esc._rate = 1.0 / cost          # the rounds before it: one second for this round's work
    esc._check_round(tasks, "grid round 2")   # 1 s of 1000: it starts
    esc._rate = 2000.0 / cost       # 2000 s of 1000: it does not
    with pytest.raises(DeadlineReached, match=r"stopped before grid round 2 \(estimated 2e\+03 s from the rounds "
                                              r"before it\): 1000 s of the time limit left"):
        esc._check_round(tasks, "grid round 2")
    assert Escalation([registry.get("cluster_t")], pol)._check_round(tasks, "any") is None   # no deadline


def test_a_round_stops_at_the_first_batch_end_past_the_deadline(tmp_path):
    """The checkpoint keeps the batches that finished."""
    from studies.qualify.checkpoint import Checkpoint

    pol = small_policy()
    tasks = _tasks(pol, 8)
    ex, _ = as_executor(None, 1)
    saved = Checkpoint(tmp_path, pol, [registry.get("cluster_t")])
    runner = RoundRunner(ex, batched=False, checkpoint=saved, deadline=time.monotonic() - 1.0)
    with pytest.raises(DeadlineReached, match=r"stopped at the time limit with 1/8 scenarios of a round done"):
        runner.run(pol, tasks, ("trial_weighted",))
    kept = Checkpoint(tmp_path, pol, [registry.get("cluster_t")])
    assert [kept.lookup(t) is not None for t in tasks] == [True] + [False] * 7


def test_certify_stopped_at_its_deadline_says_so_with_the_limits_field(monkeypatch, capsys, tmp_path):
    import simlab.cli.certify as certify_cli

    monkeypatch.setattr(certify_cli, "deadline_of", lambda args: time.monotonic())   # the limit is reached at once
    rc = main(["certify", "--method", "cluster_t", "--clusters", "30", "--trials", "3", "--margin", "0.03",
               "--rho-max", "0.1",
               "--engine", "simulation", "--out", str(tmp_path), "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert rc == 2 and err["field"] == "--max-seconds"
    assert err["message"].startswith("certifying cluster_t at K=30, M=3: stopped before grid round 1")
    assert "nothing was certified; reduce the work or raise --max-seconds" in err["message"]
    assert not list(tmp_path.iterdir())
