"""``simlab compare BASE CAND``: the evidence path for the common case, as a CI gate.

Two inputs, one per arm -- Inspect AI logs, lm-evaluation-harness ``--log_samples`` files or
JSONL/CSV trial records (the kind is told from the names, or ``--format``) -- paired by case
and epoch, clustered by ``--cluster-field``, compared by the manifest's registered method
under the same manifest rules and authority ceilings as ``simlab evidence run`` (it is that
command's library call).  Prints the verdict, the paired difference with the method's
interval, each arm's pass rate, pass^k and pass@k; writes the packet (``--out``), a Markdown
summary for a pull-request comment (``--markdown``) and JUnit XML (``--junit``).

Exit codes (the project's contract): 0 pass (``lab_pass`` / ``canary_eligible``), 1 fail or
inconclusive (``block`` / ``hold``: a decision that blocks the release; the verdict line,
``--json`` and the JUnit failure type say which), 2 bad input or refused evidence."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from simlab.cli._args import add_json
from simlab.cli._output import EXIT_BLOCKED, EXIT_OK, UsageError, emit


# how a summary this command wrote begins (the Markdown's first line, the JUnit suite's name):
# only such a file is replaced -- a CI job rerun in one workspace writes the same paths again
_REPORTS = {"--markdown": ("Markdown summary", "### ", " simlab compare: **"),
            "--junit": ("JUnit XML", "<?xml", '<testsuite name="simlab compare"')}


def _ours(path: Path, flag: str) -> bool:
    _, start, mark = _REPORTS[flag]
    try:
        with open(path, "rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    return head.startswith(start) and mark in head


def check_reports(args, files: dict[str, str]) -> None:
    """``--markdown`` / ``--junit`` before any work: never an input of this run (``files``,
    the manifest, component receipts, keys), the packet, the ledger or each other, never a
    directory, and an existing file only when it is a summary of the same kind this command
    wrote (simlab never overwrites a file it did not write)."""
    from simlab.cli._evidence_run import nearest_existing

    taken = {**files, args.manifest: "--manifest",
             **dict.fromkeys(args.component or (), "--component"), **dict.fromkeys(args.trusted or (), "--trusted"),
             args.out: "--out (the packet)", args.ledger: "--ledger"}
    taken = {Path(p).resolve(): flag for p, flag in taken.items() if p}
    for flag, path in (("--markdown", args.markdown), ("--junit", args.junit)):
        if path is None:
            continue
        kind = _REPORTS[flag][0]
        if not path.strip():
            raise UsageError(f"{flag}: an empty path; name the {kind} file to write", flag)
        target = Path(path)
        other = taken.get(target.resolve())
        if other is not None:
            raise UsageError(f"{flag} {path} is also given as {other}; the {kind} needs a path of its own", flag)
        taken[target.resolve()] = flag
        if os.path.lexists(target) and not target.is_file():
            there = "is a symbolic link to nothing" if not target.exists() else "is not a file"
            raise UsageError(f"{flag} {path} {there} (choose a new path)", flag)
        if target.is_file() and not _ours(target, flag):
            raise UsageError(f"{flag} {path} exists and is not a {kind} simlab compare wrote; it is never "
                             "overwritten (choose a new path)", flag)
        folder = nearest_existing(target.parent)
        if not folder.is_dir():
            raise UsageError(f"{flag} {path}: {folder} is not a directory", flag)


def _write(path: str | None, text: str, flag: str, packet: str) -> None:
    if not path:
        return
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # checked before the work: new, or an earlier summary of ours ("x" refuses one made since)
        with open(target, "w" if _ours(target, flag) else "x") as f:
            f.write(text)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write ({exc.strerror or exc}); the packet {packet} is kept",
                         flag) from None


def default_out() -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return str(Path("simlab-evidence") / f"compare-{stamp}.packet.json")


def run_compare(args) -> int:
    from simlab.cli._evidence_run import (adapter_of, check_log_options, check_paths, common_artifacts,
                                          component_receipts, load_manifest_arg, parse_time, refused, report_ledger,
                                          run_evidence, trusted_keys)

    files = check_paths(args, {args.baseline: "baseline", args.candidate: "candidate"})
    out = args.out or default_out()
    check_reports(args, {**files, out: "--out (the packet)"})
    manifest = load_manifest_arg(args.manifest)
    from evidence import EvidenceError, detect_kind, headline, junit, markdown, paired_artifacts, summary

    try:
        kinds = {args.format} if args.format else {detect_kind(args.baseline), detect_kind(args.candidate)}
    except EvidenceError as exc:
        raise refused(exc) from None
    if len(kinds) != 1:
        raise UsageError(f"{args.baseline} and {args.candidate} are different kinds of input ({', '.join(sorted(kinds))})",
                         "--format")
    kind = kinds.pop()
    check_log_options(kind, args)   # before the inputs are read: an option they ignore is refused
    tests, pres = component_receipts(args.component)
    try:
        artifacts = common_artifacts(paired_artifacts(kind, args.baseline, args.candidate), args)
    except ValueError as exc:  # --format trials: not .jsonl / .csv
        raise refused(exc, files) from None
    packet = run_evidence(files=files, manifest=manifest, artifacts=artifacts,
                          out=out, adapter=adapter_of(kind, args, manifest), tests=tests, prerequisites=pres,
                          qualification_dir=args.qualification_dir, trusted=trusted_keys(args.trusted),
                          now=parse_time(args.now, "--now"), registered_after=args.registered_after_measurement,
                          exploratory=args.exploratory,
                          ledger=args.ledger)
    s = summary(packet, out)
    payload = {**s, "receipt": packet["receipt"]}
    report_ledger(args, payload, out)  # before the summaries: a failed append keeps nothing
    _write(args.markdown, markdown(s), "--markdown", out)
    _write(args.junit, junit(s), "--junit", out)

    def render(p):
        print(headline(p))
        arms = p["arms"]
        for arm in ("baseline", "candidate"):
            a = arms[arm]
            parts = [f"pass rate {_fmt(a['pass_rate'])}"]
            if p["k"] > 1:
                parts += [f"pass^{p['k']} {_fmt(a['pass_hat_k'])}", f"pass@{p['k']} {_fmt(a['pass_at_k'])}"]
            print(f"  {arm:<9} " + ", ".join(parts))
        print(f"  interval [{_num(p['lower'])}, {_num(p['upper'])}] ({100 * p['confidence']:g}%)")
        for sl in (p["slices"] or {}).get("slices", []):
            print(f"  slice {p['slices']['field']}={sl['value']}: {sl['decision']} ({sl['clusters']} clusters)")
        for reason in p["reasons"]:
            print(f"  - {reason}")
        for other in p["other_findings"]:
            print(f"  (also) {other}")
        print(f"  packet {p['packet']}; receipt {p['receipt_sha256']}")
    emit(args, payload, render)
    return EXIT_OK if s["verdict"] == "pass" else EXIT_BLOCKED


def _num(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def _fmt(d) -> str:
    if not d:
        return "-"
    if d.get("lower") is None:
        return _num(d.get("estimate"))
    return f"{_num(d['estimate'])} [{_num(d['lower'])}, {_num(d['upper'])}]"


def register(sub, bench_sub) -> None:
    from simlab.cli._evidence_run import add_run_options

    p = sub.add_parser("compare", help="paired comparison of two logs through the evidence path, for CI "
                                       "(exit 0 pass, 1 fail or inconclusive, 2 bad input)")
    p.add_argument("baseline", help="baseline input: Inspect log (.eval/.json), lm-eval samples_*.jsonl, or trials")
    p.add_argument("candidate", help="candidate input, of the same kind")
    p.add_argument("--format", choices=("inspect", "lm-eval", "trials"), help="input kind (default: from the names)")
    add_run_options(p)
    p.add_argument("--out", help="packet path (never overwritten; default simlab-evidence/compare-<time>.packet.json)")
    p.add_argument("--markdown", help="write a Markdown summary (a pull-request comment) here (an existing file only "
                                      "when it is an earlier summary of this command)")
    p.add_argument("--junit", help="write JUnit XML here (one test case per decision and protected slice; an existing "
                                   "file only when it is an earlier JUnit file of this command)")
    add_json(p)
    p.set_defaults(func=run_compare)
