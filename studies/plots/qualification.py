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


def heatmap(record: QualificationRecord, path: str | Path, noise: int = 0) -> Path:
    """PNG of the worst false-pass upper bound per cell; hatched cells are not qualified."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    dom = record.policy.domain
    cmap = record.cell_map()
    ks, rhos = dom.clusters.grid, dom.rho.grid
    n_s, n_m = len(dom.cluster_sizes), len(dom.margin.grid)
    thr = record.threshold
    vmax = max(max(c.upper for c in record.cells), thr * 1.01)
    norm = TwoSlopeNorm(vmin=0.0, vcenter=thr, vmax=vmax)
    fig, axes = plt.subplots(n_s, n_m, figsize=(2.6 * n_m + 1.4, 2.1 * n_s + 1.0), squeeze=False,
                             sharex=True, sharey=True)
    im = None
    for i, size in enumerate(dom.cluster_sizes):
        for j, m in enumerate(dom.margin.grid):
            ax = axes[i][j]
            z = np.array([[cmap[(k, i, r, m, noise)].upper for k in ks] for r in rhos])
            im = ax.imshow(z, origin="lower", cmap="RdYlGn_r", norm=norm, aspect="auto")
            for a, r in enumerate(rhos):
                for b, k in enumerate(ks):
                    c = cmap[(k, i, r, m, noise)]
                    txt = "ok" if c.verdict == QUALIFIED else ("X" if c.verdict == "exceeds" else "?")
                    if c.verdict == QUALIFIED and c.vacuous:
                        txt = "inc"
                    ax.text(b, a, txt, ha="center", va="center", fontsize=6)
            ax.set_xticks(range(len(ks)), [str(k) for k in ks], fontsize=6, rotation=90)
            ax.set_yticks(range(len(rhos)), [f"{r:g}" for r in rhos], fontsize=6)
            if i == 0:
                ax.set_title(f"margin {m:g}", fontsize=8)
            if j == 0:
                ax.set_ylabel(f"{size_label(size)}\nrho", fontsize=8)
            if i == n_s - 1:
                ax.set_xlabel("K", fontsize=8)
    fig.suptitle(f"{record.method.name} v{record.method.version}: worst false-pass upper bound "
                 f"({record.policy.mc_confidence:.0%} Clopper-Pearson) over baseline and discordance\n"
                 f"threshold {thr:.4g} = {record.policy.allowed_excess:g} x alpha {record.policy.alpha:g}; "
                 "ok qualified, X exceeds, ? undetermined, inc always inconclusive", fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.8, label="worst upper bound")
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
