"""Exact operating characteristics: a method's own kernel run on every state of an exact
law (``simlab.exact``), no Monte Carlo error.

``fixed`` (``exact_engine``, ``exact_measures``: iid pairs, pooled tables, cluster moments),
``sequential`` (absorbing-state enumeration of look schedules; the seed's table),
``discordant`` (the exact-discordant certification engine: every ``(n10, n01)`` state of
independent pairs and a proven bound between discordances), ``convolution`` (the
exact-convolution engine: pooled discordant counts of iid Dirichlet-multinomial clusters of one
size by FFT, a dense exact (discordance, rho) grid, and the exact E+M calibration of
``dm_score``), ``probes`` (does a method see only pooled counts?), ``applicability`` (which designs an exact
certification engine can take, from the design alone).
"""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submod_attrs={
    "fixed": ["ExactResult", "exact_engine", "exact_grid", "exact_grid_seconds", "exact_measures"],
    "sequential": ["SEED_LOOKS", "SEED_METHODS", "exact_for_scenario", "exact_table", "seed_table"],
    "discordant": ["DiscordantStates", "discordant_probe", "search"],
    "convolution": ["ConvolutionStates", "EMCalibration", "MAX_NODES", "calibrate_em", "calibrated_method",
                    "dense_search", "node_seconds", "nuisance_grid"],
    "probes": ["probe"],
    "applicability": ["MAX_STATES", "design_blocker", "exact_refusal"],
})
