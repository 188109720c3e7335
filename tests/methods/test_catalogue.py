"""The method catalogue (methods/catalogue.json) says exactly what the imported methods say,
and the registry answers from it without importing a kernel (issue 29.2)."""
from __future__ import annotations

import importlib
import json

import pytest

from methods import catalogue, registry
from methods.catalogue import MethodInfo


@pytest.fixture
def fresh_catalogue():
    catalogue.builtin.cache_clear()
    yield
    catalogue.builtin.cache_clear()


def test_the_file_equals_what_the_imported_methods_report():
    stored = catalogue._read(catalogue.PATH)
    built = catalogue.build()
    assert sorted(stored) == sorted(built), "modules differ: run `python -m methods.catalogue`"
    for module, entry in built.items():
        assert stored[module] == entry, f"{module} drifted from its catalogue entry: run `python -m methods.catalogue`"


def test_every_registered_method_is_described_as_get_loads_it():
    infos = registry.infos()
    assert sorted(infos) == registry.names(inputs=None)
    for name, info in infos.items():
        method = registry.get(name)
        assert catalogue.describe(method, info.module) == info
        assert importlib.import_module(info.module).METHOD is method


def test_guarantee_and_calibration_come_from_the_method():
    infos = registry.infos()
    assert {n for n, i in infos.items() if i.guarantee == "theorem"} == \
        {n for n in infos if registry.get(n).theorem is not None} >= {"betting_ci", "betting_cs"}
    assert infos["dm_score"].calibration == "exact-em" and infos["cluster_t"].calibration is None
    assert infos["repeated_fixed"].inner == "binomial_loss"
    assert infos["alpha_spending"].choices["spending"]["pocock"] == 1.0


def test_a_module_missing_from_the_file_is_imported_and_a_vanished_one_dropped(tmp_path, monkeypatch,
                                                                               fresh_catalogue):
    data = json.loads(catalogue.PATH.read_text())
    del data["modules"]["methods.fixed.cluster_t"]             # a method added after the file was written
    data["modules"]["methods.fixed.gone"] = {**data["modules"]["methods.fixed.paired_wald"],
                                             "name": "gone", "module": "methods.fixed.gone"}
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(data))
    monkeypatch.setattr(catalogue, "PATH", path)
    found = catalogue.builtin()
    assert "cluster_t" in found and found["cluster_t"].version == registry.get("cluster_t").version
    assert "gone" not in found


def test_a_missing_file_falls_back_to_importing(tmp_path, monkeypatch, fresh_catalogue):
    monkeypatch.setattr(catalogue, "PATH", tmp_path / "absent.json")
    assert set(catalogue.builtin()) == set(registry.names(inputs=None))


def test_info_answers_like_get_without_loading_a_kernel():
    assert registry.info("cluster_t@alpha=0.02") == registry.infos()["cluster_t"]
    with pytest.raises(KeyError, match="unknown method 'nope'; registered methods: .*cluster_t"):
        registry.info("nope")
    with pytest.raises(KeyError, match="must lie in"):
        registry.info("cluster_t@alpha=0.9")
    with pytest.raises(KeyError, match="must be a number"):
        registry.info("cluster_t@alpha=x")
    assert isinstance(registry.info("cluster_t"), MethodInfo)


def test_declared_option_ranges_hold_on_the_method_and_in_the_catalogue():
    """A method's ``ranges`` refuse a value outside them in ``with_options`` and, read from the
    catalogue, in the front end's ``option_values``; the ends of a range are admitted."""
    import math

    from methods import get, info, option_values

    checked = 0
    for name in ("alpha_spending", "msprt", "betting_cs"):
        method, entry = get(name), info(name)
        assert entry.ranges == method.ranges and method.ranges
        for key, allowed in method.ranges.items():
            for bad in (allowed.low - 1.0, allowed.high + 1.0, (0.5 if allowed.integer else None)):
                if bad is None or not math.isfinite(bad):
                    continue
                with pytest.raises(ValueError, match=f"option {key} of {name!r} must be"):
                    method.with_options(**{key: bad})
                with pytest.raises(ValueError, match=f"option {key} of {name!r} must be"):
                    option_values(name, entry.options, entry.choices, {key: bad}, entry.ranges)
                checked += 1
            for end in (allowed.low, allowed.high):
                if math.isfinite(end):
                    assert method.with_options(**{key: end}).options[key] == end
    assert checked >= 5
