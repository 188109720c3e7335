"""Content hashes: RFC 8785 canonical JSON; non-finite numbers refused with their place named."""
from __future__ import annotations

import math

import pytest
import rfc8785

from simlab.hashing import canonical_bytes, content_hash


def test_canonical_bytes_are_rfc8785():
    value = {"b": [1, 2.5, 1e-7, 1e21, "é\n"], "a": {"z": None, "y": True}, "c": (3, 0.1)}
    assert canonical_bytes(value) == rfc8785.dumps(value) == (
        b'{"a":{"y":true,"z":null},"b":[1,2.5,1e-7,1e+21,"\xc3\xa9\\n"],"c":[3,0.1]}')
    assert content_hash(value) == content_hash({"c": [3, 0.1], "a": {"y": True, "z": None},
                                                "b": [1, 2.5, 1e-7, 1e21, "é\n"]})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_where_they_are(bad):
    with pytest.raises(ValueError, match=r"\$\.cells\[1\]\.rate: non-finite number"):
        canonical_bytes({"ok": 1.0, "cells": [{"rate": 0.5}, {"rate": bad}]})
    with pytest.raises(ValueError, match=r"^\$: non-finite number"):
        content_hash(bad)
