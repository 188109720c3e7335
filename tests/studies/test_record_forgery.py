"""Issue 11.6: a record is verified against its data, and records / certificates can be
signed (Ed25519) and verified against an explicit trusted key set.  Each forger below
re-seals the record's content hash, so the hash alone would accept the forgery."""
from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from methods.qualification import (Axis, IntAxis, QualificationDomain, QualificationPolicy, QualificationRecord,
                                   TamperedRecordError, UntrustedRecordError, build_record, content_hash,
                                   cell_verdicts, cp_bounds, file_hash, format_time, load_certificate, load_record,
                                   verdict_of)
from methods.qualification.dataset import build_qualification_dataset
from studies.datasets import save_dataset
from methods.qualification.record import body_of, signed_payload
from methods import registry
from simlab import signing
from simlab.scenario import FixedSize
from studies.qualify.certify import certify, write_certificate
from studies.qualify.run import qualify


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A real (tiny) qualification of clustered_normal: record + dataset on disk."""
    d = tmp_path_factory.mktemp("records")
    dom = QualificationDomain(clusters=IntAxis(lo=30, hi=60, grid=(30, 60)), cluster_sizes=(FixedSize(trials=2),),
                              rho=Axis(lo=0.0, hi=0.0, grid=(0.0,)), margin=Axis(lo=0.1, hi=0.1, grid=(0.1,)),
                              baseline=Axis(lo=0.9, hi=1.0, grid=(0.9, 1.0)),
                              discordance=Axis(lo=0.1, hi=0.3, grid=(0.1, 0.3)))
    pol = QualificationPolicy(domain=dom, min_replications=300, max_replications=1200, refine_evaluations=0)
    out = qualify([registry.get("clustered_normal")], pol, out_dir=d)
    o = out.outcomes[0]
    return o.record_path, o.dataset_path


@pytest.fixture()
def files(made, tmp_path):
    rec, ds = made
    (tmp_path / rec.name).write_bytes(rec.read_bytes())
    (tmp_path / ds.name).write_bytes(ds.read_bytes())
    return tmp_path / rec.name, tmp_path / ds.name


def _reseal(data: dict) -> dict:
    data["record_sha256"] = content_hash(body_of(data))
    return data


def _with_counts(data: dict, n_pass: list[int]) -> dict:
    """A forger's consistent rewrite: counts, bounds, verdicts, cells, worst case, hash."""
    rec = QualificationRecord.model_validate(data)
    pol, s = rec.policy, rec.scenarios
    lo, up = cp_bounds(n_pass, list(s.n_reps), pol.stage_confidence)
    scen = s.model_copy(update={"n_pass": tuple(n_pass), "lower": tuple(map(float, lo)), "upper": tuple(map(float, up)),
                                "verdict": tuple(verdict_of(a, b, pol.threshold) for a, b in zip(lo, up))})
    new = build_record(rec.method.model_dump(include={"name", "version", "source_sha256"}), rec.method.kind,
                       rec.method.estimand, pol, scen, rec.dataset.file, rec.dataset.sha256, rec.software,
                       method_key=(rec.method.registered_name, (), None))
    out = json.loads(new.to_json())
    out["created"], out["valid_until"] = data["created"], data["valid_until"]
    assert cell_verdicts(pol, scen) == new.cells
    return _reseal(out)


def _swap_in_zero_dataset(data: dict, ds) -> QualificationRecord:
    """Overwrite the dataset with one that never false-passes and update its hash in ``data``."""
    record = QualificationRecord.model_validate(data)
    zero = record.scenarios.model_copy(update={"n_pass": (0,) * len(record.scenarios)})
    save_dataset(build_qualification_dataset(record.policy, record.method.model_dump(include={"name", "version", "source_sha256"}),
                                zero, record.software), ds, compress=True)
    data["dataset"]["sha256"] = file_hash(ds)
    return record


def test_genuine_record_loads(files):
    rec, _ = files
    assert load_record(rec).dataset.sha256 == file_hash(files[1])


def test_forger_recomputing_cells_and_hash_is_caught(files):
    rec, _ = files
    data = json.loads(rec.read_text())
    forged = _with_counts(data, [0] * len(data["scenarios"]["n_pass"]))   # "never false-passes"
    assert forged["qualified"]["cells_qualified"] == forged["qualified"]["cells_total"]
    rec.write_text(json.dumps(forged))
    with pytest.raises(TamperedRecordError, match=r"scenario 0: the record says n_pass=0, its dataset .* says [1-9]"):
        load_record(rec)


def test_forger_swapping_the_dataset_is_caught(files):
    rec, ds = files
    data = json.loads(rec.read_text())
    _swap_in_zero_dataset(data, ds)
    rec.write_text(json.dumps(_reseal(data)))
    with pytest.raises(TamperedRecordError, match=r"the record says n_pass=\d+, its dataset .* says 0"):
        load_record(rec)


