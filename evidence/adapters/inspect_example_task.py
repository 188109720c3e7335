"""Inspect AI tasks that run fully offline, for the benchmark, the tests and the README.

``inspect eval evidence/adapters/inspect_example_task.py@support -T arm=candidate --model
mockllm/candidate ...`` writes a normal ``.eval`` log: the solver sets ``state.output`` from
a hash of (arm, sample id, epoch) -- mockllm's ``generate()`` would download a tokenizer --
and a scorer grades it.  ``support`` has ``customers x cases`` samples with the customer
(and a ``segment``) in their metadata.  The other tasks are the ways real logs go wrong:
an errored epoch, two scorers, partial credit, unequal epochs between the arms, customers
only one arm ran, and a run cancelled part-way (it interrupts itself, as Ctrl-C would).

This module imports ``inspect_ai``; nothing in the evidence path imports it (Inspect runs
it by file path)."""
import asyncio
import hashlib
import os
import signal

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver


def passes(arm: str, sample_id, epoch: int, fail_one_in: int = 10) -> bool:
    """The deterministic outcome of one trial (tests recompute it)."""
    return hashlib.sha256(f"{arm}|{sample_id}|{epoch}".encode()).digest()[0] % fail_one_in != 0


@solver
def deterministic(arm: str = "baseline", fail: str = "", cancel_at: str = ""):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if fail and f"{state.sample_id}@{state.epoch}" == fail:
            raise RuntimeError("the refund tool crashed")
        if cancel_at and str(state.sample_id) == cancel_at:
            os.kill(os.getpid(), signal.SIGINT)
            # wait for the interrupt here: on a loaded machine the other samples could otherwise
            # all finish before Inspect handles it, and the log would read as a success
            await asyncio.sleep(30)
        ok = passes(arm, state.sample_id, state.epoch)
        state.output = ModelOutput.from_content(model="mockllm/model", content="yes" if ok else "no")
        return state
    return solve


@scorer(metrics=[accuracy()])
def says_yes():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=CORRECT if state.output.completion == "yes" else INCORRECT, metadata={"failed_checks": []})
    return score


@scorer(metrics=[accuracy()])
def strict():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=CORRECT if state.output.completion == "yes" and state.epoch > 1 else INCORRECT)
    return score


@scorer(metrics=[mean()])
def half_credit():
    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=0.5 if str(state.sample_id).endswith("1") else float(state.output.completion == "yes"))
    return score


def _samples(customers: int, cases: int, skip_customer: int | None = None) -> list[Sample]:
    return [Sample(id=f"case{c * cases + j}", input=f"refund question {c * cases + j}", target="yes",
                   metadata={"customer": f"cust{c}", "segment": "enterprise" if c % 2 else "smb"})
            for c in range(customers) if c != skip_customer for j in range(cases)]


@task
def support(arm: str = "baseline", customers: int = 40, cases: int = 3, epochs: int = 3):
    return Task(dataset=_samples(customers, cases), solver=deterministic(arm), scorer=says_yes(), epochs=epochs)


@task
def tiny(arm: str = "baseline"):
    return Task(dataset=_samples(4, 2), solver=deterministic(arm), scorer=says_yes(), epochs=3)


@task
def errored(arm: str = "baseline"):
    return Task(dataset=_samples(4, 2), solver=deterministic(arm, fail="case1@2"), scorer=says_yes(), epochs=3)


@task
def two_scorers(arm: str = "baseline"):
    return Task(dataset=_samples(4, 2), solver=deterministic(arm), scorer=[says_yes(), strict()], epochs=3)


@task
def partial(arm: str = "baseline"):
    return Task(dataset=_samples(4, 2), solver=deterministic(arm), scorer=half_credit(), epochs=3)


@task
def unequal(arm: str = "baseline"):
    return Task(dataset=_samples(4, 2), solver=deterministic(arm), scorer=says_yes(),
                epochs=3 if arm == "baseline" else 2)


@task
def one_arm(arm: str = "baseline"):
    return Task(dataset=_samples(4, 2, skip_customer=3 if arm == "candidate" else None), solver=deterministic(arm),
                scorer=says_yes(), epochs=3)


@task
def cancelled(arm: str = "baseline"):
    return Task(dataset=_samples(4, 2), solver=deterministic(arm, cancel_at="case5"), scorer=says_yes(), epochs=3)
