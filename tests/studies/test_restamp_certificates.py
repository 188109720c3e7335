"""Certificates carried across a refactor (``simlab records restamp``): a certificate whose
method identity is stale is certified again on its own arguments and re-stamped only when
everything it states is bitwise the same; anything else is a mismatch and leaves it alone."""
from __future__ import annotations

import json

import pytest

from methods.qualification import load_certificate
from studies.qualify.certify import certify, write_certificate
from studies.qualify.restamp import restamp, restamp_certificate

OLD = "sha256:" + "0" * 64   # the identity the "old code" had


@pytest.fixture(scope="module")
def certificate():
    cert = certify("exact_discordant", 40, 1, 0.1, 0.0)
    assert cert.verdict == "qualified"
    return cert


def _as_of_old_code(cert, **changes):
    """The certificate as the old code would have written it: another method identity (and
    optionally other contents), sealed so that its hash is valid."""
    method = cert.method.model_copy(update={"source_sha256": OLD})
    return cert.model_copy(update={"method": method, "created": "2026-01-01T00:00:00Z",
                                   "valid_until": "2027-01-01T00:00:00Z", **changes}).sealed()


def test_a_current_certificate_is_left_alone(certificate, tmp_path):
    path = write_certificate(certificate, tmp_path)
    assert restamp_certificate(path).status == "current"
    assert path.read_text() == certificate.to_json()


def test_a_stale_certificate_with_the_same_statement_is_restamped(certificate, tmp_path):
    path = write_certificate(_as_of_old_code(certificate), tmp_path)
    with pytest.raises(Exception, match="stale"):
        load_certificate(path)
    dry = restamp_certificate(path, dry_run=True)
    assert dry.status == "restampable" and path.exists()
    done = restamp_certificate(path)
    assert done.status == "restamped" and done.checked == len(certificate.points)
    assert not path.exists()                       # named by its old hash: replaced
    new = load_certificate(tmp_path / done.record)  # current identity: loads with every check
    assert new.method.source_sha256 == certificate.method.source_sha256
    assert new.points == certificate.points and new.verdict == certificate.verdict
    assert (new.created, new.valid_until) == ("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z")  # never extended
    migration = json.loads(new.software["identity_migration"])
    assert migration["from"] == OLD and migration["to"] == certificate.method.source_sha256


def test_a_stale_certificate_that_states_anything_else_is_a_mismatch(certificate, tmp_path):
    # a consistent certificate (its points, verdict and proven bound follow from each other; the
    # loader checks that) that states another search than the current code makes
    forged = _as_of_old_code(certificate, search=certificate.search + " Nodes searched by another rule.")
    path = write_certificate(forged, tmp_path)
    before = path.read_text()
    got = restamp_certificate(path)
    assert got.status == "mismatch" and "search" in got.detail
    assert path.read_text() == before
    assert [r.status for r in restamp(tmp_path)] == ["mismatch"]   # the directory walk reaches certificates
