"""The tables of ``results/qualification/README.md``, rendered from the files themselves.

Each table sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in the README;
``tests/methods/test_qualification_records.py`` checks that every block equals what this
module renders from the shipped files (grid records, certificates, theorem records) and
the built-in policies.  After regenerating or adding a file, rewrite the blocks with

    uv run python -m tests.methods.records_readme --write
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from methods import registry
from methods.qualification import (certificate_paths, load_certificate, load_record, load_theorem_record,
                                   named_policy, policy_names, record_paths, theorem_paths)

RESULTS_DIR = Path(__file__).resolve().parents[2] / "results" / "qualification"  # the shipped files
README = RESULTS_DIR / "README.md"
# the order the policies are listed in (every built-in policy, checked against policy_names())
POLICY_ORDER = ("standard", "standard-coarse", "reduced", "reduced-small", "sequential-standard",
                "sequential-standard-lr", "sequential")


def _g(values) -> str:
    return ", ".join(f"{v:g}" for v in values)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def policies_table() -> str:
    assert sorted(POLICY_ORDER) == policy_names(), "a built-in policy is missing from POLICY_ORDER"
    rows = []
    for name in POLICY_ORDER:
        p = named_policy(name)
        d = p.domain
        rows.append([f"`{name}`", f"`{p.sha256.removeprefix('sha256:')[:10]}`", _g(d.clusters.grid),
                     _g(s.trials for s in d.cluster_sizes), _g(d.rho.grid), _g(d.margin.grid), _g(d.baseline.grid),
                     _g(d.discordance.grid), "-" if d.looks is None else str(d.looks),
                     " -> ".join(f"{n:,}" for n in p.replication_schedule()), str(p.refine_evaluations)])
    return _table(["policy", "file tag", "K", "trials per cluster", "rho", "margin", "baseline", "discordance",
                   "looks", "replications per scenario", "refinement steps"], rows)


def _policy_name(sha256: str) -> str:
    names = {named_policy(n).sha256: n for n in POLICY_ORDER}
    return names.get(sha256, sha256[:17])


def grid_records_table(records=None) -> str:
    """``records``: the loaded grid records (default: load every file, verifying it)."""
    records = [load_record(p) for p in record_paths(directory=RESULTS_DIR)] if records is None else records
    order = {n: i for i, n in enumerate(POLICY_ORDER)}
    rows = []
    for rec in sorted(records, key=lambda r: (order.get(_policy_name(r.policy_sha256), 99), r.method.name)):
        verdicts = [c.verdict for c in rec.cells]
        w = rec.worst_case
        trials = rec.policy.domain.cluster_sizes[w.size].trials
        rows.append([f"`{rec.method.name}`", f"`{_policy_name(rec.policy_sha256)}`",
                     f"{verdicts.count('qualified')}/{len(verdicts)}", str(verdicts.count("exceeds")),
                     str(verdicts.count("undetermined")), str(len(rec.scenarios)),
                     f"{w.rate:.3f} ({w.upper:.3f})",
                     f"K={w.clusters}, M={trials}, rho={w.rho:g}, margin={w.margin:g}, baseline={w.baseline:g}, "
                     f"discordance={w.discordance:g}"])
    return _table(["method", "policy", "cells qualified", "exceed", "undetermined", "scenarios",
                   "worst false-pass rate (upper bound)", "where"], rows)


def certificates_table(certificates=None) -> str:
    certificates = ([load_certificate(p) for p in certificate_paths(directory=RESULTS_DIR)]
                    if certificates is None else certificates)
    rows = []
    for c in sorted(certificates, key=lambda c: (c.method.registered_name.split("@")[0], c.design.clusters,
                                                 c.design.trials, c.method.registered_name)):
        d, w = c.design, c.points[c.worst]
        bound = (f"proven <= {c.proven_upper:.5f}" if c.proven_upper is not None
                 else "exact at each point" if c.engine.startswith("exact") else f"upper bound {w.upper:.5f}")
        rows.append([f"`{c.method.registered_name}`", f"{d.clusters} x {d.trials}", f"{d.margin:g}", f"{d.rho_max:g}",
                     f"{d.baseline[0]:g}..{d.baseline[1]:g} / {d.discordance[0]:g}..{d.discordance[1]:g}", c.engine, c.guarantee, f"{w.rate:.5f}", bound,
                     f"baseline {w.baseline:.3g}, discordance {w.discordance:.3g}, rho {w.rho:.3g}", c.verdict])
    return _table(["method", "K x M", "margin", "rho_max", "baseline / discordance ranges", "engine", "guarantee",
                   "worst false-pass rate", "bound", "where", "verdict"], rows)


def theorems_table(theorems=None) -> str:
    theorems = [load_theorem_record(p) for p in theorem_paths(directory=RESULTS_DIR)] if theorems is None else theorems
    rows = [[f"`{t.method.registered_name}`", t.method.kind, t.method.estimand, t.citation]
            for t in sorted(theorems, key=lambda t: t.method.registered_name)]
    return _table(["method", "kind", "estimand", "source"], rows)


def uncovered_line(names_with_files: set[str]) -> str:
    """Registered methods that no file here covers (base names: ``dm_score@alpha=L`` and
    ``bonferroni[binomial_loss]`` count for ``dm_score`` and ``bonferroni``)."""
    builtin = set(registry.names("fixed")) | set(registry.names("sequential"))
    missing = sorted(builtin - names_with_files)
    return ", ".join(f"`{n}`" for n in missing) if missing else "none: every registered method has a file here"


def base_name(registered: str) -> str:
    return registered.split("@")[0].split("[")[0]


def render(records=None, certificates=None, theorems=None) -> dict[str, str]:
    records = [load_record(p) for p in record_paths(directory=RESULTS_DIR)] if records is None else records
    certificates = ([load_certificate(p) for p in certificate_paths(directory=RESULTS_DIR)]
                    if certificates is None else certificates)
    theorems = [load_theorem_record(p) for p in theorem_paths(directory=RESULTS_DIR)] if theorems is None else theorems
    named = {base_name(x.method.registered_name) for x in (*records, *certificates, *theorems)}
    return {"policies": policies_table(), "grid-records": grid_records_table(records),
            "certificates": certificates_table(certificates), "theorem-records": theorems_table(theorems),
            "uncovered": uncovered_line(named)}


def _block(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- {name}:start -->\n)(.*?)(<!-- {name}:end -->)", re.S)


def blocks(text: str) -> dict[str, str | None]:
    """The README's current block contents by name (None where the markers are missing)."""
    out = {}
    for name in ("policies", "grid-records", "certificates", "theorem-records", "uncovered"):
        m = _block(name).search(text)
        out[name] = m.group(2).removesuffix("\n") if m else None
    return out


def rewrite(text: str, tables: dict[str, str]) -> str:
    for name, body in tables.items():
        text, n = _block(name).subn(lambda m, body=body: m.group(1) + body + "\n" + m.group(3), text)
        if n != 1:
            raise ValueError(f"{README}: expected one <!-- {name}:start --> ... <!-- {name}:end --> block, found {n}")
    return text


if __name__ == "__main__":
    tables = render()
    if "--write" in sys.argv[1:]:
        README.write_text(rewrite(README.read_text(), tables))
        print(f"rewrote {len(tables)} blocks of {README}")
    else:
        for name, body in tables.items():
            print(f"<!-- {name}:start -->\n{body}\n<!-- {name}:end -->\n")
