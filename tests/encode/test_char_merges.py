"""Merging three-byte characters as parts of their own (cybpe/encode/char_merges.pxd) changes
no id.

Each check can fail on its own:

* every three-byte form alone merges as the pure-Python reference merges its three bytes (the
  table the path starts from);
* random vocabularies over a few CJK characters, built to break every assumption a shortcut
  could make (tokens holding part of a character next to a whole one, a space before a lead
  byte, merges of two characters ranked below the merges that make the characters, merge
  lists out of rank order, characters that never become one token), merge every random piece
  as the reference does, and the path takes most pieces and gives some up;
* real pieces (a trained vocabulary here, the shared real vocabularies in the full run) equal
  the reference piece by piece, and whole texts equal the byte-level paths.
"""

from __future__ import annotations

import random

import pytest

import cybpe
from cybpe.encode.encoder import RankEncoder
from cybpe.reference.encoder import (
    all_splits_table, merges_table, reference_encode_piece_with_pairs, token_ids_of)
from support import SKIP_REASON, UDHR_DIR, shared_path, udhr_texts

SHARED = shared_path()

CHARS = [c.encode() for c in "日本語の文字しいテスト中한"]


def _three_byte_forms() -> list[bytes]:
    """Every form the path takes: leads 0xE3-0xEF (U+3000-U+FFFF, surrogates' forms included)."""
    return [bytes([0xE0 | v >> 12, 0x80 | (v >> 6) & 63, 0x80 | v & 63]) for v in range(0x3000, 65536)]


def _reference(tokens: list[bytes], merges) -> callable:
    ids = token_ids_of(tokens)
    pairs = all_splits_table(tokens) if merges is None else merges_table(tokens, merges)
    return lambda piece, lookup=False: reference_encode_piece_with_pairs(
        piece, ids, pairs, whole_piece_lookup=lookup)


