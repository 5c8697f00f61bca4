"""The compiled ``model.vocab`` pass (vocab_checks.ordinary_strings) against the Python loop of
cybpe/formats/hf.py ``_read_vocab``: the same strings, or the loop's error when it declines."""

from __future__ import annotations

import pytest

import cybpe.formats.hf as hf
from cybpe.errors import FormatError
from cybpe.formats.vocab_checks import ordinary_strings

BASE = {chr(0x100 + i): i for i in range(5)}
CASES = [
    (BASE, {}),
    (BASE, {"<s>": 5}),
    ({**BASE, "<s>": 5}, {"<s>": 5}),
    ({**BASE, "<s>": 2}, {"<s>": 2}),          # an added token in the middle of the ids
    ({**BASE, "x": 5}, {"<s>": 5}),            # an added token's id holds another string
    ({**BASE, "x": 7}, {}),                    # a gap
    ({**BASE, "x": -1}, {}),
    ({**BASE, "x": 3}, {}),                    # two strings share an id
    ({**BASE, "x": True}, {}),
    ({**BASE, "x": 5.0}, {}),
    ({**BASE, "x": 2**70}, {}),
    ({**BASE, "x": "5"}, {}),
    ({}, {}),
    ({"a": 0}, {"<s>": 2**70}),
]


def _outcome(vocab, specials):
    try:
        return hf._read_vocab("f.json", vocab, specials)
    except FormatError as exc:
        return f"error: {exc}"


@pytest.mark.parametrize("vocab, specials", CASES)
def test_the_compiled_pass_agrees_with_the_loop(monkeypatch, vocab, specials):
    fast = _outcome(vocab, specials)
    monkeypatch.setattr(hf, "ordinary_strings", lambda *args: None)
    assert fast == _outcome(vocab, specials)
    got = ordinary_strings(vocab, {i: s for s, i in specials.items()})
    if isinstance(fast, list) and all(-2**63 <= i < 2**63 for i in specials.values()):
        assert got == fast  # the compiled pass takes every vocabulary the loop accepts ...
    else:
        # ... and declines the rest (the loop then names the error), and an added token whose
        # id is past a C long (the loop handles it)
        assert got is None
