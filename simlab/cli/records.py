"""``simlab records``: list, verify, sign, look up coverage in, and regenerate the
qualification records directory (``--records DIR``, else ``$SIMLAB_RECORDS``, else the
checkout's ``results/qualification``, else the copy installed with simlab)."""
from __future__ import annotations

import argparse

from simlab.cli._args import add_json as _json_flag
from simlab.cli._args import (add_max_seconds, check_and_say_time, check_methods, check_time, finite_float, n_jobs,
                             nonempty_path, positive_int)
from simlab.cli._output import UsageError, emit, log_to_stderr


def _records_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--records", default=None, metavar="DIR",
                   help="records directory (default: $SIMLAB_RECORDS, the checkout's results/qualification, or "
                        "the installed copy)")


def _records_dir(args: argparse.Namespace, allow_missing: bool = False):
    """The records directory; a ``--records`` that is not a directory is refused (never an empty
    listing), unless ``allow_missing`` (coverage decided by the certificates given alone)."""
    from pathlib import Path

    from methods.qualification import records_dir

    if args.records is not None and not Path(args.records).is_dir() and not allow_missing:
        raise UsageError(f"--records {args.records} is not a directory", "--records")
    return records_dir(args.records)


def private_key(path: str, flag: str):
    """An Ed25519 private key from a PEM file, or a refusal naming the flag."""
    from simlab.signing import load_private_key

    try:
        return load_private_key(path)
    except ValueError as exc:  # cryptography's parse errors and SignatureError
        reason = str(exc).split(". See ")[0]
        raise UsageError(f"{flag} {path}: not an Ed25519 private key in PEM format ({reason})", flag) from None


def _trusted(paths):
    if not paths:
        return None
    from simlab.signing import trusted_keys
    try:
        return trusted_keys(paths)
    except ValueError as exc:  # a file that is not a public key: name the option it came from
        raise UsageError(f"--trusted-keys: {exc}", "--trusted-keys") from None


def _files(method: str | None, d):
    """(path, loader) for every record, theorem record and certificate of ``method`` in ``d``."""
    from methods.qualification import (certificate_paths, load_certificate, load_record, load_theorem_record,
                                       record_paths, theorem_paths)
    return [(p, load_record) for p in record_paths(method, d)] + \
        [(p, load_theorem_record) for p in theorem_paths(method, d)] + \
        [(p, load_certificate) for p in certificate_paths(method, d)]


def cmd_list(args: argparse.Namespace) -> None:
    import json

    from methods.qualification import certificate_paths, record_paths, theorem_paths, unreadable_files

    d = _records_dir(args)
    rows = []
    for kind, paths in (("grid record", record_paths(args.method, d)), ("theorem", theorem_paths(args.method, d)),
                        ("certificate", certificate_paths(args.method, d))):
        for p in paths:
            data = json.loads(p.read_text())
            engine = data.get("engine")
            guarantee = ("theorem" if kind == "theorem" else
                         "exact" if engine and engine.startswith("exact") and data.get("proven_upper") is not None
                         else "model-certified")
            rows.append({"file": str(p), "kind": kind, "method": (data.get("method") or {}).get("name"),
                         "guarantee": guarantee, "verdict": data.get("verdict")})
    # a damaged file is listed as such (whose method it held cannot be read): never silently left out
    unreadable = [{"file": str(p), "reason": why} for p, why in unreadable_files(d)]
    payload = {"directory": str(d), "files": rows, "unreadable": unreadable}

    def render(p: dict) -> None:
        print(f"records in {p['directory']}:")
        for r in p["files"]:
            print(f"{r['kind']:11s} {r['guarantee']:15s} {r['method'] or '?':32s} {r['file'].rsplit('/', 1)[-1]}")
        for r in p["unreadable"]:
            print(f"{'UNREADABLE':11s} {'-':15s} {'?':32s} {r['file'].rsplit('/', 1)[-1]}: {r['reason']}")
        if p["unreadable"]:
            print(f"{len(p['unreadable'])} file(s) could not be read; `simlab records verify` fails until they are "
                  "repaired or removed")

    emit(args, payload, render)


def _theorem_record_file(path) -> bool:
    """Is ``path`` a theorem record (of any method or identity, stale or not)?"""
    from methods.qualification import load_theorem_record

    try:
        load_theorem_record(path, check_current=False)
    except Exception:  # not JSON, not this schema, a broken hash: not a record simlab wrote
        return False
    return True


