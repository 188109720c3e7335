"""Built-in policies are data files (methods/qualification/policies/*.toml) whose content
hashes are the ones shipped records embed: moving them out of code changed no hash."""
from __future__ import annotations

import pytest

from methods.qualification import QualificationPolicy, named_policy, policy_names
from methods.qualification.policy import POLICY_DIR

# policy_sha256 of every built-in policy as the shipped records embed it (the if-chain's values)
SHIPPED = {
    "standard": "b2433391f9e44134047a971e81bde28fadda957b31d916490dd6bfbc3cbae6b0",
    "reduced": "c39df6d5bb34aa4f077cad7ce4aa2badb87bef37384ae4b6c4dbd25b2f298da3",
    "reduced-small": "d3eb2565a407ca86762c4a0972cc965bf1c98710eaae34bee5324ea86fbcde5a",
    "sequential": "12f1d41521cab06286cee7d06f77a562cf56796442dc859823ace6834e96e975",
    "sequential-standard": "e4e6cbab97c210632c2047c57d481de44feefddec96d34b881ef34dd50b455d0",
    "sequential-standard-lr": "1182f38fab1ecdd005140b4fded8d634ab6f569e17e71f252ca44a3e9ed99046",
    "standard-coarse": "bbb2e42340b6f41b7f6d347d09113d2119a90bcbd882e2ef1c713007d5da7a83",
}


def test_every_builtin_policy_keeps_its_hash():
    assert sorted(policy_names()) == sorted(SHIPPED)
    for name, sha in SHIPPED.items():
        assert named_policy(name).sha256 == "sha256:" + sha, name  # the hex digests of schema 2, in the one form
        assert sha in (POLICY_DIR / f"{name}.toml").read_text()  # the file says which hash it is


def test_builtin_policies_are_what_the_records_say():
    std = named_policy("standard")
    assert std.domain.clusters.grid == (10, 20, 30, 50, 100, 200, 500)
    assert std.replication_schedule() == [2000, 8000, 32000, 128000]
    assert named_policy("reduced-small").replication_schedule() == [1000, 4000, 8000]
    assert named_policy("sequential-standard").domain.looks == 5
    assert named_policy("sequential-standard-lr").domain.margin.grid == (0.02, 0.03, 0.05, 0.10)


def test_a_policy_file_round_trips(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text((POLICY_DIR / "reduced.toml").read_text().replace("seed = 20261129", "seed = 7"))
    mine = QualificationPolicy.load(p)
    assert mine.seed == 7 and mine.domain == named_policy("reduced").domain
    assert mine.sha256 != SHIPPED["reduced"]


def test_unknown_policy_names_the_choices():
    with pytest.raises(ValueError, match="unknown policy 'nope'.*reduced-small.*standard"):
        named_policy("nope")
    with pytest.raises(ValueError, match="unknown policy"):
        named_policy("../policies/standard")
