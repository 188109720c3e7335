"""The persistent store of constructions (``simlab.stored_constructions``): exact round trip,
keys that separate what differs, and damaged or foreign entries ignored with a warning."""
import json
import math

import numpy as np
import pytest

from simlab import stored_constructions as sc


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(sc.ENV_VAR, str(tmp_path / "user"))
    return tmp_path / "user" / "constructions"


def _arrays():
    rng = np.random.default_rng(3)
    return {"points": rng.normal(size=(7, 3)), "log_lambda": np.array([-700.0, 1e-320, 5e-324, 0.1 + 0.2]),
            "cutoff": [math.inf]}


def test_round_trip_is_exact_including_infinities_and_subnormals(store):
    key = sc.entry_key("x", "sha256:" + "0" * 64, {"K": 3})
    path = sc.save("t", key, {"K": 3}, _arrays())
    assert path is not None and path.parent == store
    got = sc.load("t", key)
    for name, a in _arrays().items():
        assert got[name].shape == np.shape(a)
        assert np.array_equal(got[name], np.asarray(a, float))          # bit for bit, inf included
    assert sc.stored_arguments("t") == [{"K": 3}]


def test_keys_separate_identity_arguments_and_kind():
    i1, i2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64
    keys = {sc.entry_key("x", i1, {"K": 3}), sc.entry_key("x", i2, {"K": 3}), sc.entry_key("x", i1, {"K": 4}),
            sc.entry_key("y", i1, {"K": 3}), sc.entry_key("x", i1, {"K": 3.0000000000000004})}
    assert len(keys) == 5


def test_missing_entry_is_none_and_shipped_directories_are_read(store, tmp_path):
    key = sc.entry_key("x", "sha256:" + "3" * 64, {})
    assert sc.load("t", key) is None
    shipped = tmp_path / "shipped"
    sc.save("t", key, {}, {"a": [1.5]}, directory=shipped)
    assert not store.exists() or not list(store.iterdir())
    assert sc.load("t", key, (shipped,))["a"].tolist() == [1.5]


@pytest.mark.parametrize("damage", ["truncate", "flip", "other_key"])
def test_a_damaged_or_foreign_entry_is_ignored_with_a_warning(store, damage):
    key = sc.entry_key("x", "sha256:" + "4" * 64, {})
    path = sc.save("t", key, {}, {"a": [2.0, 3.0]})
    text = path.read_text()
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    elif damage == "flip":
        entry = json.loads(text)
        entry["arrays"]["a"]["values"][0] = (2.5).hex()        # content changed, self-hash kept
        path.write_text(json.dumps(entry))
    else:
        other = sc.entry_key("x", "sha256:" + "5" * 64, {})
        path.write_text(text.replace(key, other))
    with pytest.warns(RuntimeWarning, match=path.name):
        assert sc.load("t", key) is None


def test_off_writes_nothing_and_an_unwritable_store_only_warns(tmp_path, monkeypatch):
    monkeypatch.setenv(sc.ENV_VAR, "off")
    assert sc.user_store() is None
    assert sc.save("t", sc.entry_key("x", "i", {}), {}, {"a": [1.0]}) is None
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.warns(RuntimeWarning, match="could not store"):
        assert sc.save("t", sc.entry_key("x", "i", {}), {}, {"a": [1.0]}, directory=blocker / "sub") is None
