"""Plan before data, checked: chronology, per-arm identities, and the two ordinary pairing
mistakes (one log as both arms, swapped arms).

*Chronology.*  The manifest's ``created_at`` must be no later than every measurement it
governs: each log's ``eval.created`` (and run start), each sample's or trial's timestamp
where the input records one.  A later manifest was written after the data were seen: the
run is refused unless it is declared ``registered_after_measurement`` -- then it is analysed,
the receipt says so, and authority is capped at ``lab_only``.  A consistent timestamp does
not authenticate a clock; missing times are not invented (the packet records which times
were checked).  The decision comes after its evidence: a log time or trial timestamp later than
the receipt's ``issued_at`` (``--now``, or the clock) is refused, naming the latest one.

*Identities.*  When the manifest registers ``arms``, each log's ``eval.model``, ``eval.task``
and registered ``eval.task_args`` must equal its arm's; ``dataset`` must equal each log's
``eval.dataset`` (name, location, sample count).  Logs that record identities the manifest
does not register cap the receipt at ``lab_only`` (nothing was compared).  Whatever the
manifest says, both logs must come from one task and one dataset.

*Mistakes.*  The same file (by path or bytes), the same Inspect run (``eval_id`` or sample
uuids in both logs) or byte-identical trials given as both arms are errors naming both
files; so are swapped arms, when the logs say which arm they are (``simlab_arm`` metadata,
or a log matching the other arm's registered identity and not its own)."""
from __future__ import annotations

import datetime as dt

import numpy as np

from .errors import EvidenceError
from .manifest import Manifest

CAP = ("evidence_ready", "lab_pass")


def _time(text, what: str = "time") -> dt.datetime | None:
    """A log's time (no zone: UTC); ``what`` names it (file and field) when it is unreadable or
    outside the years Python's datetime holds in UTC."""
    if not text:
        return None
    try:
        t = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
        t = t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)
        t.astimezone(dt.timezone.utc)  # year 0 in UTC (0001-01-01T00:00+01:00) overflows here
    except (ValueError, OverflowError) as exc:
        raise EvidenceError(f"{what}: {text!r} is not a usable ISO 8601 time ({exc})") from None
    return t


def _iso(t: dt.datetime | None) -> str | None:
    return None if t is None else t.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _arm_matches(log: dict, arm) -> list[str]:
    """Fields where ``log`` differs from a registered arm identity."""
    bad = []
    if log.get("model") != arm.model:
        bad.append(f"model {log.get('model')!r} (registered {arm.model!r})")
    if arm.task is not None and log.get("task") != arm.task:
        bad.append(f"task {log.get('task')!r} (registered {arm.task!r})")
    args = log.get("task_args") or {}
    for k, v in arm.task_args.items():
        if k not in args or args[k] != v:
            bad.append(f"task_args.{k} {args.get(k)!r} (registered {v!r})")
    return bad


def _records_identity(log: dict) -> bool:
    return log.get("records_identity", True)


