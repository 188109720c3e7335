"""Resumable qualifications (studies.qualify.checkpoint): a run stopped at any point and
run again with the same checkpoint ends with the records of an uninterrupted run; finished
work is read back, not recomputed; a cut, corrupted or forged line is never trusted; counts
of another method version are never reused; a second run cannot share a checkpoint."""
from __future__ import annotations

import json

import pytest

from methods import registry
from methods.qualification import Axis, IntAxis, QualificationDomain, QualificationPolicy
from simlab.scenario import FixedSize
from studies.engine.durable import exclusive
from studies.engine.executor import SerialExecutor
from studies.qualify.run import qualify
from studies.qualify.checkpoint import Checkpoint, checkpoint_path
from studies.qualify.scenarios import task_cost


def small_policy() -> QualificationPolicy:
    dom = QualificationDomain(clusters=IntAxis(lo=10, hi=30, grid=(10, 30)),
                              cluster_sizes=(FixedSize(trials=1), FixedSize(trials=3)),
                              rho=Axis(lo=0.0, hi=0.1, grid=(0.0, 0.1)), margin=Axis(lo=0.03, hi=0.03, grid=(0.03,)),
                              baseline=Axis(lo=0.9, hi=1.0, grid=(0.9, 1.0)),
                              discordance=Axis(lo=0.05, hi=0.2, grid=(0.05, 0.2)))
    return QualificationPolicy(domain=dom, min_replications=300, max_replications=1200, seed=3, refine_evaluations=1)


METHODS = ("binomial_loss", "tango_score")


def _run(tmp_path=None, executor=None, names=METHODS):
    return qualify([registry.get(n) for n in names], small_policy(), out_dir=None, checkpoint=tmp_path,
                   executor=executor)


def _same(a, b) -> None:
    for x, y in zip(a.outcomes, b.outcomes, strict=True):
        assert x.record.scenarios == y.record.scenarios
        assert x.record.cells == y.record.cells and x.record.worst_case == y.record.worst_case


class NoWork(SerialExecutor):
    def imap(self, fn, tasks):
        raise AssertionError("a finished task was recomputed")


@pytest.fixture(scope="module")
def clean():
    run = _run()
    s = run.outcomes[1].record.scenarios                     # tango_score
    assert len(set(s.n_reps)) > 1 and "refine" in s.stage   # escalation and refinement happen
    return run


def _lines(tmp_path):
    return checkpoint_path(tmp_path, small_policy()).read_text().splitlines()


