"""The demo's designs section: its tables drawn in slices (the same figures, bounded memory)
and priced before the parts that grow with --reps."""
from __future__ import annotations

import math

import numpy as np
import pytest

from methods import registry
from simlab.sampling import scenario_tables
from studies import demo_designs
from studies.demo_designs import Draws, worst_corner


def test_sliced_draws_are_the_whole_draws_and_give_the_same_rate(monkeypatch):
    sc = worst_corner(30, 3)
    whole = Draws(sc, 11, 23)
    monkeypatch.setattr(demo_designs, "DRAW_SLICE", 5)
    sliced = Draws(sc, 11, 23)
    parts = list(sliced.slices())
    assert [p.shape[0] for p in parts] == [5, 5, 5, 5, 3]
    assert np.array_equal(np.concatenate(parts), scenario_tables(sc, 11, 0, 23))
    assert np.array_equal(sliced.first(), next(whole.slices())[:1])
    m = registry.get("cluster_t")
    assert demo_designs._rate(m, sliced, 0.025) == demo_designs._rate(m, whole, 0.025)


class _Stop(Exception):
    pass


def test_the_demo_prices_its_designs_before_the_parts_that_grow_with_the_replications(tmp_path):
    """``before_designs`` is told a positive estimate that grows with the replications, and a
    refusal there stops the demo before it writes anything."""
    from studies import study_demo

    told = []

    def refuse(seconds: float) -> None:
        told.append(seconds)
        raise _Stop

    with pytest.raises(_Stop):
        study_demo(out_dir=tmp_path / "demo", replications=2000, design_replications=1_000_000,
                   headline_replications=2000, before_designs=refuse)
    assert len(told) == 1 and math.isfinite(told[0]) and told[0] > 0.0
    assert not (tmp_path / "demo").exists()
    # per table and per slice: a million tables cost more than a pilot's worth
    assert demo_designs.designs_seconds(1_000_000) > demo_designs.designs_seconds(1)
