"""Cutting long pieces at their cut points (cybpe/encode/cut_points.pxd) changes no id.

Three checks, each able to fail on its own:

* the test itself is sound: every place the encoder would cut at has no token of the
  vocabulary occurring across it (checked by brute force over the piece's substrings);
* whole texts encode to the same ids with cutting on and off, and equal tiktoken / HF
  tokenizers / the pure-Python reference;
* the pieces that are cut (long CJK, abugida and mixed-script runs, hostile strings) equal the
  reference BPE piece by piece.
"""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

import cybpe
from cybpe.encode.encoder import RankEncoder, _set_front_generation
from cybpe.reference.encoder import reference_encode, reference_encode_piece
from support import SKIP_REASON, UDHR_DIR, eval_texts, shared_path

SHARED = shared_path()


def needs_shared(test):
    """The real-vocabulary differential tests: the full run (slow), with the shared folder."""
    return pytest.mark.slow(pytest.mark.skipif(SHARED is None, reason=SKIP_REASON)(test))

# Characters that make pieces with many cut points, and some that make none.
ALPHABET = ("日本語の文字列をテストする中文字符한국어텍스트हिन्दीதமிழ்ខ្មែរབོད་ཡིག"
            "русскийäöüéèçñ" "abcXYZ019 _-.,!?'\"\n\t" "\u0301\u200d\ufe0f😀🇯🇵")


def _tokens_in(piece: bytes, vocabulary: set[bytes], longest: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(len(piece)) for b in range(a + 2, min(len(piece), a + longest) + 1)
            if piece[a:b] in vocabulary]


def _assert_cuts_sound(tok: cybpe.Tokenizer, pieces: list[bytes]) -> int:
    """Every cut point the encoder reports has no token across it; the number of cuts seen."""
    encoder = tok._encoder
    vocabulary = set(tok.vocab.tokens)
    longest = max(map(len, vocabulary))
    seen = 0
    for piece in pieces:
        cuts = encoder._cut_points(piece)
        if not cuts:
            continue
        spans = _tokens_in(piece, vocabulary, longest)
        for p in cuts:
            across = [piece[a:b] for a, b in spans if a < p < b]
            assert not across, f"cut at {p} of {piece!r}, but {across[0]!r} is a token across it"
        seen += len(cuts)
    return seen


