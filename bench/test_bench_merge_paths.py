"""The cost of BPE itself on pieces no cache has seen: every distinct piece of each eval
language's first 1 MB that is not a token (the pieces a one-pass encode has to merge), merged
with no piece cache and no cutting, through ``RankEncoder._merge_pieces``.

This is the part of a one-pass encode that the thread piece cache cannot help (the first
occurrence of each piece), measured without the scanner and the caches around it, so a change
to the merge paths or to the pair table shows here first. ``extra_info`` holds the pieces, their
bytes and ``ns_per_piece`` (the mean round over the pieces). The CJK languages run a second
time with the character path off (every piece byte by byte), so that the path's own effect
shows beside it, and ``test_merge_unseen_parts`` merges their parts between cut points (what
an encode of CJK text merges), with the path on and off.

    CYBPE_SHARED=../shared python -m pytest bench/test_bench_merge_paths.py --benchmark-group-by=param:vocab
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import cybpe
from bench_support import shared_path

VOCABS = [v for v in os.environ.get("BENCH_VOCABS", "cl100k_base,o200k_base").split(",") if v]
LANGS = ["en", "de", "ru", "ar", "hi", "km", "ja", "ko", "zh-Hans"]
_LOADED: dict[str, cybpe.Tokenizer] = {}


def _tokenizer(vocab: str) -> cybpe.Tokenizer:
    shared = shared_path()
    if shared is None or not (shared / "vocab" / f"{vocab}.tiktoken").exists():
        pytest.skip(f"merge-path benchmarks need $CYBPE_SHARED/vocab/{vocab}.tiktoken")
    if vocab not in _LOADED:
        _LOADED[vocab] = cybpe.Tokenizer.from_tiktoken(shared / "vocab" / f"{vocab}.tiktoken")
    return _LOADED[vocab]


def _unseen_pieces(tok: cybpe.Tokenizer, lang: str) -> list[bytes]:
    """The distinct pieces of the text's first 1 MB that are not tokens, in text order."""
    path = shared_path() / "corpora" / "eval" / "docs" / f"{lang}.txt"
    if not path.exists():
        pytest.skip(f"no eval text {path}")
    text = path.read_text(encoding="utf-8")[:1_000_000]
    tokens = set(tok.vocab.tokens)
    seen: set[bytes] = set()
    out = []
    for piece in tok.pretokenizer.split(text):
        b = piece.encode("utf-8", "surrogatepass")
        if b not in tokens and b not in seen:
            seen.add(b)
            out.append(b)
    return out


CJK = ["ja", "ko", "zh-Hans"]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("vocab", VOCABS)
def test_merge_unseen_pieces(benchmark, vocab, lang):
    _merge_unseen(benchmark, vocab, lang, True)


@pytest.mark.parametrize("lang", CJK)
@pytest.mark.parametrize("vocab", VOCABS)
def test_merge_unseen_pieces_without_the_character_path(benchmark, vocab, lang):
    _merge_unseen(benchmark, vocab, lang, False)


def _unseen_parts(tok: cybpe.Tokenizer, lang: str) -> list[bytes]:
    """The distinct parts of 2 bytes or more of those pieces, cut at their cut points as an
    encode cuts them (cut_points.pxd), that are not tokens: what a CJK encode merges."""
    tokens = set(tok.vocab.tokens)
    encoder = tok._encoder
    seen: set[bytes] = set()
    out = []
    for piece in _unseen_pieces(tok, lang):
        cuts = [0] + (encoder._cut_points(piece) if len(piece) >= 16 else []) + [len(piece)]
        for start, end in zip(cuts, cuts[1:]):
            part = piece[start:end]
            if end - start >= 2 and part not in tokens and part not in seen:
                seen.add(part)
                out.append(part)
    return out


@pytest.mark.parametrize("char_path", ["on", "off"])
@pytest.mark.parametrize("lang", CJK)
@pytest.mark.parametrize("vocab", VOCABS)
def test_merge_unseen_parts(benchmark, vocab, lang, char_path):
    _merge_unseen(benchmark, vocab, lang, char_path == "on", parts=True)


def _merge_unseen(benchmark, vocab: str, lang: str, char_path: bool, parts: bool = False) -> None:
    tok = _tokenizer(vocab)
    pieces = _unseen_parts(tok, lang) if parts else _unseen_pieces(tok, lang)
    data = b"".join(pieces)
    ends = np.cumsum([len(p) for p in pieces], dtype=np.int64)
    encoder = tok._encoder
    expected = sum(len(encoder.encode_piece(p)) for p in pieces)
    encoder._set_char_merges(char_path)
    try:
        got = benchmark(encoder._merge_pieces, data, ends)
    finally:
        encoder._set_char_merges(True)
    assert got == expected  # the same number of ids as one piece at a time
    benchmark.extra_info.update(pieces=len(pieces), bytes=len(data),
                                ns_per_piece=round(benchmark.stats.stats.mean / max(1, len(pieces)) * 1e9, 1))
