"""Power against the number of clusters K (``simlab demo``): one line per method series of
``studies.demo_designs.power_against_k``, with 2 MC SE error bars and the distribution-free
limit (least K with (1 - m)^K <= alpha) marked.  Theorem methods solid, the uncertified
``cluster_t`` dotted, methods at their nominal level dashed and labelled uncalibrated,
calibrated levels (only at K where a certificate exists) as filled markers."""
from __future__ import annotations

from pathlib import Path

STYLE = {"theorem": ("-", "o"), "uncertified": (":", "s"), "uncalibrated": ("--", "^"), "calibrated": ("", "D")}


def plot_power_k(curve: dict, limit: int, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from studies.plots.stamp import save_png

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 5))
    for s in curve["series"]:
        line, marker = STYLE[s["kind"]]
        ax.errorbar(s["clusters"], s["power"], yerr=[2 * e for e in s["mc_se"]], linestyle=line or "none",
                    marker=marker, markersize=6 if s["kind"] == "calibrated" else 4, capsize=2, label=s["label"])
    ax.axvline(limit, color="grey", linestyle="-.", linewidth=1)
    ax.text(limit, 1.02, f" distribution-free limit K = {limit}", fontsize=8, color="grey", va="bottom")
    a = curve["alternative"]
    ax.set_title(f"power at M = {curve['trials']}, margin {curve['margin']:g}, alpha {curve['alpha']:g} "
                 f"(true difference {a['difference']:g}, baseline {a['baseline']:g}, discordance "
                 f"{a['discordance']:g}, rho {a['rho']:g}; {curve['replications']:,} tables per K)", fontsize=8)
    ax.set_xlabel("clusters K")
    ax.set_ylabel("pass rate (power)")
    ax.set_ylim(-0.02, 1.08)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    save_png(fig, path, dpi=110)   # marked: a rerun may replace it, a user's PNG is not
    plt.close(fig)
    return path


__all__ = ["plot_power_k"]
