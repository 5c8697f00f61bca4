"""Vocab.validate remembers what passed (cybpe/formats/vocab.py, performance notes): a loaded
vocabulary is not hashed again by Tokenizer(), and anything changed since is checked again."""

from __future__ import annotations

import pickle

import pytest

import cybpe
import cybpe.formats.vocab as vocab_module
from cybpe.errors import FormatError
from cybpe.formats.vocab import Vocab

BYTES = [bytes([b]) for b in range(256)]


def _vocab(merges=True) -> Vocab:
    tokens = BYTES + [b"ab", b"abc"]
    return Vocab(tokens, [(97, 98), (256, 99)] if merges else None, {"<|end|>": 300}, True)


class _CountingIndex:
    """Stands in for TokenIndex and counts how often the tokens are indexed."""

    def __init__(self, real):
        self.real, self.built = real, 0

    def of(self, tokens):
        self.built += 1
        return self.real.of(tokens)


@pytest.fixture
def counting(monkeypatch):
    spy = _CountingIndex(vocab_module.TokenIndex)
    monkeypatch.setattr(vocab_module, "TokenIndex", spy)
    return spy


def test_a_checked_vocab_is_not_indexed_again(counting):
    vocab = _vocab()
    vocab.validate()
    assert counting.built == 1
    vocab.validate()
    cybpe.Tokenizer(vocab, "cl100k")
    assert counting.built == 1
    vocab.special_tokens = {"<|x|>": 301}  # new special tokens are checked, tokens are not
    vocab.validate()
    assert counting.built == 1


def test_a_load_indexes_the_tokens_once(counting, tmp_path):
    path = tmp_path / "small.tiktoken"
    cybpe.Tokenizer(_vocab(merges=False), "cl100k").to_tiktoken(path)
    counting.built = 0
    cybpe.Tokenizer.from_tiktoken(path, "cl100k")
    assert counting.built == 1


@pytest.mark.parametrize("change", ["duplicate", "drop_byte", "empty", "bad_merge", "bad_pair",
                                    "special_collides"])
def test_changes_after_a_check_are_checked(change):
    vocab = _vocab()
    vocab.validate()
    if change == "duplicate":
        vocab.tokens[257] = b"ab"
    elif change == "drop_byte":
        vocab.tokens[0] = b"zz"
    elif change == "empty":
        vocab.tokens.append(b"")
    elif change == "bad_merge":
        vocab.merges[1] = (256, 120)  # b"abx" is not a token
    elif change == "bad_pair":
        vocab.merges.append((1, 10_000))
    else:
        vocab.special_tokens["<|bad|>"] = 5
    with pytest.raises(FormatError):
        vocab.validate()
    with pytest.raises(FormatError):
        cybpe.Tokenizer(vocab, "cl100k")


def test_merges_of_lists_are_checked_every_time():
    vocab = _vocab()
    vocab.merges = [[97, 98], [256, 99]]
    vocab.validate()
    vocab.merges[1][1] = 120  # in place, inside a pair: the list of pairs still compares equal
    with pytest.raises(FormatError):
        vocab.validate()


def test_what_is_remembered_is_not_pickled_nor_compared():
    vocab = _vocab()
    vocab.validate()
    copy = pickle.loads(pickle.dumps(vocab))
    assert "_checked" not in copy.__dict__
    assert copy == vocab == _vocab()
    copy.validate()