def cmd_theorem(args: argparse.Namespace) -> None:
    from pathlib import Path

    from simlab.cli.study import check_folder
    from methods import get, names
    from methods.qualification import build_theorem_record
    from studies import save_json
    from studies.qualify import method_key

    records = _records_dir(args)  # a --records that is not a folder is refused, --out given or not
    out = Path(args.out) if args.out else records
    if args.out:
        check_folder(args.out, "--out")  # named as the flag, before any record is built
    chosen = [args.method] if args.method else [n for n in names() if get(n).theorem is not None]
    built = []
    for name in chosen:
        m = get(name)
        if m.theorem is None:
            raise UsageError(f"method {name!r} declares no theorem: its guarantee must be measured (simlab "
                             "qualify / certify)", "--method")
        rec = build_theorem_record(m, method_key(m))
        target = out / rec.file_name()
        if target.exists() and not args.force and not _theorem_record_file(target):
            raise UsageError(f"--out {target} exists and is not a theorem record simlab wrote; refusing to overwrite "
                             "it (choose another folder, or add --force to replace it)", "--out")
        built.append((m, rec, target))
    written = []
    for m, rec, target in built:  # every file checked before any is written
        path = save_json(rec.to_json(), target)
        written.append({"method": m.label, "file": str(path), "theorem_sha256": rec.theorem_sha256})
    emit(args, {"directory": str(out), "written": written},
         lambda p: print("\n".join(f"{w['method']}: {w['file']} ({w['theorem_sha256'][:19]})" for w in p["written"])))


def cmd_verify(args: argparse.Namespace) -> None:
    from methods.qualification import RecordError, unreadable_files

    d = _records_dir(args)
    keys = _trusted(args.trusted_keys)
    # a file that is not a readable record is a failure (whichever method it was), not a skip
    rows = [{"file": path.name, "ok": False, "reason": why} for path, why in unreadable_files(d)]
    for path, load in _files(args.method, d):
        try:
            load(path, trusted_keys=keys, check_current=not args.allow_stale)
            rows.append({"file": path.name, "ok": True, "reason": ""})
        except RecordError as exc:
            rows.append({"file": path.name, "ok": False, "reason": str(exc)})
    if not rows:
        raise ValueError(f"no records in {d}")
    bad = [r for r in rows if not r["ok"]]
    if bad:
        raise ValueError(f"{len(bad)} of {len(rows)} files failed verification: "
                         + "; ".join(f"{r['file']}: {r['reason']}" for r in bad))
    emit(args, {"directory": str(d), "files": rows, "all_ok": True},
         lambda p: print("\n".join(f"ok {r['file']}" for r in p["files"])))


def cmd_sign(args: argparse.Namespace) -> None:
    import json

    from studies import save_json

    key = private_key(args.key, "--key")
    d = _records_dir(args)
    signed = []
    for path, load in _files(args.method, d):
        obj = load(path).signed(key)       # verified first: never sign a tampered or stale record
        save_json(obj.to_json(), path)
        signed.append({"file": path.name, "key_id": json.loads(obj.to_json())["signature"]["key_id"]})
    emit(args, {"directory": str(d), "signed": signed},
         lambda p: print("\n".join(f"signed {s['file']} ({s['key_id']})" for s in p["signed"])))


def _check_certificate_files(paths) -> None:
    """Each ``--certificate`` is a readable JSON object with a ``certificate_sha256`` -- checked with the
    standard library before the qualification layer (pydantic, numpy, scipy.stats, numba: 2.6 s on 2 cores)
    loads, so a file that is not a certificate at all is refused at once.  Its hash, schema and
    verdicts are still verified there (``methods.qualification.load_certificate``)."""
    import json

    for path in paths or ():
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except IsADirectoryError:
            raise UsageError(f"--certificate {path}: a directory, not a certificate file (a folder of certificates "
                             "is given with --records)", "--certificate") from None
        except OSError as exc:
            raise UsageError(f"--certificate {path}: {exc.strerror or exc}", "--certificate") from None
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise UsageError(f"certificate {path}: not valid JSON ({exc})", "--certificate") from None
        except RecursionError:
            raise UsageError(f"certificate {path}: not a certificate (JSON nested too deeply to read)",
                             "--certificate") from None
        if not isinstance(data, dict):
            raise UsageError(f"certificate {path}: not a JSON object", "--certificate")
        if "certificate_sha256" not in data:
            what = ("a qualification record, not a certificate (records are read from --records)"
                    if "record_sha256" in data else "not a certificate (no certificate_sha256)")
            raise UsageError(f"certificate {path}: {what}", "--certificate")