def _hostile_vocabulary(seed: int, with_merges: bool) -> tuple[list[bytes], list | None]:
    """The single bytes, then a random choice, in random order, of: characters, their two-byte
    heads and tails, runs of two or three characters, and mixed tokens (a character with part
    of the next one, the tail of one with the next, a space with a lead byte or a head)."""
    rng = random.Random(seed)
    candidates = set()
    for c in CHARS:
        candidates.update({c, c[:2], c[1:], b" " + c[:1], b" " + c[:2], b" " + c})
    for _ in range(40):
        a, b, c = rng.choice(CHARS), rng.choice(CHARS), rng.choice(CHARS)
        candidates.update({a + b, a + b + c, a + b[:1], a + b[:2], a[2:] + b, a[1:] + b,
                           a[2:] + b[:1]})
    chosen = sorted(candidates)
    rng.shuffle(chosen)
    chosen = chosen[: rng.randint(len(chosen) // 3, len(chosen))]
    tokens = [bytes([b]) for b in range(256)] + [t for t in chosen if len(t) > 1]
    if not with_merges:
        return tokens, None
    ids = token_ids_of(tokens)
    merges = []
    for t in tokens[256:]:
        splits = [(ids[t[:k]], ids[t[k:]]) for k in range(1, len(t)) if t[:k] in ids and t[k:] in ids]
        if splits:
            merges.append(rng.choice(splits))
    rng.shuffle(merges)  # out of any order a trainer would give
    return tokens, merges


def _random_pieces(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    atoms = CHARS * 3 + [b" ", b"a", "é".encode()]
    return [b"".join(rng.choice(atoms) for _ in range(rng.randint(1, 30))) for _ in range(count)]


@pytest.mark.parametrize("seed", range(12))
def test_hostile_vocabularies_merge_as_the_reference(seed):
    tokens, merges = _hostile_vocabulary(seed, with_merges=seed % 2 == 1)
    encoder = RankEncoder(tokens, merges)
    assert encoder.char_merges
    reference = _reference(tokens, merges)
    taken = given_up = 0
    for piece in _random_pieces(seed, 400):
        got = encoder._merge_chars(piece)
        if got is None:
            given_up += 1
        else:
            taken += 1
            assert got == reference(piece), piece.decode()
        assert encoder.encode_piece(piece) == reference(piece, lookup=True), piece.decode()
    assert taken > 100 and given_up > 0, (taken, given_up)


@pytest.mark.parametrize("seed", range(4))
def test_every_three_byte_form_alone_merges_as_the_reference(seed):
    tokens, merges = _hostile_vocabulary(100 + seed, with_merges=seed % 2 == 1)
    encoder = RankEncoder(tokens, merges)
    reference = _reference(tokens, merges)
    for form in _three_byte_forms()[seed::4]:
        assert encoder._merge_chars(form) == reference(form), form


def test_pieces_the_path_does_not_take():
    tokens, merges = _hostile_vocabulary(7, with_merges=False)
    encoder = RankEncoder(tokens, merges)
    assert encoder._merge_chars(b"abc") is None  # no three-byte character
    assert encoder._merge_chars(b"a") is None
    with pytest.raises(ValueError):
        encoder._merge_pieces("日本".encode(), [6], 5)  # the path that can give up
    assert encoder._merge_chars("é".encode() * 3) is None
    assert encoder._merge_chars(b"\xe6\x97") is None  # cut short
    assert encoder._merge_chars(b"\xe6\x97\xa5\x80") is None  # a stray continuation byte after it
    assert encoder._merge_chars("日".encode() * 33) is None  # more parts than the path holds
    assert encoder._merge_chars("日".encode() * 32) is not None
    # abugidas and the symbols below U+3000 stay bytes (their marks merge with neighbours
    # before the characters are done, where this path is slower)
    assert encoder._merge_chars("नमस्ते".encode()) is None
    assert encoder._merge_chars("→→".encode()) is None
    encoder._set_char_merges(False)
    assert not encoder.char_merges and encoder._merge_chars("日本".encode()) is None
    encoder._set_char_merges(True)
    assert encoder.char_merges and encoder._merge_chars("日本".encode()) is not None


def test_a_mixed_token_across_a_boundary_makes_the_path_give_up():
    hi, ni = "日".encode(), "本".encode()
    tokens = [bytes([b]) for b in range(256)] + [hi[:2], hi, ni[:2], hi + ni[:2], ni]
    encoder = RankEncoder(tokens)
    reference = _reference(tokens, None)
    # 日 + the head of 本 is a token ranked before 本 itself: the head of 本 joins 日, and 本
    # never becomes one token
    assert reference(hi + ni) == [tokens.index(hi + ni[:2]), ni[2]]
    assert encoder._merge_chars(hi + ni) is None
    assert encoder.encode_piece(hi + ni) == reference(hi + ni)
    # the same characters the other way round have no such token across their boundary
    assert encoder._merge_chars(ni + hi) == reference(ni + hi)


def test_a_pair_ranked_below_a_characters_own_merges_waits_for_it():
    # Ranks are ids here. 本 becomes one token at rank 263, after the merge 日+本 (258); 語 at
    # 261, after 語+日 (259). BPE makes 語日 as soon as 語 is one token, before 本 is: merging
    # the characters first would make 日本 (the lower rank) instead.
    hi, ni, go = "日".encode(), "本".encode(), "語".encode()
    tokens = [bytes([b]) for b in range(256)]
    tokens += [hi[:2], hi, hi + ni, go + hi, go[:2], go, ni[:2], ni]
    encoder = RankEncoder(tokens)
    reference = _reference(tokens, None)
    piece = go + hi + ni
    assert encoder._merge_chars(piece) == reference(piece) == [tokens.index(go + hi), tokens.index(ni)]


def test_a_stray_continuation_byte_after_a_character_joins_it():
    hi = "日".encode()
    tokens = [bytes([b]) for b in range(256)] + [hi[2:] + b"\x80", hi[:2], hi]
    encoder = RankEncoder(tokens)
    piece = hi + b"\x80"  # not UTF-8: 日's last byte merges with the stray byte first
    assert _reference(tokens, None)(piece, lookup=True) == [257, 256]
    assert encoder.encode_piece(piece) == [257, 256]


def _udhr_tokenizer() -> cybpe.Tokenizer:
    texts = udhr_texts()
    return cybpe.train(list(texts.values()), vocab_size=4000, pretokenizer="cl100k")


@pytest.fixture(scope="module")
def udhr_tok():
    return _udhr_tokenizer()


def test_trained_vocabulary_pieces_equal_the_reference(udhr_tok):
    tokens = udhr_tok.vocab.tokens
    encoder = udhr_tok._encoder
    assert encoder.char_merges
    reference = _reference(tokens, None)  # trained tokenizers encode by rank (all splits)
    texts = udhr_texts()
    pieces = sorted({p.encode() for lang in ("ja", "zh-Hans", "zh-Hant", "ko")
                     for p in udhr_tok.pretokenizer.split(texts[lang])})
    taken = 0
    for piece in pieces:
        got = encoder._merge_chars(piece)
        if got is not None:
            taken += 1
            assert got == reference(piece), piece.decode()
    assert taken > len(pieces) // 2


def test_whole_texts_equal_the_byte_level_paths(udhr_tok):
    texts = list(udhr_texts().values())
    texts.append("".join(random.Random(3).choice("日本語の文字列テスト中文한국어 a,é\n")
                         for _ in range(20_000)))
    encoder = udhr_tok._encoder
    try:
        encoder._set_char_merges(False)
        expected = [udhr_tok.encode_ordinary(t) for t in texts]
    finally:
        encoder._set_char_merges(True)
    fresh = cybpe.Tokenizer(udhr_tok.vocab, udhr_tok.pretokenizer)  # nothing in its piece cache
    assert fresh._encoder is not encoder and fresh._encoder.char_merges
    assert [fresh.encode_ordinary(t) for t in texts] == expected


@pytest.mark.slow
@pytest.mark.skipif(SHARED is None, reason=SKIP_REASON)
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "llama3"])
def test_real_vocabularies_pieces_equal_the_reference(name):
    vocab = SHARED / "vocab"
    tok = (cybpe.Tokenizer.from_hf(vocab / "llama3" / "tokenizer.json") if name == "llama3"
           else cybpe.Tokenizer.from_tiktoken(vocab / f"{name}.tiktoken"))
    encoder = tok._encoder
    tokens = tok.vocab.tokens
    reference = _reference(tokens, None if tok.vocab.merges is None or tok.vocab.encode_by_rank
                           else tok.vocab.merges)
    pieces = set()
    for lang in ("ja", "zh-Hans", "zh-Hant", "ko"):
        text = (SHARED / "corpora" / "eval" / "docs" / f"{lang}.txt").read_text(encoding="utf-8")
        for piece in tok.pretokenizer.split(text[:20_000]):
            b = piece.encode()
            cuts = [0] + encoder._cut_points(b) + [len(b)]
            pieces.update(b[x:y] for x, y in zip(cuts, cuts[1:]))
    pieces.update(_random_pieces(5, 300))
    taken = 0
    for piece in sorted(pieces):
        got = encoder._merge_chars(piece)
        if got is not None:
            taken += 1
            assert got == reference(piece), piece.decode()
    assert taken > len(pieces) // 3
    for form in _three_byte_forms()[::7]:
        assert encoder._merge_chars(form) == reference(form), form
