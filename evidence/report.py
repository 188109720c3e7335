"""What a packet says, for people and CI systems: a verdict, a Markdown summary for a
pull-request comment, and JUnit XML.

The verdict is the receipt's action read as a gate: ``pass`` for ``lab_pass`` or
``canary_eligible`` (the authority says how far it reaches), ``fail`` for ``block``,
``inconclusive`` for ``hold``.  Nothing here decides anything: every figure comes from the
receipt, which was recomputed from the raw trials."""
from __future__ import annotations

import xml.etree.ElementTree as ET

VERDICT = {"lab_pass": "pass", "canary_eligible": "pass", "block": "fail", "hold": "inconclusive"}
ESTIMAND_WORDS = {"trial_weighted": "candidate minus baseline pass rate, trial-weighted",
                  "cluster_weighted": "candidate minus baseline pass rate, mean over clusters",
                  "loss_rate": "minus the candidate's loss rate (pairs the baseline passes and the candidate fails)"}


def _g(x, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _interval(d: dict | None) -> str:
    if not d:
        return "-"
    if d.get("lower") is None:
        return f"{_g(d.get('estimate'), 3)} (no interval)"
    return f"{_g(d['estimate'], 3)} [{_g(d['lower'], 3)}, {_g(d['upper'], 3)}]"


def summary(packet: dict, packet_path: str | None = None) -> dict:
    """The figures a summary shows, from the packet's receipt."""
    r = packet["receipt"]
    c = r["comparison"]
    rel = c.get("reliability") or {}
    k = str(rel.get("trials_per_case", 1))
    arms = {arm: {"pass_rate": (rel.get(arm) or {}).get("pass^k", {}).get("1"),
                  "pass_hat_k": (rel.get(arm) or {}).get("pass^k", {}).get(k),
                  "pass_at_k": (rel.get(arm) or {}).get("pass@k", {}).get(k)} for arm in ("baseline", "candidate")}
    return {"verdict": VERDICT.get(r["action"], "fail"), "action": r["action"], "state": r["state"],
            "authority": r["authority"], "experiment_id": r["experiment_id"], "method": c["method"]["name"],
            "method_version": c["method"]["version"], "unit": c.get("unit", "trial_pair"), "estimand": c["estimand"],
            "estimate": c["estimate"], "lower": c["lower"], "upper": c["upper"], "status": c["status"],
            "margin": c["margin"], "confidence": c["confidence"], "clusters": c["clusters"], "pairs": c["pairs"],
            "cases": c["cases"], "k": int(k), "arms": arms, "slices": c.get("slices"),
            "reasons": r["reasons"], "other_findings": r.get("other_findings", []),
            "registered_after_measurement": (r.get("measurement") or {}).get("registered_after_measurement", False),
            "receipt_sha256": r["receipt_sha256"], "packet": packet_path}


def headline(s: dict) -> str:
    return (f"{s['verdict'].upper()}: {s['action']} (authority {s['authority']}) -- estimate {_g(s['estimate'])}, "
            f"lower bound {_g(s['lower'])} vs -margin {-s['margin']:g} ({s['method']}, {s['clusters']} clusters, "
            f"{s['pairs']} pairs)")


def markdown(s: dict) -> str:
    """A pull-request comment."""
    icon = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️"}[s["verdict"]]
    unit = "cases (all k trials pass)" if s["unit"] == "case_all_trials" else "trial pairs"
    lines = [f"### {icon} simlab compare: **{s['verdict'].upper()}** — {s['action']} (authority {s['authority']})", "",
             f"Experiment `{s['experiment_id']}`: {s['clusters']} independent clusters, {s['cases']} cases, "
             f"{s['pairs']} paired trials.", "",
             "| | baseline | candidate |", "| --- | --- | --- |",
             f"| pass rate | {_interval(s['arms']['baseline']['pass_rate'])} | "
             f"{_interval(s['arms']['candidate']['pass_rate'])} |"]
    if s["k"] > 1:
        for key, name in (("pass_hat_k", f"pass^{s['k']} (all {s['k']} pass)"),
                          ("pass_at_k", f"pass@{s['k']} (any of {s['k']} passes)")):
            lines.append(f"| {name} | {_interval(s['arms']['baseline'][key])} | "
                         f"{_interval(s['arms']['candidate'][key])} |")
    conf = f"{100 * s['confidence']:g}%"
    words = ESTIMAND_WORDS.get(s["estimand"], s["estimand"])
    lines += ["", f"**Paired comparison** ({words}, over {unit}): {_g(s['estimate'])}, "
                  f"{conf} interval [{_g(s['lower'])}, {_g(s['upper'])}]; non-inferiority margin {s['margin']:g} "
                  f"(pass when the lower bound ≥ {-s['margin']:g}): **{s['status']}**.",
              f"Method: `{s['method']}` v{s['method_version']}. Interval columns are {conf} cluster-level intervals."]
    if s["slices"]:
        lines += ["", f"Protected slices of `{s['slices']['field']}` ({s['slices']['rule']}):", "",
                  "| slice | clusters | decision | lower bound (level) |", "| --- | --- | --- | --- |"]
        for sl in s["slices"]["slices"]:
            t = sl["tests"][-1] if sl["tests"] else None
            bound = f"{_g(t['lower'])} ({_g(t['level'], 3)})" if t else "-"
            lines.append(f"| {sl['value']} | {sl['clusters']} | {sl['decision']} | {bound} |")
    lines += ["", "Why:"] + [f"- {r}" for r in s["reasons"]]
    if s["other_findings"]:
        lines += ["", "<details><summary>Other findings</summary>", ""] + [f"- {r}" for r in s["other_findings"]] \
            + ["", "</details>"]
    lines += ["", f"Receipt `{s['receipt_sha256']}`" + (f", packet `{s['packet']}`" if s["packet"] else "") + "."]
    return "\n".join(lines) + "\n"


def junit(s: dict) -> str:
    """JUnit XML: one test case for the comparison and one per protected slice."""
    cases = [("non-inferiority of the candidate", s["verdict"], headline(s), "\n".join(s["reasons"]))]
    for sl in (s["slices"] or {}).get("slices", []):
        ok = sl["decision"] == "established"
        kind = "pass" if ok else ("fail" if sl["decision"].endswith("_fail") else "inconclusive")
        cases.append((f"protected slice {s['slices']['field']}={sl['value']}", kind, sl["decision"], sl["decision"]))
    suite = ET.Element("testsuite", name="simlab compare", tests=str(len(cases)),
                       failures=str(sum(v != "pass" for _, v, _, _ in cases)), errors="0", skipped="0")
    for name, verdict, message, detail in cases:
        case = ET.SubElement(suite, "testcase", classname=f"simlab.compare.{s['experiment_id']}", name=name)
        if verdict != "pass":
            failure = ET.SubElement(case, "failure", message=message, type=verdict)
            failure.text = detail
    out = ET.SubElement(suite, "system-out")
    out.text = headline(s)
    root = ET.Element("testsuites")
    root.append(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