def cmd_coverage(args: argparse.Namespace) -> None:
    check_methods(args.method, "--method")  # an unknown name is an input error, not "not covered"
    if args.rho is not None and args.rho_max is not None and args.rho_max < args.rho:   # it answered covered: true
        raise UsageError(f"--rho-max {args.rho_max:g} must be >= --rho {args.rho:g}: the nuisance domain the coverage "
                         "must reach holds the design's own correlation", "--rho-max")
    _check_certificate_files(args.certificate)  # before the qualification layer loads
    from methods.qualification import DesignPoint, find_coverage
    from simlab.scenario import FixedSize

    point = DesignPoint(clusters=args.clusters, cluster_size=FixedSize(trials=args.trials), margin=args.margin,
                        rho=args.rho, rho_max=args.rho_max, looks=args.looks)
    from pathlib import Path

    from methods.qualification import RecordError

    try:
        c = find_coverage(args.method, point, _records_dir(args, allow_missing=bool(args.certificate)),
                          certificates=args.certificate or (), trusted_keys=_trusted(args.trusted_keys))
    except RecordError as exc:   # the file at fault: a --certificate given, else one in the records folder
        given = [c for c in args.certificate or () if Path(c).name in str(exc)]
        raise UsageError(str(exc), "--certificate" if given else "--records") from None
    emit(args, {"method": args.method, "design": point.model_dump(mode="json"), "covered": c.covered,
                "reason": c.reason, "source": c.record},
         lambda p: print(f"{p['method']}: {'covered' if p['covered'] else 'NOT covered'} -- {p['reason']}"))


def cmd_regenerate(args: argparse.Namespace) -> None:
    import os

    from studies.qualify import plan, regenerate, regenerate_estimate

    d = _records_dir(args)
    from simlab.cli.study import check_folder
    for flag, folder in (("--out", args.out), ("--checkpoint", args.checkpoint)):
        if folder:  # refused now, not after the first records are regenerated
            check_folder(folder, flag)
    only = set(args.only.split(",")) if args.only else None
    items = plan(d, only, args.policy)
    if not items:
        raise ValueError(f"no records to regenerate in {d}" + (f" for {sorted(only)}" if only else ""))
    if args.dry_run:
        emit(args, {"directory": str(d), "plan": [i.as_dict() for i in items]},
             lambda p: print("\n".join(f"policy {i['policy_sha256'][7:17]} ({i['grid_cells']} cells): "
                                       f"{', '.join(i['methods'])}" for i in p["plan"])))
        return
    say = log_to_stderr(args)
    estimate = regenerate_estimate(items, (os.cpu_count() or 1) if args.n_jobs == -1 else args.n_jobs, args.checkpoint)
    what = f"regenerating {sum(len(i.sources) for i in items)} record(s) under {len(items)} policy(ies)"
    check_time(args, estimate.low, f"{what} (first rounds; the whole run: {estimate.describe()})")
    say(f"{what}: estimated {estimate.describe()}")
    done = regenerate(d, args.out, only=only, policy=args.policy, n_jobs=args.n_jobs, checkpoint=args.checkpoint,
                      progress=say)
    emit(args, {"directory": str(d), "out": args.out or str(d), "records": done},
         lambda p: print("\n".join(f"{r['method']}: {r['cells_qualified']}/{r['cells_total']} cells qualified -> "
                                   f"{r['record']}" for r in p["records"])))


def cmd_restamp(args: argparse.Namespace) -> int:
    from studies.qualify import restamp

    d = _records_dir(args)
    only = set(args.only.split(",")) if args.only else None
    say = log_to_stderr(args)

    def before(seconds: float, files: int) -> None:
        check_and_say_time(args, seconds, f"re-checking {files} file(s) whose method identity changed", say)

    done = restamp(d, only=only, sample=args.sample, dry_run=args.dry_run, progress=say, before=before)
    if not done:
        raise ValueError(f"no records in {d}" + (f" for {sorted(only)}" if only else ""))

    def render(p: dict) -> None:
        for r in p["records"]:
            what = "points certified again" if r["record"].endswith(".cert.json") else "scenarios"
            extra = f" ({r['checked']} {what}, {r['replications']:,} replications re-simulated)" if r["checked"] else ""
            print(f"{r['record']}: {r['status']}{extra}" + (f" -- {r['detail']}" if r["detail"] else ""))

    emit(args, {"directory": str(d), "records": [r.as_dict() for r in done]}, render)
    return 2 if any(r.status in ("mismatch", "unusable") for r in done) else 0


