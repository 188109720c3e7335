"""The record PNG colours every cell by its verdict (issue 29.5): one colour per verdict,
so a qualified cell and an exceeding one never share a colour however close their upper
bounds are to the threshold; the bound itself is written in the cell."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.image import imread

from methods.qualification import QualificationPolicy
from studies.plots.qualification import VERDICT_COLOURS, VERDICTS, cell_verdict, heatmap, verdict_grid
from tests.methods.test_qualification import synthetic_record, tiny_domain


def _counts(cell, b, d):
    """K = 10: 10% (exceeds); K = 30: just at the 2.5% x allowed excess threshold
    (undetermined); K = 100: 1% (qualified) -- of 4000 replications."""
    k = cell[0]
    return {10: 400, 30: 110, 100: 40}[k]


def test_verdict_colours_are_distinct_and_every_cell_gets_its_own():
    assert len({to_rgb(VERDICT_COLOURS[v]) for v in VERDICTS}) == len(VERDICTS)
    rec = synthetic_record(QualificationPolicy(domain=tiny_domain()), _counts)
    cmap = rec.cell_map()
    dom = rec.policy.domain
    verdicts = set()
    for s in range(len(dom.cluster_sizes)):
        grid = verdict_grid(rec, s, 0.03)
        for a, r in enumerate(dom.rho.grid):
            for b, k in enumerate(dom.clusters.grid):
                c = cmap[(k, s, r, 0.03, 0)]
                assert VERDICTS[grid[a, b]] == c.verdict
                verdicts.add(c.verdict)
    assert verdicts == {"qualified", "exceeds", "undetermined"}


def test_a_vacuous_qualified_cell_is_coloured_inconclusive():
    assert cell_verdict(SimpleNamespace(verdict="qualified", vacuous=True)) == "inconclusive"
    assert cell_verdict(SimpleNamespace(verdict="qualified", vacuous=False)) == "qualified"
    assert cell_verdict(SimpleNamespace(verdict="exceeds", vacuous=False)) == "exceeds"


def test_the_png_shows_each_verdict_in_its_colour(tmp_path):
    rec = synthetic_record(QualificationPolicy(domain=tiny_domain()), _counts)
    png = imread(heatmap(rec, tmp_path / "r.png"))[..., :3]
    for v in ("qualified", "exceeds", "undetermined"):
        want = np.array(to_rgb(VERDICT_COLOURS[v]))
        near = np.abs(png - want).max(axis=-1) < 2 / 255
        assert near.sum() > 500, v  # whole cells of that colour, not only a legend swatch
    absent = np.array(to_rgb(VERDICT_COLOURS["inconclusive"]))
    assert (np.abs(png - absent).max(axis=-1) < 2 / 255).sum() == 0  # no such cell, no such legend entry