def test_a_record_verified_before_is_checked_again_once_changed(files):
    """What a process has verified is remembered by the exact bytes of the record and its
    dataset: loading again is cheap, and a forgery after a genuine load is still caught."""
    rec, ds = files
    first = load_record(rec)
    assert load_record(rec) == first                       # the same bytes: the same record
    genuine = rec.read_text()
    data = json.loads(genuine)
    rec.write_text(json.dumps(_with_counts(data, [0] * len(data["scenarios"]["n_pass"]))))
    with pytest.raises(TamperedRecordError, match=r"scenario 0: the record says n_pass=0"):
        load_record(rec)
    rec.write_text(genuine)                                # genuine again, the dataset swapped under it
    data = json.loads(genuine)
    _swap_in_zero_dataset(data, ds)                        # writes a zero-count dataset in place
    with pytest.raises(TamperedRecordError, match=r"sha256 mismatch"):
        load_record(rec)
    rec.write_text(json.dumps(_reseal(data)))              # and the record re-sealed to name it
    with pytest.raises(TamperedRecordError, match=r"the record says n_pass=\d+, its dataset .* says 0"):
        load_record(rec)


def test_forger_pushing_valid_until_is_caught(files):
    rec, _ = files
    data = json.loads(rec.read_text())
    data["valid_until"] = "2099-01-01T00:00:00Z"
    rec.write_text(json.dumps(_reseal(data)))
    with pytest.raises(TamperedRecordError, match="valid_until 2099-01-01T00:00:00Z does not follow from created"):
        load_record(rec)
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=400)
    data["created"] = format_time(future)
    data["valid_until"] = format_time(future + dt.timedelta(days=data["policy"]["validity_days"]))
    rec.write_text(json.dumps(_reseal(data)))
    with pytest.raises(TamperedRecordError, match="lies in the future"):
        load_record(rec)


def test_signatures_against_a_trusted_key_set(files, tmp_path):
    rec, ds = files
    ours, theirs = signing.generate_key(), signing.generate_key()
    trusted = {signing.key_id(ours): ours.public_key()}
    with pytest.raises(UntrustedRecordError, match="unsigned"):
        load_record(rec, trusted_keys=trusted)
    good = load_record(rec).signed(ours)
    rec.write_text(good.to_json())
    assert load_record(rec, trusted_keys=trusted) == good
    assert load_record(rec) == good  # no key set given: the signature is not required

    # signed by a key outside the trusted set
    rec.write_text(load_record(rec).model_copy(update={"signature": None}).signed(theirs).to_json())
    with pytest.raises(UntrustedRecordError, match="not in the trusted key set"):
        load_record(rec, trusted_keys=trusted)

    # a fully consistent forgery (dataset and record rewritten together, dates re-stamped,
    # hash re-sealed) keeps our old signature: only the signature can catch it, and does
    rec.write_text(good.to_json())
    data = json.loads(rec.read_text())
    record = _swap_in_zero_dataset(data, ds)
    forged = _with_counts(data, [0] * len(record.scenarios))
    forged["signature"] = data["signature"]
    rec.write_text(json.dumps(forged))
    assert load_record(rec).qualified.cells_qualified == record.qualified.cells_total  # self-consistent
    with pytest.raises(UntrustedRecordError, match="does not verify"):
        load_record(rec, trusted_keys=trusted)
    assert signed_payload(forged) != signed_payload(json.loads(good.to_json()))


def test_certificates_are_signed_and_verified(tmp_path):
    ours, theirs = signing.generate_key(), signing.generate_key()
    trusted = {signing.key_id(ours): ours.public_key()}
    cert = certify("tango_score", 40, 1, 0.05, sign_key=ours)
    path = write_certificate(cert, tmp_path)
    assert load_certificate(path, trusted_keys=trusted) == cert
    data = json.loads(path.read_text())
    data["verdict"] = "qualified" if cert.verdict != "qualified" else "exceeds"
    data["certificate_sha256"] = content_hash(body_of(data))
    path.write_text(json.dumps(data))
    with pytest.raises(UntrustedRecordError, match="does not verify"):
        load_certificate(path, trusted_keys=trusted)
    with pytest.raises(TamperedRecordError, match="verdict"):
        load_certificate(path)
    unsigned = write_certificate(cert.model_copy(update={"signature": None}), tmp_path / "u")
    with pytest.raises(UntrustedRecordError, match="unsigned"):
        load_certificate(unsigned, trusted_keys=trusted)
    other = write_certificate(cert.model_copy(update={"signature": None}).signed(theirs), tmp_path / "o")
    with pytest.raises(UntrustedRecordError, match="not in the trusted key set"):
        load_certificate(other, trusted_keys=trusted)
    assert np.isfinite(cert.worst_point.rate)
