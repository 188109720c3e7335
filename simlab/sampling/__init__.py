"""Samplers of a scenario's paired cluster tables (the DGM side of a study).

``table_source(scenario, seed, sampler)`` returns the source a study draws from
(``sources``: the composition sampler or the trial-level generator); ``moments`` holds the
cluster-moment sufficient statistics the moment path draws instead of tables; ``robust``
holds laws outside the Dirichlet-multinomial family (logit-normal effects, heterogeneous
discordance, direction mixtures) for robustness reports; ``calibration`` the judge
calibration sets drawn beside the tables when a scenario declares one.  Every replication is
a pure function of ``(seed, scenario, replication index)``.
"""
import lazy_loader as _lazy

# lazily: a method module reads MAX_TRIALS_EXACT (moments) without the scenario's pydantic models
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submod_attrs={
    "calibration": ["CALIBRATION_VERSION", "CalibrationSource", "calibration_source", "scenario_calibration"],
    "moments": ["MAX_TRIALS_EXACT"],
    "sources": ["COMPOSITION_VERSION", "CompositionSource", "TableSource", "TrialSource", "scenario_tables",
                "source_name", "table_source", "vose_alias"],
})
