"""The power curve of a sample-size search: an xarray dataset and its PNG."""
from __future__ import annotations

import numpy as np

from studies.engine.frame import PowerFrame


def curve_dataset(frame: PowerFrame, ks: list[int], ci_level: float):
    """The simulated power curve on the frame's K (counts, power, MC SE, CI)."""
    import xarray as xr

    pts = [frame.point(k, ci_level) for k in ks]
    from studies.datasets import describe

    return describe(xr.Dataset(
        {"power": ("clusters", [p["power"] for p in pts]), "power_mcse": ("clusters", [p["mcse"] for p in pts]),
         "n_reps": ("clusters", np.array([p["n_reps"] for p in pts], np.int64)),
         "n_pass": ("clusters", np.array([p["n_pass"] for p in pts], np.int64)),
         "ci_lower": ("clusters", [p["ci_lower"] for p in pts]), "ci_upper": ("clusters", [p["ci_upper"] for p in pts])},
        coords={"clusters": np.asarray(ks, np.int64)},
        attrs={"title": "power curve (common random numbers: prefixes of one frame)", "ci_level": ci_level}))


def plot_curve(result, path) -> None:
    """PNG of a :class:`studies.sizing.size.SizingResult`'s power curve, target and answer."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from studies.plots.stamp import save_png

    ds = result.curve
    k = ds["clusters"].values
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.fill_between(k, ds["ci_lower"].values, ds["ci_upper"].values, alpha=0.25, label=f"{ds.attrs['ci_level']:.0%} CI")
    ax.plot(k, ds["power"].values, marker=".", label="simulated power")
    ax.axhline(result.inputs["power"], color="k", lw=0.8, ls="--", label=f"target {result.inputs['power']}")
    ax.axvline(result.clusters, color="tab:red", lw=1.0, label=f"chosen K = {result.clusters}")
    ax.axvline(result.analytic["clusters"], color="tab:green", lw=1.0, ls=":",
               label=f"analytic K = {result.analytic['clusters']}")
    inp = result.inputs
    ax.set_xscale("log")
    ax.set_xlabel("independent clusters K")
    ax.set_ylabel("P(pass)")
    ax.set_title(f"{inp['method']}: margin {inp['margin']}, difference {inp['difference']}, M={inp['trials_per_cluster']}, "
                 f"rho={inp['rho']}", fontsize=9)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save_png(fig, path, dpi=110)   # marked: a rerun may replace it, a user's PNG is not
    plt.close(fig)


def sizing_paths(out_dir, inputs) -> tuple:
    """The (netCDF, PNG) paths :func:`save_sizing` writes in ``out_dir``, named after the
    inputs (``method``, ``margin``, ``difference``, ``trials_per_cluster``, ``rho``, ``seed``):
    known before the search, so that a caller can refuse to replace a file it did not write."""
    from pathlib import Path

    stem = Path(out_dir) / (f"size-{inputs['method']}-m{inputs['margin']:g}-d{inputs['difference']:g}"
                            f"-M{inputs['trials_per_cluster']}-rho{inputs['rho']:g}-seed{inputs['seed']}")
    return Path(f"{stem}.nc"), Path(f"{stem}.png")


def save_sizing(result, out_dir) -> dict[str, str]:
    """Write the power curve (netCDF) and its plot (PNG) into ``out_dir``, each atomically
    (a temporary file renamed into place), named after the inputs; sets and returns
    ``result.files``."""
    import os
    from pathlib import Path

    from studies.datasets import check_output_dir, save_dataset

    out = check_output_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    nc, png = sizing_paths(out, result.inputs)
    save_dataset(result.curve, nc)
    tmp = png.with_name(f".{png.name}.{os.getpid()}.tmp.png")
    try:
        plot_curve(result, tmp)
        os.replace(tmp, png)
    finally:
        tmp.unlink(missing_ok=True)
    result.files = {"curve": str(nc), "png": str(png)}
    return result.files


__all__ = ["curve_dataset", "plot_curve", "save_sizing", "sizing_paths"]
