"""Qualification and certification: the worst false-pass rate of a method over a policy's
domain (a grid record) or at exactly one design (a certificate).

``run`` (``qualify``: grid, staged escalation, refinement, records), ``scenarios`` (the
grid on the null boundary, tasks), ``tasks`` (one task through the engine's loop), ``batch`` (scenarios of one K decided together),
``escalation`` (counts, verdicts, which scenarios need more replications), ``refine``
(golden-section search around each cell's worst point), ``checkpoint`` (resumable runs),
``nuisance`` (the worst case at one design, for sizing), ``certify`` (certificates;
``certify_judge``: over a judge's label-noise domain),
``calibrate`` (the largest nominal level that is valid at a design, then its certificate),
``estimate`` (how long certifying or calibrating at a design will take),
``robustness`` (a claim's false-pass rate under laws outside the cluster model; its default
grid of laws is ``robust_grid``), ``regenerate`` (re-run every record of a directory),
``restamp`` (carry records across a refactor: re-simulate a sample of scenarios, re-stamp
only if every count is the same).
"""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submod_attrs={
    "run": ["QualifyRun", "iter_cells", "method_estimand", "qualify", "summary_payload"],
    "escalation": ["DeadlineReached"],
    "scenarios": ["Task", "grid_specs", "method_key", "resolve_method", "scenario_of"],
    "tasks": ["run_task"],
    "checkpoint": ["Checkpoint", "finished_ranges"],
    "nuisance": ["DesignFalsePass", "design_false_pass", "nuisance_points"],
    "certify": ["certificate_payload", "certify", "write_certificate"],
    "certify_judge": ["calibrate_label_noise", "certify_label_noise", "certify_label_noise_estimate",
                      "label_noise_seed"],
    "calibrate": ["Calibration", "calibrate"],
    "estimate": ["calibrate_estimate", "certify_estimate"],
    "robustness": ["RobustnessReport", "robustness", "robustness_estimate"],
    "robust_grid": ["FAMILIES", "default_laws"],
    "regenerate": ["plan", "regenerate", "regenerate_estimate"],
    "restamp": ["Restamp", "restamp", "restamp_record"],
})
