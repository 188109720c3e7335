"""ADEMP studies of decision methods: spec -> run -> measures -> xarray dataset.

Stable API (other layers and the CLI call only these)::

    from studies.engine.spec import StudySpec, MethodRef, load_spec, parse_spec
    from studies.engine.runner import evaluate_scenario, run_study, ScenarioCounts, target_value
    from studies.engine.study_dataset import save_dataset, open_dataset, summary_rows
    from studies.exact.fixed import exact_engine, exact_measures, ExactResult
    from simlab.sampling import scenario_tables

    spec = load_spec("study.toml")            # or StudySpec.model_validate({...}); spec.hash
    ds = run_study(spec, n_jobs=2, work_dir="results/.runs")   # xarray.Dataset
    save_dataset(ds, "results/study.nc"); ds2 = open_dataset("results/study.nc")

    # one scenario, all methods on the same tables (common random numbers):
    c = evaluate_scenario(scenario, ["clustered_normal", MethodRef(name="cluster_t")],
                          margins=[0.03], alphas=[0.025], replications=20_000,
                          seed=1, start=0)
    c.count("n_pass", "clustered_normal")       # integer tallies: c.tally[method, margin, alpha, field]
    c = c.merge(evaluate_scenario(..., start=20_000))   # == one call over 40_000 replications
    m = c.measures()  # dict name -> float array [method, margin, alpha]:
                      # pass_rate(+_mcse, _cp_lower, _cp_upper), false_pass_rate, power,
                      # fail_rate, inconclusive_rate, coverage, lower_miss_rate, bias,
                      # empirical_se, mean_width (each + _mcse), true_value, is_null, counts

    r = exact_measures(scenario, registry.get("clustered_normal"), margin=0.03)  # ExactResult
    exact_engine(scenario, method)   # -> ("unit" | "pooled" | "moments" | None, reason)

Replication ``r`` of a scenario is a pure function of ``(seed, scenario.key, r)``
(``simlab.sampling``), and tallies are integers (``studies.engine.tally``), so results are
bitwise identical for any ``n_jobs``, chunk size, batch size or split into ``start``
ranges.  Measures and MC SEs follow Morris, White & Crowther (2019, Stat Med
38:2074-2102); see ``studies.engine.measures``.
"""