def check_pairing_mistakes(logs: list[dict], manifest: Manifest) -> None:
    """The same log as both arms, swapped arms, arms from different tasks or datasets."""
    if len(logs) != 2:
        return
    base, cand = logs
    both = f"{base['file']} (baseline) and {cand['file']} (candidate)"
    if base.get("sha256") == cand.get("sha256"):
        raise EvidenceError(f"{both} are the same file (identical bytes): one run given as both arms")
    if base.get("eval_id") and base.get("eval_id") == cand.get("eval_id"):
        raise EvidenceError(f"{both} are the same Inspect run (eval_id {base['eval_id']}): one run given as both arms")
    shared = set(base.get("sample_uuids") or ()) & set(cand.get("sample_uuids") or ())
    if shared:
        raise EvidenceError(f"{both} share {len(shared)} sample uuid(s) (e.g. {sorted(shared)[0]}): the same samples "
                            "given as both arms")
    labels = (base.get("arm_label"), cand.get("arm_label"))
    if labels == ("candidate", "baseline"):
        raise EvidenceError(f"swapped arms: {base['file']} says it is the candidate and {cand['file']} the baseline "
                            "(simlab_arm metadata); give the baseline first")
    if not all(_records_identity(g) for g in logs):  # trial files: their bytes were compared
        return
    for log, arm in ((base, "baseline"), (cand, "candidate")):
        if log.get("arm_label") not in (None, arm):
            raise EvidenceError(f"{log['file']} says it is arm {log['arm_label']!r} (simlab_arm metadata) but was given "
                                f"as the {arm} ({both})")
    if manifest.arms is not None:
        own = [_arm_matches(base, manifest.arms["baseline"]), _arm_matches(cand, manifest.arms["candidate"])]
        crossed = [_arm_matches(base, manifest.arms["candidate"]), _arm_matches(cand, manifest.arms["baseline"])]
        if (own[0] or own[1]) and not crossed[0] and not crossed[1]:
            raise EvidenceError(f"swapped arms: {base['file']} records the registered candidate and {cand['file']} the "
                                f"registered baseline ({'; '.join(own[0] + own[1])}); give the baseline first")
        for log, arm, bad in ((base, "baseline", own[0]), (cand, "candidate", own[1])):
            if bad:
                raise EvidenceError(f"{log['file']} ({arm}) does not record the manifest's {arm} arm: {'; '.join(bad)}")
    registered_tasks = manifest.arms and {manifest.arms[a].task for a in ("baseline", "candidate")}
    if base.get("task") != cand.get("task") and not (registered_tasks and len(registered_tasks) == 2):
        raise EvidenceError(f"{both} come from different tasks ({base.get('task')!r}, {cand.get('task')!r})")
    for part in ("name", "location"):
        b, c = (base.get("dataset") or {}).get(part), (cand.get("dataset") or {}).get(part)
        if b != c:
            raise EvidenceError(f"{both} ran different datasets ({part} {b!r} vs {c!r})")
    if manifest.dataset is not None:
        for log in logs:
            d = log.get("dataset") or {}
            for part in ("name", "location", "samples"):
                want = getattr(manifest.dataset, part)
                if want is not None and d.get(part) != want:
                    raise EvidenceError(f"{log['file']}: dataset {part} {d.get(part)!r}, the manifest registers "
                                        f"{want!r}")


def identical_arms(cols) -> bool:
    """Whether every candidate trial repeats its baseline trial field for field -- outcome,
    checks, latency, cost and time -- where a latency or time that varies between trials is
    recorded (ties of deterministic agents without them are legitimate)."""
    base, cand = np.flatnonzero(~cols.candidate), np.flatnonzero(cols.candidate)
    if len(base) != len(cand) or not len(base):
        return False
    kb = (cols.case[base].astype(np.int64) << 32) | cols.trial[base]
    kc = (cols.case[cand].astype(np.int64) << 32) | cols.trial[cand]
    base, cand = base[np.argsort(kb, kind="stable")], cand[np.argsort(kc, kind="stable")]
    stamps = cols.timestamps if cols.timestamps is not None else np.full(len(cols), np.nan)
    informative = [a[base] for a in (cols.latency, stamps) if len(np.unique(a[base][~np.isnan(a[base])])) > 1]
    if not informative:  # nothing that varies from trial to trial was recorded
        return False
    same = lambda a: np.array_equal(a[base], a[cand], equal_nan=True)  # noqa: E731
    return all(same(a) for a in (cols.passed, cols.n_failed, cols.latency, cols.cost, stamps))


def _log_times(logs: list[dict]) -> list[tuple[dt.datetime, str]]:
    times = []
    for log in logs:
        for key in ("created", "started_at"):
            what = f"{log['file']} eval.{key}" if key == "created" else f"{log['file']} run start"
            t = _time(log.get(key), what)
            if t is not None:
                times.append((t, what))
    return times


def _late(manifest: Manifest, before: list, logs_before: int, trials_before: int) -> EvidenceError:
    t, what = min(before)
    return EvidenceError(f"the manifest (created_at {_iso(manifest.created_at)}) is later than the measurement it "
                         f"governs: {what} is {_iso(t)} ({logs_before} log time(s), {trials_before} trial timestamp(s) "
                         "before the manifest); a plan written after the data were seen is not a pre-registration",
                         option="registered_after_measurement")


