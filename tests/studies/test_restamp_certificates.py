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


@pytest.fixture(scope="module")
def judge_certificate():
    """A label-noise certificate (``certify_label_noise``) of a calibrated judge-corrected
    method: its stream seed is derived from the design and the method identity at the time,
    and its design and search record the domain -- all of which a re-stamp must rebuild."""
    from methods import registry
    from studies.qualify.certify_judge import certify_label_noise

    cert = certify_label_noise(registry.get("judge_corrected").calibrated(0.05), 100, 1, 0.05,
                               sensitivity=(0.9, 1.0), specificity=(0.9, 1.0), calibration_items=200,
                               calibration_shared=True, nodes="corners", alpha=0.1, allowed_excess=2.0,
                               min_replications=300, max_replications=300, baseline=(0.8, 0.8),
                               discordance=(0.3, 0.3))
    assert cert.design.label_noise_domain is not None and "(derived from the design)" in cert.search
    return cert


def test_a_stale_judge_certificate_is_certified_again_over_its_domain_and_restamped(judge_certificate, tmp_path):
    path = write_certificate(_as_of_old_code(judge_certificate), tmp_path)
    done = restamp_certificate(path)
    assert done.status == "restamped", done.detail
    new = load_certificate(tmp_path / done.record)
    assert new.design == judge_certificate.design and new.search == judge_certificate.search
    assert new.points == judge_certificate.points and new.verdict == judge_certificate.verdict
    assert new.method.name.startswith("judge_corrected@alpha=") and new.method.options["min_calibration"] == 200.0
    assert (new.created, new.valid_until) == ("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z")
    migration = json.loads(new.software["identity_migration"])
    assert migration["from"] == OLD and f" scenarios, seed {migration['seed']};" in new.search


def test_a_judge_certificate_whose_seed_sentence_names_another_stream_is_a_mismatch(judge_certificate, tmp_path):
    seed = str(judge_certificate.search.split("Stream seed ")[1].split(" ")[0])
    forged = _as_of_old_code(judge_certificate, search=judge_certificate.search.replace(
        f"Stream seed {seed}", f"Stream seed {int(seed) + 1}"))
    path = write_certificate(forged, tmp_path)
    before = path.read_text()
    got = restamp_certificate(path)
    assert got.status == "mismatch" and "search" in got.detail
    assert path.read_text() == before


def test_a_judge_certificate_in_older_wording_is_restamped_with_its_description_rendered_again(judge_certificate,
                                                                                              tmp_path):
    # the shipped certificate's domain description predates the current wording; its points,
    # design and certify's own text are what must be equal
    current = "for one judge for both arms"
    assert current in judge_certificate.search
    older = judge_certificate.search.replace(current, "for each arm's judge independently")
    path = write_certificate(_as_of_old_code(judge_certificate, search=older), tmp_path)
    done = restamp_certificate(path)
    assert done.status == "restamped", done.detail
    new = load_certificate(tmp_path / done.record)
    assert new.search == judge_certificate.search and new.points == judge_certificate.points
    assert "rendered again from the stored domain" in json.loads(new.software["identity_migration"])["search_note"]


def test_a_judge_certificate_whose_simulation_text_differs_is_a_mismatch(judge_certificate, tmp_path):
    forged = _as_of_old_code(judge_certificate, search=judge_certificate.search.replace(
        "golden-section steps", "bisection steps"))
    got = restamp_certificate(write_certificate(forged, tmp_path))
    assert got.status == "mismatch" and "search" in got.detail


class _Refused(Exception):
    pass


def test_a_restamp_is_priced_before_any_file_is_touched(certificate, tmp_path):
    """``simlab records restamp --max-seconds``: the work of the stale files is estimated and
    told before any is done; a refusal there leaves every file as it was; current files cost
    nothing."""
    current = write_certificate(certificate, tmp_path / "current")
    told = []
    restamp(current.parent, before=lambda s, n: told.append((s, n)))
    assert told == [(0.0, 0)]

    path = write_certificate(_as_of_old_code(certificate), tmp_path / "stale")
    before = path.read_text()

    def refuse(seconds: float, files: int) -> None:
        told.append((seconds, files))
        raise _Refused

    with pytest.raises(_Refused):
        restamp(path.parent, before=refuse)
    assert told[-1][0] > 0.0 and told[-1][1] == 1
    assert path.read_text() == before and [p.name for p in path.parent.iterdir()] == [path.name]