def register(subparsers, bench_subparsers) -> None:
    p = subparsers.add_parser("records", help="list, verify, sign, regenerate qualification records; coverage")
    rs = p.add_subparsers(dest="records_command", required=True)

    s = rs.add_parser("list", help="record and certificate files in the records directory")
    _records_flag(s)
    s.add_argument("--method", default=None, help="only this method (identity name)")
    _json_flag(s)
    s.set_defaults(func=cmd_list)

    s = rs.add_parser("verify", help="verify every record and certificate (hashes, dataset counts, dates, "
                                     "signatures with --trusted-keys, method identity)")
    _records_flag(s)
    s.add_argument("--method", default=None, help="only this method's files (default: every file)")
    s.add_argument("--trusted-keys", nargs="+", metavar="PUB", help="public keys (.pub) or directories of them; "
                                                                    "then every file must be signed by one")
    s.add_argument("--allow-stale", action="store_true", help="do not require the current method source")
    _json_flag(s)
    s.set_defaults(func=cmd_verify)

    s = rs.add_parser("sign", help="verify, then sign every record and certificate with an Ed25519 key")
    _records_flag(s)
    s.add_argument("--key", required=True, metavar="PEM", help="private key (simlab.signing.save_keypair)")
    s.add_argument("--method", default=None, help="only this method's files (default: every file)")
    _json_flag(s)
    s.set_defaults(func=cmd_sign)

    s = rs.add_parser("theorem", help="write the theorem record of every method that declares a theorem (or of "
                                      "--method): it covers every design the theorem's assumptions hold for")
    _records_flag(s)
    s.add_argument("--method", default=None, help="only this method")
    s.add_argument("--out", type=nonempty_path, default=None, metavar="DIR",
                   help="write here (default: the records directory)")
    s.add_argument("--force", action="store_true", help="replace files of the records' names that are not theorem "
                                                        "records simlab wrote")
    _json_flag(s)
    s.set_defaults(func=cmd_theorem)

    s = rs.add_parser("coverage", help="is METHOD covered at this design (grid records, theorems, certificates)?")
    _records_flag(s)
    s.add_argument("--method", required=True, help="method identity name, e.g. tango_score")
    s.add_argument("--clusters", type=positive_int, required=True, help="clusters K of the design")
    s.add_argument("--trials", type=positive_int, default=1, help="trials per cluster (default %(default)s)")
    s.add_argument("--margin", type=finite_float, required=True, help="non-inferiority margin")
    s.add_argument("--rho", type=finite_float, default=None, help="intra-cluster correlation of the design")
    s.add_argument("--rho-max", type=finite_float, default=None,
                   help="largest intra-cluster correlation the coverage must reach (default: --rho)")
    s.add_argument("--looks", type=positive_int, default=None, help="sequential methods: number of looks")
    s.add_argument("--certificate", nargs="+", metavar="FILE", help="certificate files to consult as well")
    s.add_argument("--trusted-keys", nargs="+", metavar="PUB",
                   help="public keys (.pub) or directories of them; then only signed files count")
    _json_flag(s)
    s.set_defaults(func=cmd_coverage)

    s = rs.add_parser("regenerate", help="re-run every record's method under its own policy (after a method or "
                                         "schema change)")
    _records_flag(s)
    s.add_argument("--out", type=nonempty_path, default=None, metavar="DIR", help="write here instead of in place")
    s.add_argument("--only", default=None, help="comma-separated method names")
    s.add_argument("--policy", default=None, help="only records of this policy (built-in name or sha256 prefix)")
    s.add_argument("--n-jobs", type=n_jobs, default=1, help="worker processes, -1 = all cores (default %(default)s)")
    s.add_argument("--dry-run", action="store_true", help="print the plan (policies and methods) only")
    s.add_argument("--checkpoint", type=nonempty_path, default=None, metavar="DIR",
                   help="keep finished tasks here; the same command resumes a stopped regeneration")
    add_max_seconds(s)
    _json_flag(s)
    s.set_defaults(func=cmd_regenerate)

    s = rs.add_parser("restamp", help="carry records and certificates across a refactor: re-simulate a random "
                                      "sample of each stale record's scenarios (certify each stale certificate "
                                      "again) and re-stamp it with the current method identity only if every "
                                      "count is the same (exit 2 when one differs)")
    _records_flag(s)
    s.add_argument("--only", default=None, help="comma-separated method names")
    s.add_argument("--sample", type=positive_int, default=24, help="scenarios re-simulated per record (default "
                                                                   "%(default)s)")
    s.add_argument("--dry-run", action="store_true", help="check, but write nothing")
    add_max_seconds(s)
    _json_flag(s)
    s.set_defaults(func=cmd_restamp)
