"""Pass rates of a judge-label study (``studies.judge``) against the calibration-set size:
one row of panels per judge, one column per true difference; in each, every method's pass
rate with 2 MC SE error bars, and at the null boundary the nominal level ``alpha``."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_judge_study(ds, out: str | Path) -> Path:
    """Draw ``ds`` (a ``judge`` dataset) to the PNG file ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from studies.plots.stamp import save_png

    judges, diffs = list(ds.judge.values), list(ds.difference.values)
    items = np.asarray(ds.calibration_items.values, dtype=float)
    margin, alpha = float(ds.attrs["margin"]), float(ds.attrs["alpha"])
    fig, axes = plt.subplots(len(judges), len(diffs), figsize=(4.2 * len(diffs), 3.2 * len(judges)), squeeze=False,
                             sharex=True)
    for j, judge in enumerate(judges):
        sens_spec = ", ".join(f"{arm[0]} Se {float(ds[f'{arm}_sensitivity'][j]):g} Sp "
                              f"{float(ds[f'{arm}_specificity'][j]):g}" for arm in ("baseline", "candidate"))
        for d, diff in enumerate(diffs):
            ax = axes[j][d]
            null = float(diff) <= -margin + 1e-12
            for m, method in enumerate(ds.method.values):
                sel = ds.isel(judge=j, difference=d, method=m)
                ax.errorbar(items, sel.pass_rate.values, yerr=2 * sel.pass_rate_mcse.values, marker="o",
                            capsize=3, label=str(method))
            if null:
                ax.axhline(alpha, color="grey", linestyle="--", linewidth=1, label=f"alpha = {alpha:g}")
            ax.set_xscale("log")
            ax.set_xticks(items)
            ax.set_xticklabels([str(int(n)) for n in items])
            ax.set_ylim(-0.02, 1.02)
            what = "false-pass rate" if null else "power"
            ax.set_title(f"{judge}: true difference {float(diff):g} ({what})\n{sens_spec}", fontsize=8)
            ax.set_ylabel("pass rate")
            if j == len(judges) - 1:
                ax.set_xlabel("calibration items per set")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"judge-labelled outcomes: margin {margin:g}, {int(ds.attrs['replications']):,} replications per "
                 "point (error bars 2 MC SE)", fontsize=9)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, out, dpi=110)   # marked: a rerun may replace it, a user's PNG is not
    plt.close(fig)
    return out
