"""``evidence``'s curated public API: every name it lists is the function or class it
promises (never a same-named submodule, whatever was imported first), and importing the
package imports no submodule and no inspect_ai."""
from __future__ import annotations

import json
import subprocess
import sys
import types

import evidence

PROBE = """
import json, sys
import evidence
before = sorted(m for m in sys.modules if m.startswith("evidence."))
import evidence.replay, evidence.resolve, evidence.bench_inspect, evidence.ledger  # siblings first
from evidence import bench_evidence_inspect, replay_packet, resolve_packet, resolve_receipt
print(json.dumps({"before": before, "inspect_ai": "inspect_ai" in sys.modules,
                  "callables": [callable(f) and not isinstance(f, type(sys)) for f in
                                (bench_evidence_inspect, replay_packet, resolve_packet, resolve_receipt)]}))
"""


def test_every_public_name_is_what_it_names():
    for name in evidence.__all__:
        value = getattr(evidence, name)
        if name == "ledger":
            assert isinstance(value, types.ModuleType) and callable(value.append) and callable(value.verify)
        else:
            assert not isinstance(value, types.ModuleType), f"evidence.{name} is a module"
            assert name in ("MANIFEST_KEY", "PACKET_KIND") or callable(value), name  # the two string constants
            if name in ("MANIFEST_KEY", "PACKET_KIND"):
                assert isinstance(value, str), name


def test_the_package_is_lazy_and_names_survive_sibling_imports():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=300)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["before"] == [] and report["inspect_ai"] is False
    assert all(report["callables"])
