"""Ed25519 signing over canonical JSON: round trip, tampering, untrusted keys, key files."""
import pytest

from simlab import signing


def test_round_trip_and_canonical_order():
    key = signing.generate_key()
    sig = signing.sign({"b": 1, "a": [1, 2]}, key)
    trusted = {signing.key_id(key): key.public_key()}
    # canonical JSON: key order does not matter
    assert signing.verify({"a": [1, 2], "b": 1}, sig, trusted) == signing.key_id(key)


def test_altered_payload_untrusted_key_and_unsigned_are_rejected():
    key, other = signing.generate_key(), signing.generate_key()
    sig = signing.sign({"x": 1}, key)
    trusted = {signing.key_id(key): key.public_key()}
    with pytest.raises(signing.SignatureError, match="altered"):
        signing.verify({"x": 2}, sig, trusted)
    with pytest.raises(signing.SignatureError, match="not in the trusted key set"):
        signing.verify({"x": 1}, signing.sign({"x": 1}, other), trusted)
    with pytest.raises(signing.SignatureError, match="unsigned"):
        signing.verify({"x": 1}, None, trusted)
    # a signature claiming a trusted key id but made by another key
    forged = signing.Signature(key_id=signing.key_id(key), signature=signing.sign({"x": 1}, other).signature)
    with pytest.raises(signing.SignatureError, match="altered"):
        signing.verify({"x": 1}, forged, trusted)


def test_key_files(tmp_path):
    key = signing.generate_key()
    private, public = signing.save_keypair(key, tmp_path, "team")
    assert private.stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        signing.save_keypair(key, tmp_path, "team")
    loaded = signing.load_private_key(private)
    trusted = signing.trusted_keys([tmp_path])
    assert list(trusted) == [signing.key_id(key)]
    sig = signing.sign({"k": "v"}, loaded)
    assert signing.verify({"k": "v"}, sig.model_dump(), trusted) == signing.key_id(key)
