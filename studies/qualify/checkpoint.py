"""Resumable qualifications: a checkpoint file of finished tasks.

A task's counts are a pure function of the policy (seed, sampler), the scenario, the
method's identity and the replication range (``studies.qualify.tasks``).  So a
qualification that stops -- killed, out of time, a machine lost -- can be run again with the
same checkpoint: the finished tasks are read back instead of run, the others run, and the
records are identical to those of an uninterrupted run (``tests/studies/
test_qualify_checkpoint.py``).  The escalation and refinement decisions follow from the
counts, so the second run asks for the same tasks in the same order.

File ``<dir>/<policy sha256 prefix>.checkpoint.jsonl``: a header line naming the policy,
then one line per finished (task, method): the method's token (a hash of its registry key
and identity: version, options and source sha256, so a changed method never reuses an old
count), the scenario point, the replication range, the counts and a checksum of the line.
Lines are appended and fsynced as each batch finishes.  Nothing is trusted blindly (as with
``studies.engine.durable``'s chunks): a last line cut short by a crash is dropped, and a line that
is unreadable, fails its checksum or holds impossible counts is reported and its task
recomputed; a header of another policy is an error.  ``studies.engine.durable.exclusive`` keeps a
second run off the same checkpoint.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from simlab.hashing import short
from methods.qualification import QualificationPolicy

from studies.qualify.scenarios import Task, method_key

FORMAT = 1


def method_token(method) -> str:
    """A method's key and identity, hashed: equal tokens give equal counts."""
    text = json.dumps([repr(method_key(method)), method.identity.as_dict()], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def checkpoint_path(directory: str | Path, policy: QualificationPolicy) -> Path:
    return Path(directory) / f"{short(policy.sha256, 16)}.checkpoint.jsonl"


def _line_sum(row: dict) -> str:
    body = {k: v for k, v in row.items() if k != "sum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def _counts(row: dict) -> tuple[tuple, tuple[int, int]] | None:
    """The key and counts of a task line, or None when it is malformed, its checksum fails
    or its counts cannot be a task's (more passes and inconclusives than replications)."""
    try:
        if row.get("sum") != _line_sum(row):
            return None
        start, stop, x, inc = (int(row[k]) for k in ("start", "stop", "n_pass", "n_inconclusive"))
        key = (str(row["method"]), tuple(float(v) if isinstance(v, float) else int(v) for v in row["point"]),
               start, stop)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    if not (0 <= start < stop and x >= 0 and inc >= 0 and x + inc <= stop - start):
        return None
    return key, (x, inc)


def _parse(path: Path, text: str, policy_sha256: str, mine: set[str]) -> tuple[dict, int, int]:
    """``(done, other_lines, bad_lines)`` of a checkpoint's text (a cut last line ignored):
    the counts of the methods whose tokens are ``mine``, keyed (token, point, start, stop)."""
    lines = text.split("\n")[:-1]
    try:
        head = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        head = {}
    if head.get("checkpoint") != FORMAT or head.get("policy_sha256") != policy_sha256:
        raise ValueError(f"checkpoint {path}, line 1: not a format-{FORMAT} checkpoint of policy "
                         f"{short(policy_sha256, 16)}; use another --checkpoint directory")
    done: dict[tuple, tuple[int, int]] = {}
    other = bad = 0
    for line in lines[1:]:
        try:
            got = _counts(json.loads(line))
        except json.JSONDecodeError:
            got = None
        if got is None:
            bad += 1
        elif got[0][0] in mine:
            done[got[0]] = got[1]
        else:
            other += 1
    return done, other, bad


def finished_ranges(directory: str | Path, policy: QualificationPolicy, methods: list) -> set[tuple]:
    """``(point, start, stop)`` of every task whose counts the checkpoint in ``directory``
    holds for all of ``methods``: what a resumed run reads back instead of computing (for
    its time estimate).  Reads only; no file means nothing finished."""
    path = checkpoint_path(directory, policy)
    if not path.exists() or not path.stat().st_size:
        return set()
    tokens = [method_token(m) for m in methods]
    done = _parse(path, path.read_text(errors="replace"), policy.sha256, set(tokens))[0]
    have: dict[tuple, set[str]] = {}
    for token, point, start, stop in done:
        have.setdefault((point, start, stop), set()).add(token)
    return {key for key, got in have.items() if got >= set(tokens)}


class Checkpoint:
    """Finished task counts of one policy's qualification, read from and appended to
    ``path``.  ``lookup(task)`` gives the counts of every method of ``task`` (or None);
    ``save(finished)`` appends them.  Hold ``exclusive`` on the path's lock while in use."""

    def __init__(self, directory: str | Path, policy: QualificationPolicy, methods: list):
        self.path = checkpoint_path(directory, policy)
        self.policy_sha256 = policy.sha256
        self.tokens = {method_key(m): method_token(m) for m in methods}
        self.done: dict[tuple, tuple[int, int]] = {}
        self.other_lines = 0   # lines of other method identities (not used)
        self.bad_lines = 0     # unreadable or inconsistent lines (their tasks are recomputed)
        self.read_back = 0     # tasks answered from the file
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and self.path.stat().st_size:
            self._load()
        else:
            self._append([{"checkpoint": FORMAT, "policy_sha256": policy.sha256}])

    def _load(self) -> None:
        text = self.path.read_text(errors="replace")
        if not text.endswith("\n"):   # a crash cut the last line: drop it (its task is redone)
            cut = text.rfind("\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(len(text[:cut].encode()))
        self.done, self.other_lines, self.bad_lines = _parse(self.path, text, self.policy_sha256,
                                                            set(self.tokens.values()))

    def _append(self, rows: list[dict]) -> None:
        with open(self.path, "a") as f:
            for row in rows:
                f.write(json.dumps(row, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def lookup(self, task: Task) -> dict[tuple, tuple[int, int]] | None:
        out = {}
        for k in task.methods:
            c = self.done.get((self.tokens[k], task.spec.point, task.start, task.stop))
            if c is None:
                return None
            out[k] = c
        self.read_back += 1
        return out

    def save(self, finished: list[tuple[Task, dict[tuple, tuple[int, int]]]]) -> None:
        rows = []
        for task, result in finished:
            for k, (x, inc) in result.items():
                self.done[(self.tokens[k], task.spec.point, task.start, task.stop)] = (x, inc)
                point = [v.item() if hasattr(v, "item") else v for v in task.spec.point]   # numpy scalars
                row = {"method": self.tokens[k], "point": point, "start": int(task.start),
                       "stop": int(task.stop), "n_pass": int(x), "n_inconclusive": int(inc)}
                row["sum"] = _line_sum(row)
                rows.append(row)
        if rows:
            self._append(rows)

    def describe(self) -> str:
        extra = f"; {self.other_lines} lines of other method versions ignored" if self.other_lines else ""
        if self.bad_lines:
            extra += f"; {self.bad_lines} unreadable or inconsistent lines ignored (their work is redone)"
        return f"checkpoint {self.path}: {len(self.done)} finished (task, method) counts{extra}"
