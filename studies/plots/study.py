"""Operating-characteristic curves of a study dataset (matplotlib, Agg backend -> PNG).

One panel per combination of the varied fields other than the x axis (at most
``MAX_PANELS``); in each, the pass rate of every method against the true value of the
estimand it targets, with 2 MC SE error bars, the margin (vertical line at
``-margin``: left of it every pass is a false pass) and the nominal one-sided level
``alpha`` (horizontal line) marked.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import xarray as xr

from studies.engine.study_dataset import select_level

MAX_PANELS = 12


def _x_dim(ds: xr.Dataset, grid_dims: list[str]) -> str | None:
    """``difference`` if varied, else the field along which the true value moves most."""
    if "difference" in grid_dims:
        return "difference"
    best, spread = None, 0.0
    for d in grid_dims:
        v = float((ds.true_value.max(d) - ds.true_value.min(d)).max())
        if v > spread:
            best, spread = d, v
    return best


def plot_dataset(ds: xr.Dataset, out: str | Path, margin: float | None = None,
                 alpha: float | None = None) -> Path:
    """Draw the pass-rate curves of ``ds`` to the PNG file ``out`` (for a sequential study:
    the cumulative promotion probability across looks per method)."""
    from studies.datasets import dataset_kind

    if dataset_kind(ds) == "sequential":
        from studies.plots.sequential import plot_sequential

        return plot_sequential(ds, out, margin)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from studies.plots.stamp import save_png

    sel, margin, alpha = select_level(ds, margin, alpha)
    grid_dims = [d for d in sel.pass_rate.dims if d != "method"]
    xdim = _x_dim(sel, grid_dims)
    other = [d for d in grid_dims if d != xdim]
    combos = list(itertools.product(*(range(sel.sizes[d]) for d in other))) or [()]
    if len(combos) > MAX_PANELS:
        combos = combos[:MAX_PANELS]
    ncol = min(3, len(combos))
    nrow = (len(combos) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.8 * ncol + 2.6, 3.6 * nrow + 0.6), squeeze=False)
    top = 0.0
    for ax, combo in zip(axes.ravel(), combos):
        part = sel.isel(dict(zip(other, combo))) if other else sel
        for i, method in enumerate(part.method.values):
            pm = part.isel(method=i)
            x = np.atleast_1d(pm.true_value.values)
            y = np.atleast_1d(pm.pass_rate.values)
            e = 2.0 * np.atleast_1d(pm.pass_rate_mcse.values)
            order = np.argsort(x)
            ax.errorbar(x[order], y[order], yerr=e[order], marker="o", ms=3, lw=1.2, capsize=2, label=str(method),
                        color=plt.cm.tab20(i % 20))
            if np.isfinite(y + e).any():
                top = max(top, float(np.nanmax(y + e)))
        ax.axvline(-margin, color="k", ls="--", lw=1, label=f"-margin = {-margin:g}")
        ax.axhline(alpha, color="r", ls=":", lw=1, label=f"nominal level {alpha:g}")
        ax.set_xlabel("true value of the targeted estimand")
        ax.set_ylabel("pass rate")
        title = ", ".join(f"{d}={_label(part[d].values)}" for d in other)
        ax.set_title(title or ds.attrs.get("spec_name", "study"), fontsize=9)
        ax.grid(alpha=0.3)
    upper = min(1.02, max(2.5 * alpha, 1.1 * top))
    for ax in axes.ravel()[:len(combos)]:
        ax.set_ylim(-0.01 * upper, upper)
    for ax in axes.ravel()[len(combos):]:
        ax.set_visible(False)
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    width = fig.get_size_inches()[0]
    fig.legend(handles, labels, loc="center right", fontsize=8, frameon=False)
    fig.suptitle(f"{ds.attrs.get('spec_name', 'study')}: pass rate (±2 MC SE) vs true difference\n"
                 f"margin {margin:g}, alpha {alpha:g}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - 2.4 / width, 0.93))
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, p, dpi=110)   # marked: a rerun may replace it, a user's PNG is not
    plt.close(fig)
    return p


def _label(v) -> str:
    v = np.asarray(v)
    return f"{v.item():g}" if v.dtype.kind in "fiu" else str(v.item())
