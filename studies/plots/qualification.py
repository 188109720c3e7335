"""Presenting a qualification record: the per-cell table and the heat map of the worst
false-pass upper bound over the domain (panels: cluster-size law x margin; axes: K x rho)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from methods.qualification import QUALIFIED, QualificationRecord, size_label


def cell_rows(record: QualificationRecord, noise: int = 0) -> tuple[list[str], list[list[Any]]]:
    """Rows (size, margin, rho) x columns K: worst upper bound with a verdict mark
    (``ok`` qualified, ``X`` exceeds, ``?`` undetermined, ``ok*`` vacuous)."""
    dom = record.policy.domain
    cmap = record.cell_map()
    cols = ["trials", "margin", "rho"] + [f"K={k}" for k in dom.clusters.grid]
    rows = []
    for s, size in enumerate(dom.cluster_sizes):
        for m in dom.margin.grid:
            for r in dom.rho.grid:
                row: list[Any] = [size_label(size), m, r]
                for k in dom.clusters.grid:
                    c = cmap[(k, s, r, m, noise)]
                    mark = {"qualified": "ok*" if c.vacuous else "ok", "exceeds": "X", "undetermined": "?"}[c.verdict]
                    row.append(f"{c.upper:.3f}{mark}")
                rows.append(row)
    return cols, rows


# One colour per verdict, so a cell's verdict is read at a glance (a diverging scale put
# "ok" and "X" cells just either side of the threshold in the same yellow); the worst
# upper bound is printed in the cell.
VERDICTS = ("qualified", "exceeds", "undetermined", "inconclusive")
VERDICT_COLOURS = {"qualified": "#1a9850", "exceeds": "#d73027", "undetermined": "#fee08b",
                   "inconclusive": "#9e9ac8"}
VERDICT_LABELS = {"qualified": "qualified (upper bound <= threshold)", "exceeds": "exceeds (lower bound > threshold)",
                  "undetermined": "undetermined (bound straddles the threshold)",
                  "inconclusive": "qualified only by never passing (always inconclusive)"}


def cell_verdict(cell) -> str:
    """The verdict a cell is coloured by: a qualified cell that never passes is 'inconclusive'."""
    return "inconclusive" if cell.verdict == QUALIFIED and cell.vacuous else cell.verdict


def verdict_grid(record: QualificationRecord, size_index: int, margin: float, noise: int = 0) -> np.ndarray:
    """Indices into ``VERDICTS`` of one panel's cells, rows rho x columns K."""
    dom = record.policy.domain
    cmap = record.cell_map()
    return np.array([[VERDICTS.index(cell_verdict(cmap[(k, size_index, r, margin, noise)]))
                      for k in dom.clusters.grid] for r in dom.rho.grid])


def heatmap(record: QualificationRecord, path: str | Path, noise: int = 0) -> Path:
    """PNG of the verdict of every cell (one colour each, see ``VERDICT_COLOURS``) with its
    worst false-pass upper bound written in it; panels cluster-size law x margin, axes K x rho."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    from studies.plots.stamp import save_png

    dom = record.policy.domain
    cmap = record.cell_map()
    ks, rhos = dom.clusters.grid, dom.rho.grid
    n_s, n_m = len(dom.cluster_sizes), len(dom.margin.grid)
    thr = record.threshold
    colours = ListedColormap([VERDICT_COLOURS[v] for v in VERDICTS])
    norm = BoundaryNorm(np.arange(len(VERDICTS) + 1) - 0.5, len(VERDICTS))
    fig, axes = plt.subplots(n_s, n_m, figsize=(2.6 * n_m + 1.4, 2.1 * n_s + 1.6), squeeze=False,
                             sharex=True, sharey=True)
    seen = set()
    for i, size in enumerate(dom.cluster_sizes):
        for j, m in enumerate(dom.margin.grid):
            ax = axes[i][j]
            z = verdict_grid(record, i, m, noise)
            seen.update(VERDICTS[v] for v in z.ravel())
            ax.imshow(z, origin="lower", cmap=colours, norm=norm, aspect="auto", interpolation="nearest")
            for a, r in enumerate(rhos):
                for b, k in enumerate(ks):
                    c = cmap[(k, i, r, m, noise)]
                    ax.text(b, a, f"{c.upper:.3f}", ha="center", va="center", fontsize=5,
                            color="white" if cell_verdict(c) in ("qualified", "exceeds") else "black")
            ax.set_xticks(range(len(ks)), [str(k) for k in ks], fontsize=6, rotation=90)
            ax.set_yticks(range(len(rhos)), [f"{r:g}" for r in rhos], fontsize=6)
            if i == 0:
                ax.set_title(f"margin {m:g}", fontsize=8)
            if j == 0:
                ax.set_ylabel(f"{size_label(size)}\nrho", fontsize=8)
            if i == n_s - 1:
                ax.set_xlabel("K", fontsize=8)
    fig.suptitle(f"{record.method.name} v{record.method.version}: verdict per cell, with the worst false-pass\n"
                 f"upper bound ({record.policy.mc_confidence:.0%} Clopper-Pearson) over baseline and discordance\n"
                 f"threshold {thr:.4g} = {record.policy.allowed_excess:g} x alpha {record.policy.alpha:g}",
                 fontsize=8)
    fig.legend(handles=[Patch(color=VERDICT_COLOURS[v], label=VERDICT_LABELS[v]) for v in VERDICTS if v in seen],
               loc="lower center", ncol=2 if n_m > 1 else 1, fontsize=7, frameon=False)
    fig.subplots_adjust(bottom=0.1 + 0.35 / (n_s + 1))
    path = Path(path)
    save_png(fig, path, dpi=110, bbox_inches="tight")  # tight: the title and legend are never cut off; marked
    plt.close(fig)
    return path