def _random_pieces(tok: cybpe.Tokenizer, seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    text = "".join(rng.choice(ALPHABET) for _ in range(count * 12))
    return sorted({p.encode() for p in tok.pretokenizer.split(text) if len(p.encode()) >= 7})


def _udhr_tokenizer() -> cybpe.Tokenizer:
    files = sorted(UDHR_DIR.glob("*.txt"))
    return cybpe.train([f.read_text(encoding="utf-8") for f in files], vocab_size=3000, pretokenizer="cl100k")


@pytest.fixture(scope="module")
def udhr_tok():
    return _udhr_tokenizer()


def test_cut_points_are_sound_on_a_trained_vocabulary(udhr_tok):
    texts = [f.read_text(encoding="utf-8") for f in sorted(UDHR_DIR.glob("*.txt"))]
    pieces = sorted({p.encode() for t in texts for p in udhr_tok.pretokenizer.split(t)})
    pieces += _random_pieces(udhr_tok, 1, 400)
    assert _assert_cuts_sound(udhr_tok, pieces) > 100  # the texts do have cut points


def test_cutting_changes_no_id_on_a_trained_vocabulary(udhr_tok):
    encoder = udhr_tok._encoder
    assert encoder.cuts
    texts = [f.read_text(encoding="utf-8") for f in sorted(UDHR_DIR.glob("*.txt"))]
    texts.append("".join(random.Random(2).choice(ALPHABET) for _ in range(20_000)))
    try:
        encoder._set_cutting(False)
        assert not encoder.cuts
        uncut = [udhr_tok.encode_ordinary(t) for t in texts]
    finally:
        encoder._set_cutting(True)
    # a fresh encoder, so that no piece comes out of the thread cache the uncut pass filled
    tok = cybpe.Tokenizer(udhr_tok.vocab, udhr_tok.pretokenizer)
    assert tok._encoder is not encoder and tok._encoder.cuts
    assert [tok.encode_ordinary(t) for t in texts] == uncut


def test_cut_pieces_equal_the_reference_piece_by_piece(udhr_tok):
    ranks = {t: i for i, t in enumerate(udhr_tok.vocab.tokens)}
    merges_tok = udhr_tok  # trained: an explicit merges list
    pieces = [p for p in _random_pieces(merges_tok, 3, 600) if merges_tok._encoder._cut_points(p)]
    assert len(pieces) > 50
    # a rank-only vocabulary of the same tokens: the reference merges by bytes, as tiktoken does
    rank_only = cybpe.Tokenizer(cybpe.Vocab(udhr_tok.vocab.tokens, None, {}, True), udhr_tok.pretokenizer)
    for piece in pieces:
        got = rank_only.encode_ordinary(piece.decode("utf-8", "surrogatepass"))
        assert got == reference_encode_piece(piece, ranks), piece


@needs_shared
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_cutting_equals_tiktoken_on_the_eval_corpora(name):
    tiktoken = pytest.importorskip("tiktoken")
    tok = cybpe.Tokenizer.from_tiktoken(SHARED / "vocab" / f"{name}.tiktoken")
    assert tok._encoder.cuts
    enc = tiktoken.Encoding(name, pat_str=tok.pretokenizer.pattern, special_tokens={},
                            mergeable_ranks={b: i for i, b in enumerate(tok.vocab.tokens)})
    texts = [text for _, text in eval_texts(SHARED, 120_000)]
    texts += [p.read_text(encoding="utf-8")[:60_000]
              for p in sorted((SHARED / "corpora" / "eval" / "parallel-ntrex").glob("*.txt"))]
    rng = random.Random(4)
    texts.append("".join(rng.choice(ALPHABET) for _ in range(50_000)))
    for text in texts:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text[:60]


@needs_shared
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_cut_points_are_sound_on_real_vocabularies(name):
    tok = cybpe.Tokenizer.from_tiktoken(SHARED / "vocab" / f"{name}.tiktoken")
    texts = [text for fname, text in eval_texts(SHARED, 30_000)
             if fname.split(".")[0] in ("ja", "zh-Hans", "ko", "hi", "ar", "ta", "km", "ru")]
    pieces = sorted({p.encode() for t in texts for p in tok.pretokenizer.split(t)})
    pieces += _random_pieces(tok, 5, 300)
    assert _assert_cuts_sound(tok, pieces) > 1000


@needs_shared
def test_cutting_equals_hf_on_llama3():
    tokenizers = pytest.importorskip("tokenizers")
    path = SHARED / "vocab" / "llama3" / "tokenizer.json"
    tok = cybpe.Tokenizer.from_hf(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = [text for _, text in eval_texts(SHARED, 60_000)]
    texts.append("".join(random.Random(6).choice(ALPHABET) for _ in range(30_000)))
    for text in texts:
        assert tok.encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids, text[:60]


def test_the_thread_memo_of_cut_points_answers_one_encoder_and_generation():
    """A thread keeps its cut-point answers across calls (thread_cache.pxd), valid for one
    encoder's generation. Vocabulary `apart` cuts a CJK run at every character, `joined` (with
    two-character tokens) nowhere: `joined` must not take `apart`'s answers, neither in the
    next call nor when the 30 generation bits the memo keeps come round again (it is cleared
    whenever they reach 0)."""
    chars = "日本語文字列"
    singles = [bytes([b]) for b in range(256)]
    for c in chars:
        singles += [c.encode()[:2], c.encode()]
    apart_tokens = singles
    joined_tokens = singles + [(a + b).encode() for a in chars for b in chars]
    rng = random.Random(3)
    piece = "".join(rng.choice(chars) for _ in range(400)).encode()
    apart = RankEncoder(apart_tokens, None, whole_piece_lookup=False)
    joined = RankEncoder(joined_tokens, None, whole_piece_lookup=False)
    assert len(apart._cut_points(piece)) == 399 and joined._cut_points(piece) == []
    want = {id(enc): reference_encode([piece], tokens, None, whole_piece_lookup=False)
            for enc, tokens in ((apart, apart_tokens), (joined, joined_tokens))}
    assert want[id(apart)] != want[id(joined)]
    failures: list[str] = []

    def encode(encoder, data=piece):
        return encoder.encode_utf8(data, np.array([len(data)], dtype=np.int64)).tolist()

    def work():  # a thread of its own: its memo starts empty
        _set_front_generation(0)
        for step in ("apart", "joined next", "apart again"):
            encoder = apart if step.startswith("apart") else joined
            if encode(encoder) != want[id(encoder)]:
                failures.append(step)
        _set_front_generation(0)
        encode(apart)                        # generation 1: its answers kept with bits 1
        _set_front_generation(0x3FFFFFFF)
        encode(apart, b"ab")                 # generation 2^30: no cut tested, the memo cleared
        if encode(joined) != want[id(joined)]:  # generation 2^30 + 1: bits 1 again
            failures.append("joined after the 30 bits came round")

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert failures == []