def check_logs(manifest: Manifest, logs: list[dict], registered_after: bool) -> None:
    """What the logs' headers alone settle, before any sample is judged: an undeclared late
    manifest (first: the root cause for existing logs), then the pairing mistakes."""
    before = [(t, w) for t, w in _log_times(logs) if t < manifest.created_at]
    if before and not registered_after:
        raise _late(manifest, before, len(before), 0)
    check_pairing_mistakes(logs, manifest)


def _at(stamps: np.ndarray, row: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(float(stamps[row]), dt.timezone.utc)


def _future(times: list[tuple[dt.datetime, str]], stamps: np.ndarray, given: np.ndarray, cols,
            decided: dt.datetime) -> EvidenceError | None:
    """Evidence dated after the decision that rests on it: the latest log time or trial
    timestamp later than ``decided``, named with its count (None when there is none)."""
    late = [(t, what) for t, what in times if t > decided]
    late_logs = len(late)
    rows = np.flatnonzero(given & (stamps > decided.timestamp()))
    if len(rows):
        last = int(rows[np.argmax(stamps[rows])])
        late.append((_at(stamps, last), f"{cols.source}: the trial at {cols.where(last)}"))
    if not late:
        return None
    t, what = max(late)
    return EvidenceError(f"{what} is dated {_iso(t)}, after the decision time {_iso(decided)} "
                         f"({late_logs} log time(s), {len(rows)} trial timestamp(s) after it): a decision cannot rest "
                         "on evidence from its future (a wrong --now, a skewed clock or edited times)",
                         option="timestamp")


def measurement(manifest: Manifest, cols, logs: list[dict], registered_after: bool,
                source: str, decided: dt.datetime) -> tuple[dict, list[tuple[str, str, str]]]:
    """The packet's measurement record (log identities and times) and the findings it adds.
    Raises EvidenceError, in this order: a log time or trial timestamp later than the decision
    time ``decided`` (the receipt's ``issued_at``); an undeclared late manifest (for logs
    ``check_logs`` already refused it, as the root cause, before any sample was read); a pairing
    mistake."""
    created = manifest.created_at
    times = _log_times(logs)
    stamps = cols.timestamps if cols.timestamps is not None else np.empty(0)
    given = ~np.isnan(stamps)
    future = _future(times, stamps, given, cols, decided)
    if future is not None:
        raise future
    early = np.flatnonzero(given & (stamps < created.timestamp()))
    if given.any():
        rows = np.flatnonzero(given)
        first, last = int(rows[np.argmin(stamps[rows])]), int(rows[np.argmax(stamps[rows])])
        for row in sorted({first, last}):  # the earliest and the latest trial, for the record's range
            times.append((_at(stamps, row), f"trial at {cols.where(row)}"))
    before = [(t, what) for t, what in times if t < created]
    logs_before = [1 for t, what in before if not what.startswith("trial at")]
    record = {
        "registered_after_measurement": bool(registered_after),
        "manifest_created_at": _iso(created),
        "earliest_measurement": _iso(min(t for t, _ in times)) if times else None,
        "latest_measurement": _iso(max(t for t, _ in times)) if times else None,
        "times_checked": {"logs": len(logs), "trial_timestamps": int(given.sum())},
        "measured_before_manifest": {"log_times": len(logs_before), "trials": int(len(early))},
        "logs": [{k: v for k, v in log.items() if k != "sample_uuids"} for log in logs],
    }
    findings = []
    if (before or len(early)) and not registered_after:
        raise _late(manifest, before, len(logs_before), len(early))
    check_pairing_mistakes(logs, manifest)
    if not any(_records_identity(g) for g in logs) and identical_arms(cols):
        raise EvidenceError(f"{source}: every candidate trial repeats its baseline trial (outcome, latency, cost, "
                            "time): one run given as both arms")
    if registered_after:
        findings.append((*CAP, "registered after measurement: the plan was pinned after the logs were written; "
                               "authority capped at lab_only"))
    if not times:
        record["note"] = "the inputs record no measurement times: chronology could not be checked"
    if any(_records_identity(g) for g in logs) and manifest.arms is None:
        findings.append((*CAP, "the manifest registers no per-arm identities (arms): the logs' models and tasks "
                               f"({', '.join(repr(g.get('model')) for g in logs)}) were not compared with a plan"))
    return record, findings
