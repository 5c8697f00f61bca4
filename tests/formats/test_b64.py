"""Strict base64 (cybpe/formats/b64.py): canonical base64 only, the same rule on every Python:
what it accepts re-encodes to itself, and binascii's own strict mode (3.11+) accepts it too."""

from __future__ import annotations

import base64
import binascii
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cybpe.formats.b64 import strict_b64decode, strict_b64decode_all
from support import B64_ACCEPTED as ACCEPTED, examples
from support import B64_ALPHABET as ALPHABET
from support import B64_REFUSED as REFUSED


def _outcome(fn, data):
    try:
        return fn(data)
    except (binascii.Error, ValueError):
        return "refused"


@settings(max_examples=examples(500), deadline=None)
@given(st.text(alphabet=ALPHABET + " \n-_", max_size=24) | st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode()))
def test_accepts_exactly_what_re_encodes_to_itself(text):
    got = _outcome(strict_b64decode, text)
    lenient = _outcome(binascii.a2b_base64, text)
    canonical = lenient != "refused" and base64.b64encode(lenient).decode() == text
    assert got == (lenient if canonical else "refused"), text
    assert _outcome(strict_b64decode, text.encode("ascii")) == got
    if canonical and sys.version_info >= (3, 11):
        assert binascii.a2b_base64(text, strict_mode=True) == got  # never looser than strict_mode


def test_hostile_and_known_inputs():
    for text in REFUSED:
        assert _outcome(strict_b64decode, text) == "refused", text
    for text, raw in ACCEPTED.items():
        assert strict_b64decode(text) == strict_b64decode(text.encode()) == raw
    assert strict_b64decode(base64.b64encode(bytes(range(256)))) == bytes(range(256))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET + " \n-_", max_size=12)
                | st.binary(max_size=9).map(lambda b: base64.b64encode(b).decode()), max_size=6))
def test_the_whole_list_decoder_agrees_with_one_by_one(texts):
    fields = [t.encode("ascii") for t in texts]
    one_by_one = [_outcome(strict_b64decode, f) for f in fields]
    whole = _outcome(strict_b64decode_all, fields)
    assert whole == ("refused" if "refused" in one_by_one else one_by_one)


def test_the_whole_list_decoder_on_hostile_fields():
    good = [t.encode() for t in ACCEPTED]
    assert strict_b64decode_all(good) == list(ACCEPTED.values())
    for text in REFUSED:
        assert _outcome(strict_b64decode_all, good + [text.encode()]) == "refused", text