def test_a_complete_checkpoint_answers_every_task(clean, tmp_path):
    _same(_run(tmp_path), clean)
    n = len(_lines(tmp_path))
    _same(_run(tmp_path, executor=NoWork()), clean)   # nothing left to compute
    assert len(_lines(tmp_path)) == n                  # and nothing appended


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_a_run_stopped_anywhere_resumes_to_the_same_records(clean, tmp_path, keep):
    _run(tmp_path)
    path = checkpoint_path(tmp_path, small_policy())
    lines = path.read_text().splitlines(keepends=True)
    cut = max(2, int(len(lines) * keep))
    path.write_text("".join(lines[:cut]) + lines[cut][: len(lines[cut]) // 2])   # killed mid-write
    cp = Checkpoint(tmp_path, small_policy(), [registry.get(n) for n in METHODS])
    assert cp.bad_lines == 0 and len(cp.done) == cut - 1   # the cut line is dropped, the rest kept
    assert path.read_text().endswith("\n")
    _same(_run(tmp_path), clean)


def test_corrupted_or_impossible_lines_are_recomputed_not_trusted(clean, tmp_path):
    _run(tmp_path)
    path = checkpoint_path(tmp_path, small_policy())
    lines = path.read_text().splitlines()
    forged = json.loads(lines[3])
    forged["n_pass"] += 1                                   # checksum no longer matches
    sealed = json.loads(lines[4])
    sealed["n_pass"] = sealed["stop"] - sealed["start"] + 1   # more passes than replications
    from studies.qualify.checkpoint import _line_sum
    sealed["sum"] = _line_sum(sealed)
    lines[3], lines[4], lines[5] = json.dumps(forged), json.dumps(sealed), "{not json"
    path.write_text("\n".join(lines) + "\n")
    cp = Checkpoint(tmp_path, small_policy(), [registry.get(n) for n in METHODS])
    assert cp.bad_lines == 3 and "3 unreadable or inconsistent lines" in cp.describe()
    _same(_run(tmp_path), clean)


def test_counts_of_another_method_version_are_not_reused(clean, tmp_path):
    _run(tmp_path, names=("clustered_normal",))
    cp = Checkpoint(tmp_path, small_policy(), [registry.get(n) for n in METHODS])
    assert cp.done == {} and cp.other_lines > 0
    _same(_run(tmp_path), clean)


def test_a_method_whose_source_changed_gets_a_new_token(monkeypatch):
    from studies.qualify.checkpoint import method_token

    m = registry.get("cluster_t")
    before = method_token(m)
    ident = m.identity.as_dict()
    monkeypatch.setattr(type(m.identity), "as_dict", lambda self: {**ident, "source_sha256": "0" * 64})
    assert method_token(m) != before


def test_a_checkpoint_of_another_policy_is_refused(tmp_path):
    path = checkpoint_path(tmp_path, small_policy())
    path.write_text(json.dumps({"checkpoint": 1, "policy_sha256": "f" * 64}) + "\n")
    with pytest.raises(ValueError, match="line 1: not a format-1 checkpoint of policy"):
        _run(tmp_path)


def test_two_runs_cannot_share_a_checkpoint(tmp_path):
    path = checkpoint_path(tmp_path, small_policy())
    with exclusive(path.with_name(path.name + ".lock"), "held"):
        with pytest.raises(ValueError, match="in use by another run"):
            _run(tmp_path)


class CountingExecutor(SerialExecutor):
    """Serial, but records each round's batches as lists of their tasks' estimated costs."""

    def __init__(self):
        self.rounds: list[list[list[float]]] = []

    def imap(self, fn, tasks):
        tasks = list(tasks)
        self.rounds.append([[task_cost(policy, t) for _, t in batch] for policy, batch, _ in tasks])
        return super().imap(fn, tasks)


def test_a_checkpointed_run_saves_in_finer_batches_with_the_same_records(clean, tmp_path):
    """With a checkpoint each batch of a round costs at most 1/16 of the round (per
    worker) or is a single task, so a killed run loses little; without one a serial
    round is one batch."""
    from studies.qualify.run import CHECKPOINT_BATCHES_PER_WORKER as per_worker

    plain, kept = CountingExecutor(), CountingExecutor()
    _same(_run(executor=plain), clean)
    _same(_run(tmp_path, executor=kept), clean)
    assert len(plain.rounds[0]) == 1
    assert len(kept.rounds[0]) >= per_worker
    for batches in kept.rounds:
        total = sum(c for b in batches for c in b)
        for b in batches:
            assert len(b) == 1 or sum(b) <= total / min(per_worker, sum(map(len, batches))) * (1 + 1e-12)


def test_finished_ranges_are_the_tasks_saved_for_every_method(tmp_path):
    """What a resumed run's time estimate leaves out: a task counts as finished only when the
    checkpoint holds it for every method of the run; reading changes nothing."""
    from studies.qualify.checkpoint import finished_ranges

    both_methods = [registry.get(n) for n in METHODS]
    assert finished_ranges(tmp_path, small_policy(), both_methods) == set()
    _run(tmp_path)
    before = checkpoint_path(tmp_path, small_policy()).read_bytes()
    per_task: dict[tuple, set[str]] = {}
    for line in _lines(tmp_path)[1:]:
        r = json.loads(line)
        per_task.setdefault((tuple(r["point"]), r["start"], r["stop"]), set()).add(r["method"])
    both = finished_ranges(tmp_path, small_policy(), both_methods)
    assert both == {k for k, v in per_task.items() if len(v) == 2}
    alone = finished_ranges(tmp_path, small_policy(), [registry.get("tango_score")])
    assert both < alone     # tango_score escalates scenarios binomial_loss has settled
    assert checkpoint_path(tmp_path, small_policy()).read_bytes() == before
    other = small_policy().model_copy(update={"seed": 4})
    checkpoint_path(tmp_path, other).write_bytes(before)     # another policy's header
    with pytest.raises(ValueError, match="not a format-1 checkpoint of policy"):
        finished_ranges(tmp_path, other, both_methods)
