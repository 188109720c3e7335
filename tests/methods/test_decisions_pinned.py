"""Every pinned method's complete outputs -- statuses, bounds, estimates; for sequential rules
also the stopping look, clusters, trials and every look's status -- on the fixed cases of
``tests/decision_cases.py`` equal, to the bit, those recorded from the code before the
kernels shared their Gauss-Kronrod driver and batch loops (``tests/methods/pinned_decisions.json``).

Shipped qualification records are re-stamped under a new identity only when re-simulated
counts are bitwise equal, so a tidy-up of shared kernel code must not move one bit of any
decision: this is the check.  A method whose decisions are meant to change gets a new
version and is re-pinned (``python -m tests.decision_cases NAME``).
"""
from __future__ import annotations

import json

import pytest

from tests import decision_cases as dc

PINNED = json.loads(dc.PINNED.read_text())


@pytest.mark.parametrize("name", sorted(PINNED["outputs"]))
def test_outputs_equal_the_pinned_bits(name):
    want = PINNED["outputs"][name]
    cases = dc.cases_for(name)
    assert sorted(cases) == sorted(want), f"{name}: the cases changed; re-pin deliberately"
    for case, tables in cases.items():
        key = f"{case}|{tables.shape[0]}"
        assert dc.digest(tables)[:dc.DIGEST_CHARS] == PINNED["tables"][key], \
            f"the tables of case {key} changed (the sampler, not {name})"
        got = {field: dc.digest(a)[:dc.DIGEST_CHARS] for field, a in dc.outputs(name, tables).items()}
        moved = sorted(f for f in set(got) | set(want[case]) if got.get(f) != want[case].get(f))
        assert not moved, f"{name} on case {case} ({tables.shape[0]} replications): {', '.join(moved)} moved"


def test_the_pins_cover_every_built_in_method_and_the_edge_cases():
    from methods import registry

    assert set(registry.names(inputs=None)) <= set(PINNED["outputs"]) and "hierarchical_v1" in PINNED["outputs"]
    edge = dc.edge_tables()
    n = edge.sum(axis=(1, 2))
    assert (n == 0).any() and ((edge[:, :, 1] + edge[:, :, 2]).sum(axis=1) == 0).sum() >= 3
    for name, cases in PINNED["outputs"].items():
        assert "edge" in cases and len(cases) >= len(dc.SIMULATED) + 1, name
