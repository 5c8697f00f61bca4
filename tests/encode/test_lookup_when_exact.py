"""``RankEncoder(..., lookup_when_exact=True)`` (what every Tokenizer asks for): a merges
vocabulary without ``ignore_merges`` gets the whole-piece lookup only when BPE turns every
token's bytes into that token, so that the lookup changes no id; otherwise it keeps pure BPE."""

from __future__ import annotations

import pickle
import random

import numpy as np

import cybpe
from cybpe.encode.encoder import RankEncoder
from cybpe.reference.encoder import reference_encode
from support import UDHR_DIR, textbook_bpe

BYTES = [bytes([b]) for b in range(256)]


def _encode_all(encoder: RankEncoder, pieces: list[bytes]) -> list[int]:
    ends = np.cumsum([len(p) for p in pieces], dtype=np.int64)
    return encoder.encode_utf8(b"".join(pieces), ends).tolist()


def test_a_token_bpe_cannot_reach_keeps_pure_bpe():
    """'abc' is made from 'a' + 'bc', but BPE merges 'ab' first (rank 0), so BPE of 'abc' is
    'ab' 'c': a lookup would give 'abc' and must stay off."""
    tokens = BYTES + [b"ab", b"bc", b"abc"]
    ab, bc, abc = 256, 257, 258
    merges = [(ord("a"), ord("b")), (ord("b"), ord("c")), (ord("a"), bc)]
    encoder = RankEncoder(tokens, merges, whole_piece_lookup=False, lookup_when_exact=True)
    assert not encoder.whole_piece_lookup
    assert encoder.encode_piece(b"abc") == [ab, ord("c")]
    assert _encode_all(encoder, [b"abc", b"xabc", b"abc"]) == [ab, ord("c"), ord("x"), ab, ord("c"), ab, ord("c")]
    reachable = RankEncoder(tokens, [merges[1], merges[0], merges[2]], whole_piece_lookup=False, lookup_when_exact=True)
    assert reachable.whole_piece_lookup  # 'bc' first: BPE of 'abc' is 'a' + 'bc' -> 'abc'
    assert reachable.encode_piece(b"abc") == [abc]


def _trained(seed: int) -> tuple[list[bytes], list[tuple[int, int]]]:
    """A vocabulary trained by textbook BPE (60 merges) on random words over a small alphabet,
    and its merges in the order made."""
    rng = random.Random(seed)
    words = [[rng.choice(b"abcd") for _ in range(rng.randint(2, 7))] for _ in range(300)]
    tokens = list(BYTES)
    return tokens, textbook_bpe(tokens, words, 60)


def test_random_vocabularies_equal_pure_bpe_either_way():
    """Vocabularies trained by textbook BPE, with their merges in the order made and shuffled
    (which leaves some tokens unreachable): the encoder equals the reference BPE without the lookup,
    and it turned the lookup on exactly when every token is its own BPE."""
    rng = random.Random(9)
    pieces = [bytes(rng.choice(b"abcd ") for _ in range(rng.randint(1, 12))) for _ in range(400)]
    seen = set()
    for seed in range(8):
        tokens, merges = _trained(seed)
        if seed % 2:
            random.Random(seed).shuffle(merges)
        ids = {t: i for i, t in enumerate(tokens)}
        encoder = RankEncoder(tokens, merges, whole_piece_lookup=False, lookup_when_exact=True)
        own = all(reference_encode([t], tokens, merges, whole_piece_lookup=False) == [ids[t]] for t in tokens)
        assert encoder.whole_piece_lookup == own, seed
        seen.add(own)
        assert _encode_all(encoder, pieces) == reference_encode(pieces, tokens, merges, whole_piece_lookup=False), seed
    assert seen == {True, False}  # both kinds were met


def test_a_trained_merge_list_gets_the_lookup_and_the_same_ids():
    """A merge list trained by cybpe (as a transformers folder would hold it): every token is
    its own BPE, so the lookup is on, and the ids equal pure BPE's; a pickled copy keeps it."""
    text = (UDHR_DIR / "en.txt").read_text(encoding="utf-8")
    tok = cybpe.train([text], vocab_size=500, progress=False)
    tokens, merges = tok.vocab.tokens, tok.vocab.merges
    assert merges is not None
    encoder = RankEncoder(tokens, merges, whole_piece_lookup=False, lookup_when_exact=True)
    plain = RankEncoder(tokens, merges, whole_piece_lookup=False)
    assert encoder.whole_piece_lookup and not plain.whole_piece_lookup
    pieces = [p.encode("utf-8") for p in tok.pretokenizer.split(text)]
    assert _encode_all(encoder, pieces) == _encode_all(plain, pieces)
    copy = pickle.loads(pickle.dumps(encoder))
    assert copy.whole_piece_lookup and _encode_all(copy, pieces[:500]) == _encode_all(plain, pieces[:500])
