"""Vocab's pickle state (cybpe/formats/vocab.py, ``__getstate__``): the tokens as one byte string
plus lengths and the merges as one array, so that pure-Python picklers (dill, which ``datasets``
uses to fingerprint a ``map`` function holding a tokenizer) see a handful of objects; states
pickled before the packing (the plain field dict) still load."""

from __future__ import annotations

import pickle

import pytest

import cybpe
from cybpe.formats.vocab import PACKED_STATE, Vocab

BYTES = [bytes([b]) for b in range(256)]


def _vocabs() -> list[Vocab]:
    return [
        Vocab(BYTES + [b"ab", b"abc", b"\x00\xff"], [(97, 98), (256, 99), (0, 255)],
              {"<|end|>": 400}, True),
        # rank-only, with a gap (None) and an alias, as tiktoken files may have
        Vocab(BYTES + [b"ab", None, b"abc", b"ab"], None, {"<|end|>": 300}, True),
        Vocab(BYTES, [], {}, False, True),
    ]


@pytest.mark.parametrize("index", range(3))
def test_round_trip_keeps_every_field(index):
    vocab = _vocabs()[index]
    copy = pickle.loads(pickle.dumps(vocab))
    assert copy == vocab
    assert copy.tokens == vocab.tokens and type(copy.tokens) is list
    assert copy.merges == vocab.merges
    assert copy.merges is None or all(type(m) is tuple and type(m[0]) is int for m in copy.merges)
    assert (copy.special_tokens, copy.ignore_merges, copy.encode_by_rank) == \
        (vocab.special_tokens, vocab.ignore_merges, vocab.encode_by_rank)


def test_the_state_is_a_few_objects_not_one_per_token():
    state = _vocabs()[0].__getstate__()
    assert state["packed"] == PACKED_STATE
    assert "tokens" not in state and "merges" not in state
    assert isinstance(state["token_bytes"], bytes) and isinstance(state["merge_ids"], bytes)


def test_a_state_from_before_the_packing_loads():
    vocab = _vocabs()[1]
    old = {k: v for k, v in vocab.__dict__.items() if not k.startswith("_")}
    assert "tokens" in old
    copy = Vocab.__new__(Vocab)
    copy.__setstate__(old)
    assert copy == vocab


def test_a_tokenizer_pickled_by_dill_encodes_the_same():
    dill = pytest.importorskip("dill", reason="dill comes with the test extra's datasets")
    tok = cybpe.train(["hello world, hello tokenizers " * 50, "naïve café — 東京"], 300)
    copy = dill.loads(dill.dumps(tok))
    text = "hello naïve 東京 world"
    assert copy.encode_ordinary(text) == tok.encode_ordinary(text)
    assert copy.vocab == tok.vocab
