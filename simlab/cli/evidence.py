"""``simlab evidence``: manifest -> raw trials -> paired comparison -> receipt -> ledger.

``init`` writes a manifest template; ``run`` evaluates trials (JSONL/CSV, or two Inspect
AI logs) and writes a packet; ``replay`` recomputes a packet from its raw records;
``resolve`` checks a receipt's authority at a time against current components;
``verify-ledger`` walks the hash chain; ``keygen`` / ``sign`` / ``verify`` handle Ed25519
signatures; ``demo`` runs the whole path on a built-in synthetic experiment.  Exit codes:
0 ok, 1 a decision that blocks or holds (or a broken ledger / failed verification), 2 bad
input.  ``simlab bench evidence`` times the path on 1,000,000 trials per arm."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from simlab.cli._args import add_json as _add_json
from simlab.cli._args import positive_int
from simlab.cli._output import EXIT_BLOCKED, EXIT_OK, UsageError
from simlab.cli._output import emit as _emit


def _time(text: str | None, flag: str) -> dt.datetime | None:
    if text is None:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag}: not an ISO 8601 time: {text!r}", flag) from None
    if t.tzinfo is None:
        raise UsageError(f"{flag}: {text!r} needs a time zone, e.g. 2026-12-01T12:00:00Z", flag)
    return t


def _trusted(paths: list[str] | None) -> dict | None:
    from simlab import signing
    if not paths:
        return None
    try:
        return signing.trusted_keys(paths)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--trusted: {exc}", "--trusted") from None


def _pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"{flag}: expected NAME=VALUE, got {item!r}", flag)
        out[name] = value
    return out


def _components(paths: list[str] | None):
    from evidence.hashing import read_json
    from evidence.receipt import PrerequisiteReceipt, TestReceipt
    tests, pres = [], []
    for path in paths or []:
        data = read_json(path)
        for item in data if isinstance(data, list) else [data]:
            kind = item.get("kind") if isinstance(item, dict) else None
            model = {"test": TestReceipt, "prerequisite": PrerequisiteReceipt}.get(kind)
            if model is None:
                raise UsageError(f"--component {path}: each entry needs kind 'test' or 'prerequisite'", "--component")
            try:
                (tests if kind == "test" else pres).append(model.model_validate_json(json.dumps(item)))
            except ValueError as exc:  # pydantic ValidationError: name the file
                raise UsageError(f"--component {path}: {exc}".splitlines()[0], "--component") from None
    return tuple(tests), tuple(pres)


def _decision_code(action: str) -> int:
    return EXIT_BLOCKED if action in ("block", "hold") else EXIT_OK


def _g(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def render_receipt(r: dict) -> None:
    c = r["comparison"]
    print(f"experiment {r['experiment_id']}: {r['state']} -> {r['action']} (authority {r['authority']}, "
          f"ceiling {r['authority_ceiling']})")
    print(f"  {c['method']['name']}: {c['status']}, estimate {_g(c['estimate'])}, lower {_g(c['lower'])} vs -margin "
          f"{-c['margin']:g}; {c['clusters']} clusters, {c['pairs']} pairs; ICC upper bound {_g(c['icc']['upper'])}")
    for reason in r["reasons"]:
        print(f"  - {reason}")
    for other in r.get("other_findings", []):
        print(f"  (also) {other}")
    print(f"  valid {r['issued_at']} .. {r['valid_until']}; receipt {r['receipt_sha256']}")


# ---------------------------------------------------------------- commands


def run_init(args) -> int:
    from evidence.manifest import Manifest, template
    from evidence.packet import write_json
    data = template()
    try:
        write_json(args.out, data)
    except ValueError as exc:
        raise UsageError(str(exc), "--out") from None
    _emit(args, {"manifest": str(args.out), "sha256": Manifest.parse(data).sha256},
          lambda p: print(f"wrote manifest template {p['manifest']} ({p['sha256']}); fill in every field, "
                          "pin the qualification record's hash, then `simlab evidence run`"))
    return 0


def run_run(args) -> int:
    from evidence.ledger import append
    from evidence.manifest import load_manifest
    from evidence.packet import inspect_artifacts, run_experiment, trial_artifacts
    if bool(args.trials) == bool(args.inspect):
        raise UsageError("give exactly one of --trials FILE or --inspect BASELINE CANDIDATE", "--trials")
    try:
        manifest = load_manifest(args.manifest)
    except ValueError as exc:
        raise UsageError(str(exc), "--manifest") from None
    now, trusted = _time(args.now, "--now"), _trusted(args.trusted)
    adapter = None
    if args.inspect:
        if not args.cluster_field or not args.score:
            raise UsageError("--inspect needs --cluster-field (sample metadata) and --score (scorer name)",
                             "--cluster-field")
        artifacts = inspect_artifacts(*args.inspect)
        adapter = {"name": "inspect", "cluster_field": args.cluster_field, "score": args.score}
    else:
        artifacts = trial_artifacts(args.trials)
    tests, pres = _components(args.component)
    packet = run_experiment(manifest=manifest, artifacts=artifacts, out=args.out,
                            adapter=adapter, tests=tests, prerequisites=pres,
                            qualification_dir=args.qualification_dir, trusted=trusted, now=now)
    receipt = packet["receipt"]
    payload = {"packet": str(args.out), "receipt": receipt}
    if args.ledger:
        payload["ledger"] = append(args.ledger, receipt)
    _emit(args, payload, lambda p: (render_receipt(p["receipt"]), print(f"  packet {p['packet']}")))
    return _decision_code(receipt["action"])


def _read(path: str, field: str):
    from evidence.hashing import read_json
    try:
        return read_json(path)
    except ValueError as exc:
        raise UsageError(str(exc), field) from None


def run_replay(args) -> int:
    from evidence.replay import replay
    packet = _read(args.packet, "packet")
    result = replay(packet, base=Path(args.packet).parent, qualification_dir=args.qualification_dir,
                    trusted=_trusted(args.trusted), artifact_paths=_pairs(args.artifact, "--artifact"),
                    anchor=args.anchor)

    def render(p):
        verdict = "replayed: identical receipt" if p["ok"] else "REJECTED"
        print(f"{verdict} -> {p['state']}, {p['action']} (authority {p['authority']})")
        for reason in p["reasons"]:
            print(f"  - {reason}")
    _emit(args, {k: v for k, v in result.items() if k != "receipt" or args.json}, render)
    return _decision_code(result["action"])


def run_resolve(args) -> int:
    from evidence.hashing import file_hash
    from evidence.resolve import resolve
    as_of = _time(args.as_of, "--as-of") or dt.datetime.now(dt.timezone.utc)
    data = _read(args.receipt, "receipt")
    receipt = data.get("receipt", data) if isinstance(data, dict) else None
    if not isinstance(receipt, dict) or "receipt_sha256" not in receipt:
        raise UsageError(f"{args.receipt}: not a receipt or packet", "receipt")
    current = _pairs(args.current, "--current")
    for name, path in _pairs(args.current_file, "--current-file").items():
        current[name] = file_hash(path)
    signature = None
    if args.trusted:
        from evidence.signatures import file_signature
        signature = file_signature(args.receipt, _trusted(args.trusted))
    result = resolve(receipt, as_of, current, signature=signature)

    def render(p):
        print(f"as of {p['as_of']}: {p['state']} -> {p['action']} (authority {p['authority']})")
        for reason in p["reasons"]:
            print(f"  - {reason}")
    _emit(args, result, render)
    return _decision_code(result["action"])


def run_verify_ledger(args) -> int:
    from evidence.ledger import verify
    result = verify(args.ledger)
    _emit(args, result, lambda p: print(
        f"ledger {'intact' if p['ok'] else 'BROKEN'}: {p['entries']} entries, head {p['head']}"
        + "".join(f"\n  - {x}" for x in p["problems"])))
    return 0 if result["ok"] else EXIT_BLOCKED


def run_keygen(args) -> int:
    from simlab import signing
    key = signing.generate_key()
    try:
        private, public = signing.save_keypair(key, args.out, args.name)
    except FileExistsError as exc:
        raise UsageError(str(exc), "--out") from None
    _emit(args, {"key_id": signing.key_id(key), "private": str(private), "public": str(public)},
          lambda p: print(f"key {p['key_id']}: private {p['private']} (keep secret), public {p['public']} "
                          "(give to verifiers as --trusted)"))
    return 0


def run_sign(args) -> int:
    from evidence.signatures import sign_file
    from simlab import signing
    try:
        key = signing.load_private_key(args.key)
    except (ValueError, OSError) as exc:
        raise UsageError(f"--key {args.key}: not an Ed25519 private key ({exc})".splitlines()[0], "--key") from None
    out = sign_file(args.file, key, args.out)
    _emit(args, {"file": args.file, "signature": str(out)}, lambda p: print(f"signed {p['file']} -> {p['signature']}"))
    return 0


def run_verify(args) -> int:
    from evidence.signatures import verify_file
    from simlab import signing
    trusted = _trusted(args.trusted) or {}
    sig = args.signature or f"{args.file}.sig"
    try:
        result = {"ok": True, "signed_by": verify_file(args.file, trusted, args.signature)}
    except signing.SignatureError as exc:
        result = {"ok": False, "signed_by": None, "reason": str(exc)}
    except ValueError as exc:  # not text, not JSON: the signature file is unreadable, not a failed check
        message = str(exc) if sig in str(exc) else f"{sig}: not a signature file ({exc})"
        raise UsageError(message, "--signature") from None
    _emit(args, result, lambda p: print(f"verified: signed by trusted key {p['signed_by']}" if p["ok"]
                                        else f"NOT verified: {p['reason']}"))
    return EXIT_OK if result["ok"] else EXIT_BLOCKED


def run_demo(args) -> int:
    from evidence.demo import render_demo, run_demo as demo
    _emit(args, demo(args.out), render_demo)
    return 0


def run_bench(args) -> int:
    from evidence.bench import bench_evidence, render_bench
    _emit(args, bench_evidence(trials_per_arm=args.trials, clusters=args.clusters,
                               reference_trials=args.reference_trials), render_bench)
    return 0


def register(sub, bench_sub) -> None:
    ev = sub.add_parser("evidence", help="the evidence path: manifest, trials, comparison, receipt, ledger")
    es = ev.add_subparsers(dest="evidence_command", required=True)

    p = es.add_parser("init", help="write a manifest template")
    p.add_argument("--out", default="manifest.json", help="path (never overwritten; default %(default)s)")
    _add_json(p)
    p.set_defaults(func=run_init)

    p = es.add_parser("run", help="evaluate raw trials against a manifest and write a packet (exit 1 on block/hold)")
    p.add_argument("--manifest", required=True, help="release manifest JSON (written by `simlab evidence init`)")
    p.add_argument("--trials", help="trial records, .jsonl or .csv (both arms)")
    p.add_argument("--inspect", nargs=2, metavar=("BASELINE", "CANDIDATE"), help="two Inspect AI .eval logs")
    p.add_argument("--cluster-field", help="Inspect: sample metadata field naming the cluster")
    p.add_argument("--score", help="Inspect: scorer whose value (C/I, 1/0, true/false) is passed")
    p.add_argument("--component", action="append", help="test / prerequisite receipt JSON (repeatable)")
    p.add_argument("--qualification-dir", help="where the pinned qualification record lives (default: shipped)")
    p.add_argument("--trusted", action="append", help="trusted public key file or directory (repeatable)")
    p.add_argument("--ledger", help="append the receipt to this SQLite ledger")
    p.add_argument("--now", help="issue time (ISO 8601 with zone; default: now)")
    p.add_argument("--out", required=True, help="packet path (never overwritten)")
    _add_json(p)
    p.set_defaults(func=run_run)

    p = es.add_parser("replay", help="recompute a packet from its raw records (exit 1 unless it replays to a pass)")
    p.add_argument("packet", help="evidence packet JSON (written by `simlab evidence run`)")
    p.add_argument("--artifact", action="append", help="ROLE=PATH: operator-selected raw artifact (repeatable)")
    p.add_argument("--anchor", help="receipt sha256 retained out of band (e.g. from the ledger)")
    p.add_argument("--qualification-dir", help="where the pinned qualification record lives (default: shipped)")
    p.add_argument("--trusted", action="append", help="trusted public key file or directory (repeatable)")
    _add_json(p)
    p.set_defaults(func=run_replay)

    p = es.add_parser("resolve", help="a receipt's authority at a time, against current component hashes")
    p.add_argument("receipt", help="receipt or packet JSON")
    p.add_argument("--as-of", help="ISO 8601 time with zone (default: now)")
    p.add_argument("--current", action="append", help="NAME=sha256:... current component hash (repeatable)")
    p.add_argument("--current-file", action="append", help="NAME=PATH: hash this file as the current NAME")
    p.add_argument("--trusted", action="append", help="require RECEIPT.sig by one of these keys (repeatable)")
    _add_json(p)
    p.set_defaults(func=run_resolve)

    p = es.add_parser("verify-ledger", help="walk the ledger's hash chain (exit 1 when broken)")
    p.add_argument("ledger", help="SQLite ledger file")
    _add_json(p)
    p.set_defaults(func=run_verify_ledger)

    p = es.add_parser("keygen", help="create an Ed25519 key pair")
    p.add_argument("--out", required=True, help="directory for NAME.key / NAME.pub")
    p.add_argument("--name", default="simlab", help="key file stem: NAME.key, NAME.pub (default %(default)s)")
    _add_json(p)
    p.set_defaults(func=run_keygen)

    p = es.add_parser("sign", help="sign a receipt, packet or qualification record (writes FILE.sig)")
    p.add_argument("file", help="receipt, packet or qualification record to sign")
    p.add_argument("--key", required=True, help="private key (PEM)")
    p.add_argument("--out", help="signature path (default FILE.sig)")
    _add_json(p)
    p.set_defaults(func=run_sign)

    p = es.add_parser("verify", help="verify FILE.sig against trusted keys (exit 1 when not verified)")
    p.add_argument("file", help="signed file (its signature is FILE.sig unless --signature)")
    p.add_argument("--trusted", action="append", required=True,
                   help="trusted public key file or directory (repeatable)")
    p.add_argument("--signature", help="signature path (default FILE.sig)")
    _add_json(p)
    p.set_defaults(func=run_verify)

    p = es.add_parser("demo", help="the whole path on a built-in synthetic experiment")
    p.add_argument("--out", help="folder for the demo's files (default: a temporary folder)")
    _add_json(p)
    p.set_defaults(func=run_demo)

    p = bench_sub.add_parser("evidence", help="evidence path on 1,000,000 trials per arm vs a json+dict reference")
    p.add_argument("--trials", type=positive_int, default=1_000_000, help="trial records per arm (default %(default)s)")
    p.add_argument("--clusters", type=positive_int, default=20_000, help="independent clusters (default %(default)s)")
    p.add_argument("--reference-trials", type=positive_int, default=None,
                   help="trials per arm for the reference (default: the same)")
    _add_json(p)
    p.set_defaults(func=run_bench)
