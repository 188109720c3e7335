"""The evidence demo's judge-labelled experiments (issue 30, item 6): a model judge supplies
every outcome, the manifest registers the judge's parts and its human-labelled calibration
sets, and ``judge_corrected`` reports the judge-scale difference beside the corrected one.

Synthetic, and said so: 1,000 one-trial customers, true pass rates 0.8 in both arms
(discordance 0.2), one judge for both arms (sensitivity 0.95, specificity 0.92), one shared
set of 800 representative human-labelled items (``evidence.synthetic``).  The qualification is the shipped certificate of ``judge_corrected``
whose label-noise domain is the demo's design, copied and signed with the demo key; where
none ships (or it no longer verifies) the rows say why they stay at lab_pass.

1. ``judge_corrected``: measured, pinned, population checked, calibration inside the
   certified label-noise domain -> the certificate's authority (the draws are synthetic:
   this shows the rule, it is not evidence about any judge);
2. ``judge_failed_check``: one candidate trial the judge passed failed a deterministic check
   -> block, whatever the judge said;
3. ``judge_holdout_again``: a second confirmatory look at a sealed holdout registered for one
   -> hold (the ledger counts it);
and row 1 resolved after the judge's rubric changed -> expired, naming ``judge.rubric``.
"""
from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from .packet import population_artifact, run_experiment, trial_artifacts
from .resolve import resolve_receipt
from .synthetic import demo_manifest, draw_calibration, with_population, write_population, write_trials

METHOD = "judge_corrected"
CLUSTERS, MARGIN, ITEMS, SHARED = 1000, 0.05, 800, True
JUDGE = (0.95, 0.92, 0.95, 0.92)             # Se, Sp of the baseline's judge, then the candidate's (one judge)
PARTS = {"model": "judge-model@2026-11", "prompt": "grader-prompt-v2", "rubric": "refund-rubric-v3",
         "parser": "verdict-parser-v1"}
REVISION = "0123456789abcdef0123456789abcdef01234567"


def _certificate(qdir: Path, key) -> tuple[str, dict]:
    """The shipped judge_corrected certificate of the demo's design, copied into ``qdir`` and
    signed with the demo ``key``: ``(pin, its method options)``; ``("sha256:0...", {})`` when none."""
    from methods.qualification import RecordError, certificate_paths, load_certificate
    from simlab.hashing import address

    # calibrated certificates are named METHOD@alpha=L (files METHOD-alpha-L...)
    for src in (p for p in certificate_paths() if p.name.startswith((f"{METHOD}.", f"{METHOD}-alpha-"))):
        try:
            cert = load_certificate(src)
        except (RecordError, ValueError):
            continue
        d = cert.design
        dom = d.label_noise_domain
        if dom is not None and (d.clusters, d.trials, d.margin, dom.calibration_items, dom.calibration_shared) \
                == (CLUSTERS, 1, MARGIN, ITEMS, SHARED):
            shutil.copy2(src, qdir / src.name)
            (qdir / src.name).write_text(cert.signed(key).to_json())
            return address(cert.certificate_sha256), {"method": cert.method.registered_name,
                                                     "min_calibration": int(cert.method.options["min_calibration"])}
    return "sha256:" + "0" * 64, {}


def _run(out: Path, name: str, qdir: Path, trusted, now: dt.datetime, pin: str, method: dict, *,
         candidate_failed: int = 0, ledger: Path | None = None) -> dict:
    calibration = draw_calibration(ITEMS, (0.8, 0.8), JUDGE, seed=11, shared=SHARED)
    manifest = demo_manifest(
        experiment_id="demo-judge", method=method.get("method", METHOD), margin=MARGIN, rho_max=0.05,
        measurement_kind="measured", code_revision=REVISION, qualification_sha256=pin,
        created=now - dt.timedelta(minutes=5),
        judge={"identity_sha256": "sha256:" + "4" * 64, "components": PARTS, "calibration_counts": calibration,
               "calibration_shared": SHARED, "min_calibration": method.get("min_calibration", ITEMS)},
        holdout={"id": "refund-holdout-v1", "sha256": "sha256:" + "5" * 64, "max_uses": 1} if ledger else None)
    manifest = with_population(manifest, CLUSTERS)
    trials = write_trials(out / f"{name}.jsonl", manifest, clusters=CLUSTERS, baseline=0.8, discordance=0.2,
                          seed=20261201, judge=JUDGE, cost_provenance="measured", candidate_failed=candidate_failed)
    pop = write_population(out / f"{name}.population.jsonl", CLUSTERS)
    return run_experiment(manifest=manifest, artifacts=trial_artifacts(trials) + [population_artifact(pop)],
                          out=out / f"{name}.packet.json", qualification_dir=qdir, trusted=trusted, now=now,
                          ledger=ledger)


def run_judge_demo(out: Path, qdir: Path, key, trusted, now: dt.datetime) -> dict:
    """The judge packets (by scenario name) and the rubric-change resolution."""
    pin, method = _certificate(qdir, key)
    ledger = out / "judge-holdout.sqlite"
    common = dict(qdir=qdir, trusted=trusted, now=now, pin=pin, method=method)
    packets = {"judge_corrected": _run(out, "judge_corrected", **common),
               "judge_failed_check": _run(out, "judge_failed_check", candidate_failed=1, **common)}
    _run(out, "judge_holdout_first", ledger=ledger, **common)
    packets["judge_holdout_again"] = _run(out, "judge_holdout_again", ledger=ledger, **common)
    receipt = packets["judge_corrected"]["receipt"]
    rubric = resolve_receipt(receipt, now + dt.timedelta(hours=1), {"judge.rubric": "refund-rubric-v4"})
    return {"packets": packets, "rubric_changed": {k: rubric[k] for k in ("state", "action", "reasons")},
            "judge": receipt["comparison"]["judge"], "estimate": receipt["comparison"]["estimate"],
            "lower": receipt["comparison"]["lower"]}


def render_judge(p: dict) -> None:
    j = p["judge"]
    sets = ", ".join(f"{n} Se {se:.3f} Sp {sp:.3f}" for n, se, sp in zip(j["calibration_sets"], j["sensitivity"],
                                                                       j["specificity"]))
    print(f"  judge_corrected: judge scale {j['raw_estimate']:+.4f} [{j['raw_lower']:+.4f}, {j['raw_upper']:+.4f}], "
          f"corrected {p['estimate']:+.4f} (lower {p['lower']:+.4f}); calibration {sets}")
    r = p["rubric_changed"]
    print(f"  judge_corrected resolved after the rubric changed: {r['state']}, {r['action']} ({r['reasons'][0]})")
