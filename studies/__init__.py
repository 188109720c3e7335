"""ADEMP studies of decision methods (Morris, White & Crowther 2019, Stat Med 38:2074-2102):
simulate, measure, qualify, certify, size and recommend.

The rooms, each a package whose ``__init__`` is its public API:

* ``studies.engine``  -- specs, the one evaluation loop, runners, tallies and measures;
* ``studies.exact``   -- exact operating characteristics (no Monte Carlo error);
* ``studies.qualify`` -- qualification records, certificates, the worst case at a design;
* ``studies.sizing``  -- the fewest clusters for a target power;
* ``studies.plots``   -- PNG pictures of datasets and records;
* ``studies.bench``   -- benchmarks against references measured in the same run;

and at the top: ``datasets`` (the one writer and reader of netCDF datasets; the schema is
``studies/SCHEMA.md``), ``judge`` (judge-labelled outcomes: corrected vs naive methods under
label noise and calibration sets of several sizes), ``recommend`` (which methods may decide at a design, and how well)
and ``demo`` (``simlab demo``).  The most used entry points are also named here::

    from studies import load_spec, run_study, open_dataset
    ds = run_study(load_spec("studies/specs/boundary.toml"), n_jobs=2)

Replication ``r`` of a scenario is a pure function of ``(seed, scenario, r)`` and tallies
are integers, so every result is bitwise identical for any worker count, backend or chunking.
"""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=["bench", "engine", "exact", "plots", "qualify",
                                                                    "sizing"], submod_attrs={
    "datasets": ["DamagedDataset", "dataset_kind", "dataset_spec_hash", "file_kind", "open_dataset", "report_by_simlab", "save_dataset", "save_json",
                 "stored_kind", "stored_values", "written_by_simlab", "check_derived"],
    "judge": ["JudgeModel", "JudgeStudySpec", "judge_study", "judge_study_estimate", "judge_study_paths",
              "judge_study_rows", "run_judge_study"],
    "recommend": ["recommend"],
    "demo": ["demo_floor_seconds", "study_demo"],
    "engine": ["StudySpec", "evaluate_scenario", "false_pass", "load_spec", "run_sequential_study", "run_study"],
    "qualify": ["certify", "qualify"],
    "sizing": ["size"],
})
