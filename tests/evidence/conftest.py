"""Shared fixtures: a real (small) qualification record of binomial_loss made by the
qualifier itself, signed with a test key, and a helper that runs the evidence path."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from evidence.packet import population_artifact, run_experiment, trial_artifacts
from evidence.synthetic import demo_manifest, with_population, write_population, write_trials

REVISION = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class World:
    qdir: Path
    pin: str
    record: Path
    key: Path
    trusted: dict
    now: dt.datetime  # after the record was made (a record created "in the future" is refused)

    def manifest(self, **kw):
        """A measured, pinned manifest that qualifies (override any field)."""
        base = dict(method="binomial_loss", margin=0.03, rho_max=0.5, repetitions=1, minimum_clusters=30,
                    measurement_kind="measured", code_revision=REVISION, qualification_sha256=self.pin,
                    created=self.now - dt.timedelta(hours=1))
        base.update(kw)
        return demo_manifest(**base)

    def run(self, folder: Path, manifest=None, *, clusters=300, cases=1, name="exp", trusted="default",
            draw=None, population=True, **kw):
        """Write trials (``folder/name.jsonl``) and, with ``population``, the registered case list
        (``folder/name.population.jsonl``, pinned in the manifest); run; return the packet."""
        manifest = manifest or self.manifest()
        artifacts = []
        if population:
            manifest = with_population(manifest, clusters, cases)
            artifacts.append(population_artifact(write_population(folder / f"{name}.population.jsonl", clusters,
                                                                  cases)))
        draw = {"baseline": 0.9, "discordance": 0.01, "seed": 7,
                "cost_provenance": "measured" if manifest.measurement_kind == "measured" else "synthetic",
                **(draw or {})}
        trials = write_trials(folder / f"{name}.jsonl", manifest, clusters=clusters, cases_per_cluster=cases, **draw)
        return run_experiment(manifest=manifest, artifacts=trial_artifacts(trials) + artifacts,
                              out=folder / f"{name}.packet.json", qualification_dir=self.qdir,
                              trusted=self.trusted if trusted == "default" else trusted, now=self.now, **kw)


@pytest.fixture(scope="session")
def world(tmp_path_factory) -> World:
    from methods import registry
    from methods.qualification import Axis, IntAxis, QualificationDomain, QualificationPolicy, load_record
    from simlab import signing
    from simlab.scenario import FixedSize
    from studies.qualify.run import qualify

    root = tmp_path_factory.mktemp("evidence-world")
    dom = QualificationDomain(
        clusters=IntAxis(lo=300, hi=500, grid=(300, 500)),
        cluster_sizes=(FixedSize(trials=1), FixedSize(trials=3)),
        rho=Axis(lo=0.0, hi=0.5, grid=(0.0, 0.5)), margin=Axis(lo=0.03, hi=0.03, grid=(0.03,)),
        baseline=Axis(lo=0.9, hi=0.9, grid=(0.9,)), discordance=Axis(lo=0.03, hi=0.03, grid=(0.03,)))
    # a loose tolerance keeps the fixture small (1000 replications per scenario); the rules
    # under test read the record's verdicts, whatever produced them
    policy = QualificationPolicy(domain=dom, min_replications=1000, max_replications=1000, allowed_excess=3.0,
                                 refine_evaluations=0, validity_days=3650)
    qdir = root / "qualification"
    run = qualify([registry.get("binomial_loss")], policy, out_dir=qdir)
    record = run.outcomes[0].record_path
    key = signing.generate_key()
    private, public = signing.save_keypair(key, root / "keys", "test")
    record.write_text(load_record(record).signed(key).to_json())  # the embedded signature
    pin = json.loads(record.read_text())["record_sha256"]
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(minutes=1)
    return World(qdir=qdir, pin=pin, record=record, key=private, trusted=signing.trusted_keys([public]), now=now)


@pytest.fixture(scope="session")
def good(world, tmp_path_factory):
    """A packet that reaches canary_eligible (measured, pinned, covered, signed)."""
    folder = tmp_path_factory.mktemp("good")
    packet = world.run(folder)
    assert packet["receipt"]["action"] == "canary_eligible", packet["receipt"]["reasons"]
    return folder, packet


# ---------------------------------------------------------------- real Inspect logs

INSPECT_TASK = Path(__file__).resolve().parents[2] / "evidence" / "adapters" / "inspect_example_task.py"
VARIANTS = ("tiny", "errored", "two_scorers", "partial", "unequal", "one_arm")
ARMS = {a: {"model": f"mockllm/{a}", "task_args": {"arm": a}} for a in ("baseline", "candidate")}


@dataclass
class InspectLogs:
    manifest: object               # the manifest the bound logs carry (created before them)
    bound: dict                    # (arm, task) -> log carrying the manifest hash
    unbound: dict                  # arm -> `tiny` log written without a manifest (and labelled with simlab_arm)
    cancelled: Path
    written_after: dt.datetime     # a time after every log was written


def _inspect_eval(log_dir: Path, arm: str, tasks, metadata: dict[str, str], extra=()):
    import signal
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("inspect")
    cmd = [str(exe), "eval", *(f"{INSPECT_TASK}@{t}" for t in tasks), "-T", f"arm={arm}", "--model", f"mockllm/{arm}",
           "--log-dir", str(log_dir), "--display", "none", *extra]
    for k, v in metadata.items():
        cmd += ["--metadata", f"{k}={v}"]
    # a test run started in the background of a non-interactive shell (as CI may be) ignores
    # SIGINT, and a child inherits that: the cancelled run would then never cancel itself
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _log(log_dir: Path, task: str) -> Path:
    (log,) = [p for p in log_dir.glob("*.eval")  # Inspect names a log <time>_<task, - for _>_<id>.eval
              if p.name.split("_", 1)[1].rsplit("_", 1)[0] == task.replace("_", "-")]
    return log


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory) -> InspectLogs:
    """Real `inspect eval` runs (mockllm provider), five invocations at once: both arms of
    every variant bound to a manifest; both arms of `tiny` without one (labelled with their
    arm); a run that is cancelled part-way."""
    pytest.importorskip("inspect_ai", reason="the optional extra simlab[inspect] is not installed")
    root = tmp_path_factory.mktemp("inspect")
    created = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(minutes=1)
    manifest = demo_manifest(repetitions=3, minimum_clusters=2, arms=ARMS, model_id="mockllm/candidate",
                             created=created, dataset=None)
    bound = {"simlab_manifest_sha256": manifest.sha256}
    runs = {("bound", a): _inspect_eval(root / f"bound-{a}", a, VARIANTS, bound, ["--no-fail-on-error"])
            for a in ("baseline", "candidate")}
    runs.update({("unbound", a): _inspect_eval(root / f"unbound-{a}", a, ["tiny"], {"simlab_arm": a})
                 for a in ("baseline", "candidate")})
    runs["cancelled"] = _inspect_eval(root / "cancelled", "baseline", ["cancelled"], bound)
    for name, proc in runs.items():
        out, _ = proc.communicate(timeout=600)
        assert name == "cancelled" or proc.returncode == 0, out.decode()[-2000:]
    return InspectLogs(manifest=manifest,
                       bound={(a, t): _log(root / f"bound-{a}", t) for a in ("baseline", "candidate") for t in VARIANTS},
                       unbound={a: _log(root / f"unbound-{a}", "tiny") for a in ("baseline", "candidate")},
                       cancelled=_log(root / "cancelled", "cancelled"),
                       written_after=dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(seconds=1))
