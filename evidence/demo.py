"""The whole evidence path on built-in synthetic experiments (``simlab demo``'s last section).

Scenarios, all under ``binomial_loss`` (margin 0.03) and the shipped qualification record
of that method, copied and signed with a fresh demo key:

1. the seed's exercise: 300 paired trials from 10 customers, 30 required -> hold;
2. 500 one-trial customers, synthetic evidence -> lab_pass (authority lab_only);
3. the same draws declared measured at a pinned revision, qualification signed by a
   trusted key -> qualified, canary_eligible (the ceiling; the draws are still synthetic:
   this shows the rule, it is not evidence about any agent);
4. as 3 with one candidate trial failing a hard check -> block, whatever the average;
5. replay of 3 (identical receipt), and of a copy whose comparison was forged -> rejected;
6. every receipt in a hash-chained ledger, verified; 3 resolved after its expiry -> expired;
7. judge-labelled experiments under ``judge_corrected`` (``evidence.demo_judge``): the
   judge-scale and corrected differences, a failed deterministic check that blocks whatever
   the judge said, a second look at a sealed holdout that holds, a changed rubric that expires.
"""
from __future__ import annotations

import copy
import datetime as dt
import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from simlab.hashing import address, with_self_hash
from .jsonfiles import read_json
from .ledger import append, verify
from .packet import population_artifact, run_experiment, trial_artifacts
from .replay import replay_packet
from .resolve import resolve_receipt
from .synthetic import demo_manifest, with_population, write_population, write_trials

METHOD = "binomial_loss"


def _qualification(out: Path) -> tuple[Path, str, dict]:
    """Copy the shipped record of METHOD (and its dataset) and sign the copy with a new demo
    key (a record that no longer verifies -- e.g. stale -- is copied unsigned: the receipts
    then say why it does not qualify)."""
    from methods.qualification import RecordError, load_record, record_paths
    from simlab import signing

    src = record_paths(METHOD)[0]
    qdir = out / "qualification"
    qdir.mkdir(parents=True, exist_ok=True)
    record = read_json(src)
    shutil.copy2(src, qdir / src.name)
    shutil.copy2(src.parent / record["dataset"]["file"], qdir / record["dataset"]["file"])
    key = signing.generate_key()
    _, public = signing.save_keypair(key, out / "keys", "demo")
    try:
        (qdir / src.name).write_text(load_record(qdir / src.name).signed(key).to_json())
    except RecordError:
        pass
    return qdir, address(record["record_sha256"]), signing.trusted_keys([public])


def _scenario(out: Path, name: str, qdir: Path, trusted, now: dt.datetime, *, clusters: int, cases: int, reps: int,
              **kw) -> dict:
    draw = {k: kw.pop(k) for k in ("candidate_failed", "cost_provenance") if k in kw}
    manifest = with_population(demo_manifest(experiment_id=f"demo-{name}", method=METHOD, repetitions=reps,
                                             created=now - dt.timedelta(minutes=5), **kw), clusters, cases)
    trials = write_trials(out / f"{name}.jsonl", manifest, clusters=clusters, cases_per_cluster=cases,
                          baseline=0.9, discordance=0.01, seed=20261130, **draw)
    cases_file = write_population(out / f"{name}.population.jsonl", clusters, cases)
    return run_experiment(manifest=manifest, artifacts=trial_artifacts(trials) + [population_artifact(cases_file)],
                          out=out / f"{name}.packet.json", qualification_dir=qdir, trusted=trusted, now=now)


