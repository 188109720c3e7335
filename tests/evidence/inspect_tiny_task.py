"""A tiny Inspect AI task that runs fully offline: its solver sets ``state.output`` from a
hash of (arm, sample id, epoch) -- mockllm's generate() would download a tokenizer -- and a
custom scorer grades it, so ``inspect eval`` writes a normal ``.eval`` log."""
import hashlib
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver


@solver
def deterministic(arm: str = "baseline"):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        h = hashlib.sha256(f"{arm}|{state.sample_id}|{state.epoch}".encode()).digest()[0]
        state.output = ModelOutput.from_content(model="mockllm/model", content="yes" if h % 10 else "no")
        return state
    return solve


@scorer(metrics=[accuracy()])
def says_yes():
    async def score(state: TaskState, target: Target) -> Score:
        ok = state.output.completion == "yes"
        return Score(value=CORRECT if ok else INCORRECT, metadata={"failed_checks": []})
    return score


@task
def tiny(arm: str = "baseline"):
    samples = [Sample(id=f"case{i}", input=f"question {i}", target="yes", metadata={"customer": f"cust{i % 4}"})
               for i in range(8)]
    return Task(dataset=samples, solver=deterministic(arm), scorer=says_yes())
