"""Pruning by final exposure: train(prune_exposure=k) against a pure-Python pipeline (reference
trainer, reference encoder, reference trainer again with the dead tokens refused), and its exports."""

from __future__ import annotations

import pytest

import cybpe
from cybpe.encode.encoder import RankEncoder
from cybpe.errors import InvalidParameterError
from cybpe.reference.encoder import reference_encode_piece
from cybpe.reference.trainer import reference_train_merges
from cybpe.training.prune import RefuseTokens, dead_tokens, final_exposure
from support import UDHR_DIR, assert_exports_agree

UDHR = {p.stem: p.read_text(encoding="utf-8") for p in sorted(UDHR_DIR.glob("*.txt"))}


def reference_exposure(chunks, weights, tokens):
    ranks = {t: i for i, t in enumerate(tokens)}
    exposure = [0] * len(tokens)
    for chunk, w in zip(chunks, weights):
        for t in reference_encode_piece(chunk, ranks):
            exposure[t] += int(w)
    return exposure


def reference_pruned(chunks, weights, n_new, k):
    first = reference_train_merges(chunks, weights, n_new)
    exposure = reference_exposure(chunks, weights, first.token_bytes)
    dead = {t for t, n in zip(first.token_bytes, exposure) if len(t) > 1 and n < k}
    second = reference_train_merges(chunks, weights, n_new, veto=lambda a, b: a + b in dead)
    return first, dead, second


def test_exposure_hand_case():
    # "abc" x5: ab (count 5) then abc (count 5); ab never survives in the final encoding.
    chunks, weights = [b"abc", b"ab"], [5, 1]
    first = reference_train_merges(chunks, weights, 2)
    assert first.token_bytes[256:] == [b"ab", b"abc"]
    encoder = RankEncoder(first.token_bytes, first.merges)
    exposure = final_exposure(chunks, weights, len(first.token_bytes), encoder.encode_piece)
    assert exposure == reference_exposure(chunks, weights, first.token_bytes)
    assert exposure[256:] == [1, 5]
    assert dead_tokens(exposure, first.token_bytes, 2) == {b"ab"}
    assert RefuseTokens({b"ab"})(b"a", b"b") and not RefuseTokens({b"ab"})(b"b", b"c")


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 3, 10])
def test_train_prune_equals_reference_pipeline(k):
    texts = [UDHR[lang][:3000] for lang in ("en", "hi", "ru", "zh-Hans") if lang in UDHR]
    chunks, weights = cybpe.ChunkCounts("cl100k").update(texts).sorted_arrays()
    n_new = 400
    tok = cybpe.train(texts, 256 + n_new, prune_exposure=k)
    first, dead, second = reference_pruned(chunks, weights, n_new, k)
    assert tok.vocab.tokens == second.token_bytes
    assert [tuple(m) for m in tok.vocab.merges] == second.merges
    report = tok.metadata["training"]["pruned"]
    assert report["refused_tokens"] == len(dead)
    if k > 1:
        assert dead and not dead & set(tok.vocab.tokens)  # the dead tokens are gone
    again = reference_exposure(chunks, weights, second.token_bytes)
    assert report["dead_after"] == sum(1 for t, n in zip(second.token_bytes, again) if len(t) > 1 and n < k)


def test_pruned_exports_and_refusals(tmp_path):
    texts = [UDHR[lang][:4000] for lang in ("en", "ta", "ja") if lang in UDHR]
    tok = cybpe.train(texts, 700, prune_exposure=5)
    assert tok.metadata["training"]["pruned"]["refused_tokens"] > 0
    assert_exports_agree(tok, [UDHR[lang][4000:6000] for lang in ("en", "ta", "ja") if lang in UDHR], tmp_path)
    for bad in (dict(prune_exposure=0), dict(prune_exposure=2, superword_from=300),
                dict(prune_exposure=2, base=tok)):
        with pytest.raises(InvalidParameterError):
            cybpe.train(texts, 800, **bad)
