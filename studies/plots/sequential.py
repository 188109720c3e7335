"""Figure of a sequential study: cumulative promotion probability across looks, per method.

One panel per scenario grid point (at one margin): a line per method with its simulated
cumulative promotion rate (markers, +-2 MC SE band) and, where the exact engine applied,
the exact curve (dashed).  A horizontal line marks the design's alpha when the point is
a null (true value <= -margin) for the first method's estimand.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import xarray as xr

from studies.datasets import dataset_kind
from studies.engine.sequential import STUDY_KIND


def plot_sequential(ds: xr.Dataset, path: str | Path, margin: float | None = None, max_panels: int = 12) -> Path:
    if dataset_kind(ds) != STUDY_KIND:
        raise ValueError("not a sequential study dataset (attrs.dataset_kind != 'sequential')")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from studies.plots.stamp import save_png

    margin = float(ds.margin.values[0]) if margin is None else float(margin)
    if margin not in ds.margin.values:
        raise ValueError(f"margin {margin} not in the dataset (has {ds.margin.values.tolist()})")
    sel = ds.sel(margin=margin)
    grid = [d for d in sel.promote_rate.dims if d not in ("method",)]
    stacked = sel.stack(point=grid) if grid else sel.expand_dims(point=[0])
    n_pts = min(stacked.sizes["point"], max_panels)
    cols = min(3, n_pts)
    rows = math.ceil(n_pts / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    x = ds.look_count.values
    alpha = float(ds.attrs.get("alpha", math.nan))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for p in range(n_pts):
        ax = axes[p // cols][p % cols]
        pt = stacked.isel(point=p)
        for i, method in enumerate(pt.method.values):
            c = colors[i % len(colors)]
            y = pt.cumulative_promotion_rate.values[i]
            se = pt.cumulative_promotion_rate_mcse.values[i]
            ax.plot(x, y, marker="o", ms=3, color=c, label=str(method))
            ax.fill_between(x, y - 2 * se, y + 2 * se, color=c, alpha=0.15, linewidth=0)
            if "exact_cumulative_promotion_rate" in pt:
                ye = pt.exact_cumulative_promotion_rate.values[i]
                if np.all(np.isfinite(ye)):
                    ax.plot(x, ye, linestyle="--", color=c, linewidth=1)
        if math.isfinite(alpha) and bool(pt.is_null.values[0]):
            ax.axhline(alpha, color="black", linewidth=0.8, linestyle=":")
        title = ", ".join(f"{d}={_fmt(pt[d].values)}" for d in grid) if grid else ds.attrs.get("spec_name", "")
        ax.set_title(f"{title} (margin {margin:g})", fontsize=9)
        ax.set_xlabel(f"look ({ds.attrs.get('schedule_unit', 'clusters')})")
        ax.set_ylabel("P(promoted by look)")
        ax.set_ylim(bottom=0.0)
        ax.grid(alpha=0.3)
    for p in range(n_pts, rows * cols):
        axes[p // cols][p % cols].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False)
    fig.suptitle(f"{ds.attrs.get('title', 'sequential study')}: cumulative promotion "
                 f"(markers: simulated +-2 MC SE; dashed: exact)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06 + 0.03 * math.ceil(len(labels) / 4), 1, 0.95))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, out, dpi=110)   # marked: a rerun may replace it, a user's PNG is not
    plt.close(fig)
    return out


def _fmt(v) -> str:
    v = np.asarray(v)
    if v.dtype.kind == "f":
        return f"{float(v):g}"
    return str(v.item() if v.shape == () else v.tolist())
