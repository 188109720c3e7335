"""The evidence path: manifest -> raw trials -> paired experiment -> comparison through a
qualified method -> receipt -> resolve / replay -> ledger (README, "The evidence path, step by step").

The public API (import from here; the modules below may change)::

    from evidence import load_manifest, trial_artifacts, population_artifact, run_experiment
    packet = run_experiment(manifest=load_manifest("manifest.json"),
                            artifacts=trial_artifacts("trials.jsonl") + [population_artifact("cases.jsonl")],
                            out="packet.json")
    packet["receipt"]["action"]        # block / hold / lab_pass / canary_eligible

Plan
    ``Manifest``, ``load_manifest``, ``template`` (a manifest to fill in), ``read_population``
    (the registered case list; its identity is the manifest's ``population_hash``).
Inputs
    ``trial_artifacts`` (JSONL / CSV trial records), ``paired_artifacts`` (two Inspect AI
    logs, two lm-evaluation-harness samples files or two per-arm trial files),
    ``population_artifact``, ``calibration_artifact`` (the judge's calibration file),
    ``detect_kind`` (which kind an input is), ``MANIFEST_KEY`` (the
    Inspect ``--metadata`` key that binds a log to its manifest).
Decision
    ``run_experiment`` (plan before data, pairing, comparison through the registered
    method, coverage by the pinned qualification, receipt; writes the packet),
    ``TestReceipt``, ``PrerequisiteReceipt`` (component receipts), ``EvidenceError`` (every
    refusal; ``option`` names the input to change).
Afterwards
    ``replay_packet`` (recompute a packet from its raw records), ``resolve_receipt`` /
    ``resolve_packet`` (a receipt's authority at a time; the second replays first),
    ``ledger`` (the hash-chained SQLite ledger: ``ledger.append``, ``ledger.verify``,
    ``ledger.sign_head``, ``ledger.verify_signed_head``), ``sign_file``, ``verify_file``,
    ``file_signature`` (detached Ed25519 signatures).
Reporting
    ``summary``, ``headline``, ``markdown`` (a pull-request comment), ``junit`` (CI).
Files
    ``read_json``, ``write_json`` (never over an existing file).
Demonstrations and benchmarks
    ``run_demo`` / ``render_demo``, ``bench_evidence`` / ``render_bench``,
    ``bench_evidence_inspect`` / ``render_bench_inspect``.

Internally: ``trial_schema`` (the row and column schema) below ``columnar`` (the pyarrow
fast path) and ``trials`` (strict ingest); ``adapters`` (Inspect logs read from their format,
lm-evaluation-harness samples); ``provenance`` (chronology, per-arm identities, pairing
mistakes); ``experiment`` (pairing); ``judge`` (the registered judge and its calibration set);
``comparison``, ``icc``, ``reliability`` (pass^k /
pass@k), ``slices`` (protected slices); ``coverage`` (the pinned qualification record,
certificate or theorem record); ``receipt`` (the rules); ``packet``; ``errors``;
``synthetic``.  Imports point down: ``simlab`` and ``methods`` only.
"""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=["ledger"], submod_attrs={
    "manifest": ["Manifest", "load_manifest", "template"],
    "population": ["read_population"],
    "packet": ["PACKET_KIND", "calibration_artifact", "detect_kind", "paired_artifacts", "population_artifact", "run_experiment",
               "trial_artifacts"],
    "adapters.inspect": ["MANIFEST_KEY"],
    "receipt": ["PrerequisiteReceipt", "TestReceipt"],
    "errors": ["EvidenceError"],
    "replay": ["replay_packet"],
    "resolve": ["bound_components", "resolve_packet", "resolve_receipt"],
    "signatures": ["file_signature", "is_signature_file", "sign_file", "verify_file"],
    "report": ["headline", "junit", "markdown", "summary"],
    "jsonfiles": ["read_json", "write_json"],
    "demo": ["render_demo", "run_demo"],
    "bench": ["bench_evidence", "render_bench"],
    "bench_inspect": ["bench_evidence_inspect", "render_bench_inspect"],
})
