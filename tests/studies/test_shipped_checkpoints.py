"""Checkpoints shipped in results/checkpoints (README there): the finished part of a
qualification run too long for one work session, committed so that the next session -- on
another machine, maybe -- resumes it with ``simlab qualify ... --checkpoint results/checkpoints``.

Such counts will become a record, so nothing in them is taken on trust: each file is a
checkpoint of a built-in policy, every line is whole and passes its checksum, every line
belongs to a current built-in method (a method edit voids its lines: the test then says so,
and the file must be deleted or the edit reverted), and the cheapest tasks of each method
are recomputed from (policy seed, scenario) on the per-scenario path -- not the batched
engine that wrote them -- and give the same counts."""
from __future__ import annotations

from pathlib import Path

from methods import registry
from methods.qualification import load_record, named_policy, policy_names, record_paths
from studies.qualify.run import ScenarioPoint, Task, method_estimand, run_task
from studies.qualify.checkpoint import Checkpoint, method_token
from studies.qualify.scenarios import method_key, task_cost

RESULTS = Path(__file__).resolve().parents[2] / "results"
CHECKPOINTS = RESULTS / "checkpoints"
FILES = sorted(CHECKPOINTS.glob("*.checkpoint.jsonl"))
RECOMPUTED_PER_METHOD = 2


def _known_methods() -> list:
    """Every built-in method, and the wrapped variants the shipped records name."""
    found = {method_key(m): m for m in map(registry.get, registry.names())}
    for path in record_paths(directory=RESULTS / "qualification"):
        m = load_record(path).method.resolve()
        found.setdefault(method_key(m), m)
    return list(found.values())


def _policy_of(path):
    prefix = path.name.split(".")[0]
    named = [named_policy(n) for n in policy_names()]
    match = [p for p in named if p.sha256.startswith(prefix)]
    assert len(match) == 1, f"{path.name}: not the checkpoint of a built-in policy"
    return match[0]


def test_checkpoints_folder_is_documented():
    assert (CHECKPOINTS / "README.md").is_file()


def test_shipped_checkpoints_are_intact_current_and_reproducible(tmp_path):
    methods = _known_methods()
    for path in FILES:
        _check(path, methods, tmp_path)


def _check(path, methods, tmp_path):
    text = path.read_text()
    assert text.endswith("\n"), f"{path.name}: its last line is cut (copied mid-write?)"
    policy = _policy_of(path)
    (tmp_path / path.name).write_text(text)          # Checkpoint may append a header: never to the repo
    cp = Checkpoint(tmp_path, policy, methods)
    assert cp.bad_lines == 0, f"{path.name}: {cp.bad_lines} unreadable or inconsistent lines"
    assert cp.other_lines == 0, (f"{path.name}: {cp.other_lines} lines of no current built-in method -- a method "
                                 "edit voided them; delete the file (its run starts again) or revert the edit")
    assert cp.done, f"{path.name}: no finished task"
    by_token = {method_token(m): m for m in methods}
    for token in sorted({key[0] for key in cp.done}):
        m = by_token[token]
        mine = [key for key in cp.done if key[0] == token]
        tasks = [(Task(ScenarioPoint(*key[1]), (method_key(m),), key[2], key[3]), key) for key in sorted(mine)]
        tasks.sort(key=lambda tk: task_cost(policy, tk[0]))
        for task, key in tasks[:RECOMPUTED_PER_METHOD]:
            got = run_task(policy, task, (method_estimand(m, policy),))
            assert got[method_key(m)] == cp.done[key], (m.label, key)
