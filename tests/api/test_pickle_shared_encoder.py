"""Unpickling reuses an encoder the process already has (cybpe/encode/shared_encoders.py)."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import pytest

import cybpe
from cybpe.encode import shared_encoders
from support import UDHR_DIR

TEXT = "Hello, world! नमस्ते दुनिया 12345"


def _train(size: int = 400) -> cybpe.Tokenizer:
    texts = [p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))[:4]]
    return cybpe.train(texts, vocab_size=size, special_tokens=["<|endoftext|>"], progress=False)


@pytest.fixture(scope="module")
def tok() -> cybpe.Tokenizer:
    return _train()


def test_round_trip_shares_the_encoder_and_nothing_else(tok):
    data = pickle.dumps(tok)
    back = pickle.loads(data)
    assert back is not tok and back == tok
    assert back._encoder is tok._encoder
    assert back.encode(TEXT) == tok.encode(TEXT)
    back.metadata["x"] = 1
    assert "x" not in tok.metadata
    deep = copy.deepcopy(tok)
    assert deep._encoder is tok._encoder and deep.vocab is not tok.vocab


def test_the_pickle_is_the_same_for_equal_tokenizers(tok):
    # datasets names its cache files by a hash of the pickled function: it must not change per run
    again = cybpe.Tokenizer(tok.vocab, tok.pretokenizer)
    assert shared_encoders.encoder_digest(again) == shared_encoders.encoder_digest(tok)
    assert pickle.dumps(tok) == pickle.dumps(tok)
    other = _train(420)
    assert shared_encoders.encoder_digest(other) != shared_encoders.encoder_digest(tok)


def test_cold_process_builds_once_then_reuses(tok):
    data = pickle.dumps(tok)
    shared_encoders.forget()
    first = pickle.loads(data)
    assert first._encoder is not tok._encoder  # nothing known: built
    first_encoder = first._encoder
    del first
    second = pickle.loads(data)  # the recently unpickled encoders are kept
    assert second._encoder is first_encoder
    assert second.encode(TEXT) == tok.encode(TEXT)


def test_a_key_that_does_not_fit_is_ignored(tok):
    state = tok.__getstate__()
    other = _train(420)
    state_other = other.__getstate__()
    state_other["encoder_key"] = state["encoder_key"]  # wrong key: the sizes differ, so it is rebuilt
    back = cybpe.Tokenizer.__new__(cybpe.Tokenizer)
    back.__setstate__(state_other)
    assert back._encoder is not tok._encoder
    assert back.encode(TEXT) == other.encode(TEXT)
    del state["encoder_key"]  # a state from an older cybpe
    old = cybpe.Tokenizer.__new__(cybpe.Tokenizer)
    old.__setstate__(state)
    assert old.encode(TEXT) == tok.encode(TEXT)


_FORKED: list = []


def _child(data: bytes, queue) -> None:
    back = pickle.loads(data)
    queue.put((back._encoder is _FORKED[0]._encoder, back.encode(TEXT)))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")
def test_a_forked_worker_finds_the_parents_encoder(tok):
    _FORKED[:] = [tok]
    data = pickle.dumps(tok)  # pickled (so known) before the fork, as datasets.map does
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    process = ctx.Process(target=_child, args=(data, queue))
    process.start()
    reused, ids = queue.get(timeout=60)
    process.join(60)
    assert reused and ids == tok.encode(TEXT)
