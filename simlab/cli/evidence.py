"""``simlab evidence``: manifest -> raw trials -> paired comparison -> receipt -> ledger.

``init`` writes a manifest template; ``hash`` prints the identity of a manifest (what
trials and logs must carry) or of a population file; ``run`` evaluates trials (JSONL/CSV,
two Inspect AI logs, or two lm-evaluation-harness samples files) and writes a packet;
``replay`` recomputes a packet from its raw records; ``resolve`` checks a receipt's
authority at a time against current components; ``verify-ledger`` walks the hash chain
(against a retained or signed head), ``sign-head`` signs the ledger's head; ``keygen`` /
``sign`` / ``verify`` handle Ed25519 signatures; ``demo`` runs the whole path on a built-in
synthetic experiment.  Exit codes: 0 ok, 1 a decision that blocks or holds (or a broken
ledger / failed verification), 2 bad input.  ``simlab bench evidence`` times the path on
1,000,000 trials per arm, ``simlab bench evidence-inspect`` the Inspect route."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

from simlab.cli._args import add_json as _add_json
from simlab.cli._args import nonempty_path
from simlab.cli._output import EXIT_BLOCKED, EXIT_OK, UsageError, log_to_stderr
from simlab.cli._output import emit as _emit
from simlab.cli._evidence_run import (add_run_options, adapter_of, check_log_options, check_out, check_paths,
                                      common_artifacts, component_receipts, load_manifest_arg, nearest_existing,
                                      parse_time, qualification_folder, report_ledger, run_evidence, sha256_arg,
                                      trusted_keys)


def _pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"{flag}: expected NAME=VALUE, got {item!r}", flag)
        if name in out:  # which one counts would be a guess
            raise UsageError(f"{flag}: {name} given twice ({out[name]!r} and {value!r})", flag)
        out[name] = value
    return out


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
    j = c.get("judge")
    if j:
        sets = ", ".join(f"{name} Se {_g(se)} Sp {_g(sp)} n {n}" for name, se, sp, n in
                         zip(j["calibration_sets"], j["sensitivity"], j["specificity"], j["calibration_items"]))
        print(f"  judge scale (raw): estimate {_g(j['raw_estimate'])} [{_g(j['raw_lower'])}, {_g(j['raw_upper'])}]; "
              f"calibration {sets}; corrected above")
    q = r.get("qualification") or {}
    if q.get("covered"):
        print(f"  qualification: {q['reasons'][0]} ({q.get('guarantee')})")
    if r.get("purpose") == "exploratory":
        print("  exploratory run (lab_only at most)")
    if r.get("holdout"):
        h = r["holdout"]
        beyond = ", BEYOND THE MAXIMUM" if h.get("beyond_maximum") else ""
        print(f"  sealed holdout {h['id']}: {h['confirmatory_accesses']} confirmatory access(es) of at most "
              f"{h['max_uses']}{beyond}, {h['exploratory_accesses']} exploratory (this run: {h['purpose']} access "
              f"{h['access']}; ledger entry {h['ledger_seq']})")
    for reason in r["reasons"]:
        print(f"  - {reason}")
    for other in r.get("other_findings", []):
        print(f"  (also) {other}")
    print(f"  valid {r['issued_at']} .. {r['valid_until']}; receipt {r['receipt_sha256']}")


# ---------------------------------------------------------------- commands


def run_init(args) -> int:
    check_out(args.out, what="manifest")
    from evidence import Manifest, template, write_json
    data = template()
    try:
        write_json(args.out, data)
    except ValueError as exc:
        raise UsageError(str(exc), "--out") from None
    _emit(args, {"manifest": str(args.out), "sha256": Manifest.parse(data).sha256},
          lambda p: print(f"wrote manifest template {p['manifest']} ({p['sha256']}); fill in every field, "
                          "pin the qualification record's hash, print the edited manifest's identity with "
                          "`simlab evidence hash`, then measure and `simlab evidence run` / `simlab compare`"))
    return 0


def _ledger_line(p: dict) -> None:
    if "ledger" in p:
        print(f"  ledger entry {p['ledger']['seq']}: head {p['ledger']['entry_sha256']} (retain it elsewhere: "
              "`simlab evidence verify-ledger --head ...`)")


def run_run(args) -> int:
    if bool(args.trials) + bool(args.inspect) + bool(args.lm_eval) != 1:
        raise UsageError("give exactly one of --trials FILE, --inspect BASELINE CANDIDATE or --lm-eval BASELINE "
                         "CANDIDATE", "--trials")
    files = check_paths(args, {args.trials: "--trials", **dict.fromkeys(args.inspect or (), "--inspect"),
                               **dict.fromkeys(args.lm_eval or (), "--lm-eval")})
    check_log_options("trials" if args.trials else "inspect" if args.inspect else "lm-eval", args)
    manifest = load_manifest_arg(args.manifest)
    from evidence import paired_artifacts, trial_artifacts
    now, trusted = parse_time(args.now, "--now"), trusted_keys(args.trusted)
    if args.trials:
        try:
            kind, artifacts = "trials", trial_artifacts(args.trials)
        except ValueError as exc:  # not .jsonl / .csv
            raise UsageError(str(exc), "--trials") from None
    else:
        kind = "inspect" if args.inspect else "lm-eval"
        artifacts = paired_artifacts(kind, *(args.inspect or args.lm_eval))
    adapter = adapter_of(kind, args, manifest)
    tests, pres = component_receipts(args.component)
    packet = run_evidence(files=files, manifest=manifest, artifacts=common_artifacts(artifacts, args), out=args.out,
                          adapter=adapter, tests=tests, prerequisites=pres, qualification_dir=args.qualification_dir,
                          trusted=trusted, now=now, registered_after=args.registered_after_measurement,
                          exploratory=args.exploratory,
                          ledger=args.ledger)
    payload = {"packet": str(args.out), "receipt": packet["receipt"]}
    report_ledger(args, payload, args.out)
    _emit(args, payload, lambda p: (render_receipt(p["receipt"]), print(f"  packet {p['packet']}"), _ledger_line(p)))
    return _decision_code(packet["receipt"]["action"])


def run_hash(args) -> int:
    from evidence import Manifest, MANIFEST_KEY, read_json, read_population
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"no file at {path} (a manifest.json or a population file)", "file")
    try:
        data = read_json(path) if path.suffix.lower() == ".json" else None
    except ValueError as exc:
        raise UsageError(str(exc), "file") from None
    if isinstance(data, dict) and "experiment_id" in data:
        try:
            sha = Manifest.parse(data, source=str(path)).sha256
        except ValueError as exc:
            raise UsageError(str(exc), "file") from None
        payload = {"file": str(path), "kind": "manifest", "sha256": sha,
                   "inspect_metadata": f"--metadata {MANIFEST_KEY}={sha}"}
        render = (lambda p: print(f"{p['sha256']}\n  manifest identity of {p['file']}: every trial row's "
                                  f"manifest_sha256; for Inspect: inspect eval ... {p['inspect_metadata']}"))
    else:
        try:
            population = read_population(path)
        except ValueError as exc:  # the file given here, not a --population option
            raise UsageError(f"{exc} (a population file lists case_id, cluster_id per case)", "file") from None
        payload = {"file": str(path), "kind": "population", "sha256": population.sha256, "cases": population.cases,
                   "clusters": len(set(population.clusters.values()))}
        render = (lambda p: print(f"{p['sha256']}\n  population identity of {p['file']} ({p['cases']} cases, "
                                  f"{p['clusters']} clusters): the manifest's population_hash"))
    _emit(args, payload, render)
    return 0


def _read(path: str, field: str):
    from evidence import read_json
    try:
        return read_json(path)
    except ValueError as exc:
        raise UsageError(str(exc), field) from None


def _packet_artifacts(args, packet) -> dict[str, str]:
    """``--artifact ROLE=PATH``: a role the packet records, a file that is there."""
    listed = packet.get("artifacts")
    roles = sorted({a.get("role") for a in listed if isinstance(a, dict)} if isinstance(listed, list) else set(),
                   key=str)
    paths = _pairs(args.artifact, "--artifact")
    for role, path in paths.items():
        if role not in roles:
            raise UsageError(f"--artifact {role}={path}: the packet records no artifact {role!r} (its roles: "
                             f"{', '.join(map(str, roles)) or 'none'})", "--artifact")
        if not Path(path).is_file():
            raise UsageError(f"--artifact {role}={path}: no file there", "--artifact")
    return paths


def run_replay(args) -> int:
    packet = _read(args.packet, "packet")  # a missing or malformed packet answers before the evidence path loads
    anchor = None if args.anchor is None else sha256_arg(args.anchor, "--anchor")
    from evidence import PACKET_KIND
    if not isinstance(packet, dict) or packet.get("kind") != PACKET_KIND:
        raise UsageError(f"{args.packet}: not an evidence packet (the JSON `evidence run` or `compare` wrote, kind "
                         f"{PACKET_KIND!r})", "packet")
    from evidence import replay_packet
    result = replay_packet(packet, base=Path(args.packet).parent, qualification_dir=args.qualification_dir,
                    trusted=trusted_keys(args.trusted), artifact_paths=_packet_artifacts(args, packet),
                    anchor=anchor, ledger=args.ledger)

    def render(p):
        verdict = "replayed: identical receipt" if p["ok"] else "REJECTED"
        print(f"{verdict} -> {p['state']}, {p['action']} (authority {p['authority']})")
        for reason in p["reasons"]:
            print(f"  - {reason}")
    _emit(args, {k: v for k, v in result.items() if k != "receipt" or args.json}, render)
    return _decision_code(result["action"])


def _current(args, receipt: dict, file_hash) -> dict[str, str]:
    """``--current NAME=sha256:...`` and ``--current-file NAME=PATH`` as ``name -> hash``, each
    NAME one the receipt binds and each hash well formed where the receipt binds a hash
    (upper-case hex is the same hash; a judge part is bound by its label): a typo is bad input
    (exit 2), not drift that blocks the release (exit 1)."""
    from simlab.hashing import SHA256_PATTERN
    from evidence import bound_components

    bound = bound_components(receipt)
    given = {n: (v, "--current") for n, v in _pairs(args.current, "--current").items()}
    for name, path in _pairs(args.current_file, "--current-file").items():
        if name in given:
            raise UsageError(f"--current-file {name}={path}: {name} is also given with --current", "--current-file")
        given[name] = (path, "--current-file")
    current = {}
    for name, (value, flag) in given.items():
        if name not in bound:
            raise UsageError(f"{flag} {name}={value}: the receipt binds no component {name!r} (it binds "
                             f"{', '.join(bound) or 'none'})", flag)
        if flag == "--current-file":
            if not Path(value).is_file():
                raise UsageError(f"--current-file {name}={value}: no file there", flag)
            try:
                current[name] = file_hash(value)
            except OSError as exc:
                raise UsageError(f"--current-file {name}={value}: cannot read it ({exc.strerror or exc})",
                                 flag) from None
            continue
        if not re.match(SHA256_PATTERN, bound[name]):  # a judge part is bound by its label (rubric-v3)
            current[name] = value
            continue
        digest = value.strip().lower()
        if not re.match(SHA256_PATTERN, digest):
            raise UsageError(f"--current {name}={value}: not a sha256:<64 hex digits> hash (the receipt binds "
                             f"{name} as one)", flag)
        current[name] = digest
    return current


def run_resolve(args) -> int:
    from simlab.hashing import file_hash
    from evidence import resolve_receipt, resolve_packet
    as_of = parse_time(args.as_of, "--as-of") or dt.datetime.now(dt.timezone.utc)
    if args.anchor is not None and not args.replay:  # resolving a bare receipt has no use for it
        raise UsageError("--anchor is checked when the packet is replayed: add --replay", "--anchor")
    if args.ledger is not None and not args.replay:
        raise UsageError("--ledger is read when the packet is replayed: add --replay", "--ledger")
    if args.qualification_dir is not None and not args.replay:   # was ignored without a word
        raise UsageError("--qualification-dir is read when the packet is replayed: add --replay",
                         "--qualification-dir")
    data = _read(args.receipt, "receipt")
    receipt = data.get("receipt", data) if isinstance(data, dict) else None
    if not isinstance(receipt, dict) or "receipt_sha256" not in receipt:
        raise UsageError(f"{args.receipt}: not a receipt or packet", "receipt")
    current = _current(args, receipt, file_hash)
    if args.replay:
        if receipt is data:
            raise UsageError(f"--replay needs a packet (with its raw artifacts), {args.receipt} is a bare receipt",
                             "--replay")
        result = resolve_packet(data, as_of, current, base=Path(args.receipt).parent,
                                qualification_dir=args.qualification_dir, trusted=trusted_keys(args.trusted),
                                anchor=None if args.anchor is None else sha256_arg(args.anchor, "--anchor"),
                                ledger=args.ledger)
    else:
        signature = None
        if args.trusted:
            from evidence import file_signature
            signature = file_signature(args.receipt, trusted_keys(args.trusted))
        result = resolve_receipt(receipt, as_of, current, signature=signature)

    def render(p):
        print(f"as of {p['as_of']}: {p['state']} -> {p['action']} (authority {p['authority']})")
        for reason in p["reasons"]:
            print(f"  - {reason}")
    _emit(args, result, render)
    return _decision_code(result["action"])


def run_verify_ledger(args) -> int:
    head = None if args.head is None else sha256_arg(args.head, "--head")  # a typo is bad input, not a truncation
    from evidence import ledger
    from simlab import signing
    seq, signed = None, None
    if args.signed_head:
        if not args.trusted:
            raise UsageError("--signed-head needs --trusted keys to check who signed the head", "--trusted")
        try:
            signed = ledger.verify_signed_head(_read(args.signed_head, "--signed-head"), trusted_keys(args.trusted))
        except signing.SignatureError as exc:
            result = {"ok": False, "entries": None, "head": None, "problems": [f"signed head not accepted: {exc}"]}
            _emit(args, result, lambda p: print(f"ledger NOT verified: {p['problems'][0]}"))
            return EXIT_BLOCKED
        if head is not None and head != signed["entry_sha256"]:
            raise UsageError("--head and --signed-head name different heads", "--head")
        head, seq = signed["entry_sha256"], signed["seq"]
    result = ledger.verify(args.ledger, head=head, head_seq=seq)
    if signed:
        result["signed_head"] = signed

    def render(p):
        print(f"ledger {'intact' if p['ok'] else 'BROKEN'}: {p['entries']} entries, head {p['head']}"
              + "".join(f"\n  - {x}" for x in p["problems"]))
        kept = p.get("retained_head")
        if kept and kept["seq"] is not None:
            by = f", signed by {p['signed_head']['signed_by']}" if p.get("signed_head") else ""
            print(f"  retained head found at entry {kept['seq']}{by}; {kept['entries_after']} entries after it")
        elif not kept:
            print("  no retained head given: a truncated or rebuilt chain also verifies (--head / --signed-head)")
    _emit(args, result, render)
    return 0 if result["ok"] else EXIT_BLOCKED


def run_sign_head(args) -> int:
    check_out(args.out, what="signed head")
    from evidence import ledger
    from evidence import write_json
    key = _private_key(args.key)
    envelope = ledger.sign_head(args.ledger, key, now=parse_time(args.now, "--now"))
    try:
        write_json(args.out, envelope)
    except ValueError as exc:
        raise UsageError(str(exc), "--out") from None
    _emit(args, {"signed_head": str(args.out), **envelope["statement"], "signed_by": envelope["signature"]["key_id"]},
          lambda p: print(f"signed head of {args.ledger}: entry {p['seq']} {p['entry_sha256']} by {p['signed_by']} "
                          f"-> {p['signed_head']} (keep it where the ledger's writers cannot)"))
    return 0


def _private_key(path: str):
    """``--key``: an unreadable file named as such, a readable one that is not a key as that."""
    from simlab import signing
    try:
        return signing.load_private_key(path)
    except OSError as exc:
        raise UsageError(f"--key {path}: cannot read it ({exc.strerror or exc})", "--key") from None
    except ValueError as exc:
        raise UsageError(f"--key {path}: not an Ed25519 private key ({exc})".splitlines()[0], "--key") from None


def run_keygen(args) -> int:
    from simlab import signing
    if not args.out.strip():
        raise UsageError("--out: an empty path; name the directory for the key files", "--out")
    if not args.name or args.name in (".", "..") or Path(args.name).name != args.name:
        raise UsageError(f"--name {args.name!r}: a file name without a folder (the keys are NAME.key and NAME.pub "
                         "in --out)", "--name")
    folder = nearest_existing(Path(args.out))
    if not folder.is_dir():
        where = "exists" if str(folder) == str(Path(args.out)) else f"is below {folder}, which exists"
        raise UsageError(f"--out {args.out} {where} and is not a directory; a file is never overwritten (--out names "
                         f"the directory {args.name}.key and {args.name}.pub are written to)", "--out")
    key = signing.generate_key()
    try:
        private, public = signing.save_keypair(key, args.out, args.name)
    except FileExistsError as exc:
        # the key file in the way (the error's own filename was the folder)
        there = next((p for p in (Path(args.out) / f"{args.name}.key", Path(args.out) / f"{args.name}.pub")
                      if p.exists() or p.is_symlink()), Path(exc.filename or args.out))
        link = f" (a link to {os.readlink(there)})" if there.is_symlink() else ""
        raise UsageError(f"--out {args.out}: {there} already exists{link}; keys are never overwritten (choose another "
                         "--out or --name)", "--out") from None
    _emit(args, {"key_id": signing.key_id(key), "private": str(private), "public": str(public)},
          lambda p: print(f"key {p['key_id']}: private {p['private']} (keep secret), public {p['public']} "
                          "(give to verifiers as --trusted)"))
    return 0


def run_sign(args) -> int:
    from evidence import is_signature_file, sign_file
    key = _private_key(args.key)
    target = Path(args.out or f"{args.file}.sig")
    inputs = {"the file being signed": args.file, "the private key (--key)": args.key,
              "the public key beside --key": Path(args.key).with_suffix(".pub")}
    for what, given in inputs.items():  # this command's inputs, whatever --force says
        if target.exists() and Path(given).exists() and target.resolve() == Path(given).resolve():
            raise UsageError(f"--out {target} is {what}; the signature would replace it (even with --force, "
                             "choose another path)", "--out")
    if target.is_file() and not args.force and not is_signature_file(target):
        raise UsageError(f"--out {target} exists and is not a signature file simlab wrote; refusing to overwrite it "
                         "(choose another path, or add --force to replace it)", "--out")
    try:
        out = sign_file(args.file, key, args.out)
    except ValueError as exc:  # the document: not JSON, not UTF-8, nested too deeply, a NaN ...
        text = str(exc)
        raise UsageError(text if str(args.file) in text else f"{args.file}: {text}", "file") from None
    _emit(args, {"file": args.file, "signature": str(out)}, lambda p: print(f"signed {p['file']} -> {p['signature']}"))
    return 0


def run_verify(args) -> int:
    from evidence import verify_file
    from simlab import signing
    trusted = trusted_keys(args.trusted) or {}
    _read(args.file, "file")  # an unreadable document is named as the document, not as its signature
    sig = args.signature or f"{args.file}.sig"
    try:
        result = {"ok": True, "signed_by": verify_file(args.file, trusted, args.signature)}
    except signing.SignatureError as exc:
        result = {"ok": False, "signed_by": None, "reason": str(exc)}
    except ValueError as exc:  # not text, not JSON: the signature file is unreadable, not a failed check
        raise UsageError(f"{sig}: not a signature file ({str(exc).removeprefix(f'{sig}: ')})", "--signature") from None
    _emit(args, result, lambda p: print(f"verified: signed by trusted key {p['signed_by']}" if p["ok"]
                                        else f"NOT verified: {p['reason']}"))
    return EXIT_OK if result["ok"] else EXIT_BLOCKED


def cmd_evidence_demo(args) -> int:
    from evidence import render_demo, run_demo
    _emit(args, run_demo(args.out, progress=log_to_stderr(args)), render_demo)
    return 0


def register(sub, bench_sub) -> None:
    ev = sub.add_parser("evidence", help="the evidence path: manifest, trials, comparison, receipt, ledger")
    es = ev.add_subparsers(dest="evidence_command", required=True)

    p = es.add_parser("init", help="write a manifest template")
    p.add_argument("--out", default="manifest.json", help="path (never overwritten; default %(default)s)")
    _add_json(p)
    p.set_defaults(func=run_init)

    p = es.add_parser("hash", help="print the identity of a manifest (what trials and logs carry) or population file")
    p.add_argument("file", help="manifest.json, or a population file (JSONL/CSV/JSON of case_id, cluster_id)")
    _add_json(p)
    p.set_defaults(func=run_hash)

    p = es.add_parser("run", help="evaluate raw trials against a manifest and write a packet (exit 1 on block/hold)")
    p.add_argument("--trials", help="trial records, .jsonl or .csv (both arms)")
    p.add_argument("--inspect", nargs=2, metavar=("BASELINE", "CANDIDATE"), help="two Inspect AI logs (.eval / .json)")
    p.add_argument("--lm-eval", nargs=2, metavar=("BASELINE", "CANDIDATE"),
                   help="two lm-evaluation-harness --log_samples files (samples_<task>_<date>.jsonl)")
    add_run_options(p)
    p.add_argument("--out", required=True, help="packet path (never overwritten; a missing folder is created)")
    _add_json(p)
    p.set_defaults(func=run_run)

    p = es.add_parser("replay", help="recompute a packet from its raw records (exit 1 unless it replays to a pass; 2 "
                                        "when the file is not a packet or an option is malformed)")
    p.add_argument("packet", help="the packet JSON `evidence run` / `compare` wrote (its raw files beside it)")
    p.add_argument("--artifact", action="append", help="ROLE=PATH: operator-selected raw artifact (repeatable)")
    p.add_argument("--anchor", help="receipt sha256 retained out of band (e.g. from the ledger)")
    p.add_argument("--ledger", help="a sealed holdout's use the packet states must be in this ledger (no new use)")
    p.add_argument("--qualification-dir", type=qualification_folder,
                   help="where the pinned qualification record lives (default: shipped)")
    p.add_argument("--trusted", type=nonempty_path, action="append",
                   help="trusted public key file or directory the qualification "
                        "record is checked with (repeatable)")
    _add_json(p)
    p.set_defaults(func=run_replay)

    p = es.add_parser("resolve", help="a receipt's authority at a time, against current component hashes")
    p.add_argument("receipt", help="receipt or packet JSON")
    p.add_argument("--as-of", help="ISO 8601 time with zone (default: now)")
    p.add_argument("--current", action="append", help="NAME=sha256:... current component hash (repeatable)")
    p.add_argument("--current-file", action="append", help="NAME=PATH: hash this file as the current NAME")
    p.add_argument("--trusted", type=nonempty_path, action="append",
                   help="require RECEIPT.sig by one of these keys (repeatable); with "
                        "--replay: the keys the qualification record is checked with")
    p.add_argument("--replay", action="store_true", help="recompute the packet from its raw artifacts first (without "
                                                         "it or a trusted signature: lab_only at most)")
    p.add_argument("--qualification-dir", type=qualification_folder,
                   help="with --replay: where the pinned qualification record lives")
    p.add_argument("--ledger", type=nonempty_path,
                   help="with --replay: the ledger a sealed holdout's uses are recorded in (needed for such a packet)")
    p.add_argument("--anchor", help="with --replay: receipt sha256 retained out of band")
    _add_json(p)
    p.set_defaults(func=run_resolve)

    p = es.add_parser("verify-ledger", help="walk the ledger's hash chain (exit 1 when broken)")
    p.add_argument("ledger", help="the SQLite ledger file")
    p.add_argument("--head", help="entry sha256 of the head retained elsewhere: it must still be in the chain")
    p.add_argument("--signed-head", help="a head signed with `sign-head` (needs --trusted)")
    p.add_argument("--trusted", type=nonempty_path, action="append",
                   help="keys a signed head must be signed by (repeatable)")
    _add_json(p)
    p.set_defaults(func=run_verify_ledger)

    p = es.add_parser("sign-head", help="sign the ledger's current head (keep the file outside the writers' reach)")
    p.add_argument("ledger", help="the SQLite ledger file")
    p.add_argument("--key", type=nonempty_path, required=True, help="private key (PEM)")
    p.add_argument("--out", required=True, help="signed head JSON (never overwritten)")
    p.add_argument("--now", help="signing time (ISO 8601 with zone; default: now)")
    _add_json(p)
    p.set_defaults(func=run_sign_head)

    p = es.add_parser("keygen", help="create an Ed25519 key pair")
    p.add_argument("--out", required=True, help="directory for NAME.key / NAME.pub")
    p.add_argument("--name", default="simlab", help="key file stem: NAME.key / NAME.pub (default %(default)s)")
    _add_json(p)
    p.set_defaults(func=run_keygen)

    p = es.add_parser("sign", help="sign a receipt, packet or qualification record (writes FILE.sig)")
    p.add_argument("file", help="the JSON file to sign")
    p.add_argument("--key", type=nonempty_path, required=True, help="private key (PEM)")
    p.add_argument("--out", type=nonempty_path,
                   help="signature path (default FILE.sig); an existing file that is not a signature is "
                        "refused unless --force")
    p.add_argument("--force", action="store_true", help="replace --out even when it is not a signature file")
    _add_json(p)
    p.set_defaults(func=run_sign)

    p = es.add_parser("verify", help="verify FILE.sig against trusted keys (exit 1 when not verified; 2 "
                                          "when a file cannot be read or the signature file is damaged)")
    p.add_argument("file", help="the signed JSON file")
    p.add_argument("--trusted", type=nonempty_path, action="append", required=True,
                   help="trusted public key file or directory "
                        "(repeatable)")
    p.add_argument("--signature", type=nonempty_path, help="signature path (default FILE.sig)")
    _add_json(p)
    p.set_defaults(func=run_verify)

    p = es.add_parser("demo", help="the whole path on a built-in synthetic experiment")
    p.add_argument("--out", type=nonempty_path, help="folder for the demo's files (default: a temporary folder)")
    _add_json(p)
    p.set_defaults(func=cmd_evidence_demo)

    from simlab.cli.bench import register_evidence_benches  # --max-seconds, estimates, one-line failures

    register_evidence_benches(bench_sub)