def run_demo(out: str | Path | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """The scenarios above, files in ``out`` (default: a temporary folder).  The work is fixed in
    size (some 15-30 s in all, no time limit needed); ``progress``, when given, is told as each step starts."""
    say = progress or (lambda message: None)
    out = Path(out) if out else Path(tempfile.mkdtemp(prefix="simlab-evidence-demo-"))
    out.mkdir(parents=True, exist_ok=True)
    say(f"evidence demo in {out}: copying and signing the {METHOD} qualification record")
    qdir, pin, trusted = _qualification(out)
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    common = dict(qdir=qdir, trusted=trusted, now=now, qualification_sha256=pin, margin=0.03)
    measured = dict(measurement_kind="measured", code_revision="0123456789abcdef0123456789abcdef01234567",
                    cost_provenance="measured")
    scenarios = {
        "seed_ten_customers": dict(clusters=10, cases=10, reps=3),
        "synthetic": dict(clusters=500, cases=1, reps=1),
        "measured_signed": dict(clusters=500, cases=1, reps=1, **measured),
        "hidden_hard_failure": dict(clusters=500, cases=1, reps=1, candidate_failed=1, **measured),
    }
    packets = {}
    for i, (name, kw) in enumerate(scenarios.items(), 1):
        say(f"scenario {i}/{len(scenarios)} {name}: {kw['clusters']} clusters x {kw['cases']} cases x {kw['reps']} "
            "repetitions")
        packets[name] = _scenario(out, name, **kw, **common)
    from simlab.signing import load_private_key
    from .demo_judge import run_judge_demo

    say("judge scenarios (judge_corrected): corrected difference, failed check, sealed holdout, rubric change")
    judge = run_judge_demo(out, qdir, load_private_key(out / "keys" / "demo.key"), trusted, now)
    packets.update(judge.pop("packets"))
    rows = [{"scenario": k, "state": p["receipt"]["state"], "action": p["receipt"]["action"],
             "authority": p["receipt"]["authority"], "clusters": p["receipt"]["evidence"]["clusters"],
             "pairs": p["receipt"]["evidence"]["pairs"], "status": p["receipt"]["comparison"]["status"],
             "lower": p["receipt"]["comparison"]["lower"], "why": p["receipt"]["reasons"][0]}
            for k, p in packets.items()]
    good = packets["measured_signed"]
    say("replay of measured_signed, and of a copy with a forged comparison")
    replayed = replay_packet(good, base=out, qualification_dir=qdir, trusted=trusted)
    forged = copy.deepcopy(good)
    forged["receipt"]["comparison"]["lower"] = 0.0
    forged["receipt"] = with_self_hash(forged["receipt"], "receipt_sha256")
    rejected = replay_packet(forged, base=out, qualification_dir=qdir, trusted=trusted)
    ledger = out / "ledger.sqlite"
    say(f"ledger: appending {len(packets)} receipts, verifying the chain; resolving measured_signed after expiry")
    for p in packets.values():
        append(ledger, p["receipt"], now=now)
    expiry = dt.datetime.fromisoformat(good["receipt"]["valid_until"].replace("Z", "+00:00"))
    later = resolve_receipt(good["receipt"], expiry + dt.timedelta(days=1), replayed=replayed["ok"])
    (out / "demo.json").write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return {"folder": str(out), "method": METHOD, "rows": rows, "judge": judge,
            "replay": {"ok": replayed["ok"], "action": replayed["action"]},
            "forged_replay": {"ok": rejected["ok"], "action": rejected["action"], "reasons": rejected["reasons"]},
            "ledger": verify(ledger), "resolved_after_expiry": {k: later[k] for k in ("state", "action", "reasons")}}


def render_demo(p: dict) -> None:
    print(f"Evidence path ({p['method']}, margin 0.03; judge_* rows: judge_corrected, margin 0.05; files in "
          f"{p['folder']})")
    for r in p["rows"]:
        print(f"  {r['scenario']:<20} {r['clusters']:>4} clusters {r['pairs']:>4} pairs  {r['status']:<12} "
              f"-> {r['state']}, {r['action']} ({r['authority']})")
        print(f"  {'':<20} why: {r['why']}")
    print(f"  replay of measured_signed: {'identical receipt' if p['replay']['ok'] else 'REJECTED'} -> "
          f"{p['replay']['action']}")
    print(f"  replay of a forged comparison: {'accepted' if p['forged_replay']['ok'] else 'rejected'} -> "
          f"{p['forged_replay']['action']} ({p['forged_replay']['reasons'][0]})")
    led = p["ledger"]
    print(f"  ledger: {led['entries']} receipts, chain {'intact' if led['ok'] else 'BROKEN'}")
    r = p["resolved_after_expiry"]
    print(f"  measured_signed resolved a day after expiry: {r['state']}, {r['action']}")
    if p.get("judge"):
        from .demo_judge import render_judge
        render_judge(p["judge"])
