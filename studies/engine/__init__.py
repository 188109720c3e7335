"""The simulation engine: a study spec -> chunked tasks through one executor -> the one
evaluation loop -> integer tallies -> performance measures -> an xarray dataset.

Public API (private modules below may change; import from here)::

    from studies.engine import load_spec, run_study, evaluate_scenario
    spec = load_spec("study.toml")                  # StudySpec; spec.hash
    ds = run_study(spec, n_jobs=2, work_dir="simlab-out/.runs")   # xarray.Dataset
    c = evaluate_scenario(scenario, ["clustered_normal"], replications=20_000)  # ScenarioCounts

Modules: ``spec`` (StudySpec), ``evaluate`` (the one loop: row sources, the decide
dispatch, tallies), ``runner`` (fixed-sample studies), ``sequential`` (sequential studies),
``chunks`` (resumable chunked runs), ``tally`` and ``measures`` (integers -> Morris, White &
Crowther 2019 measures with MC SEs), ``study_dataset``, ``frame`` (power on K-prefixes),
``one_scenario`` (``false_pass``), ``executor`` (serial / joblib / dask), ``durable``
(checked chunk files, locks), ``cost`` (time and memory estimates), ``device`` / ``gpu``.
"""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submod_attrs={
    "spec": ["StudySpec", "ScenarioTemplate", "check_method_refs", "load_spec", "parse_spec"],
    "spec_file": ["read_spec_file"],
    "evaluate": ["Block", "PassCounts", "ScenarioRows", "evaluate", "moment_path"],
    "runner": ["ScenarioCounts", "evaluate_scenario", "run_key", "run_study"],
    "chunks": ["RunInfo"],
    "durable": ["chunk_file_seconds"],
    "sequential": ["SequentialStudySpec", "load_sequential_spec", "parse_sequential_spec", "run_sequential_study",
                   "sequential_summary_rows"],
    "study_dataset": ["build_study_dataset", "grid_dims", "study_summary_rows"],
    "one_scenario": ["false_pass"],
    "frame": ["PowerFrame", "exact_pass_rate"],
    "executor": ["Executor", "as_executor", "make_executor"],
    "device": ["using"],
    "cost": ["PILOT_MAX_PAIRS", "TimeEstimate", "exact_sequential_memory", "exact_sequential_seconds", "qualify_estimate",
             "sequential_study_estimate", "study_estimate", "study_exact_estimate", "study_floor_estimate",
             "scenario_estimate", "scenario_pairs", "preparation", "design_preparation", "study_preparation", "shrink_scenario",
             "pilot_model", "scaled_pilot"],
    "memory": ["sequential_study_memory", "study_memory"],
    "measures": ["rate_summary"],
})
