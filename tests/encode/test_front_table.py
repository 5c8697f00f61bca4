"""The per-thread front table (cybpe/encode/thread_cache.pxd): in a block of pieces with a
non-ASCII byte, a piece of 2..16 bytes with a non-ASCII byte is answered by one entry keyed by
its bytes, written when it was last encoded. It must never change an id: an entry holds for one
encoder (the thread's generation) and one exact byte string, and a piece earlier in the same
block may overwrite the entry a later piece was about to read."""

from __future__ import annotations

import random
import threading

import numpy as np

from cybpe.encode.encoder import (
    RankEncoder, _front_layout, _high_bytes, _piece_hash, _set_front_generation)
from cybpe.reference.encoder import reference_encode
from support import all_split_merges, random_vocabulary

FRONT_BITS, FRONT_MAX_BYTES, FRONT_MAX_IDS = _front_layout()
# Bytes of two Khmer letters and a vowel sign, a space and an ASCII letter: most pieces hold a
# byte >= 0x80, so their blocks go through the front table.
ALPHABET = b"\xe1\x9e\x80\x81\xb6 a"
TOKENS = random_vocabulary(17, ALPHABET, 300, (2, 6))


def _merges(order_seed: int, tokens: list[bytes] = TOKENS) -> list[tuple[int, int]]:
    """Every split of every token, in an order given by the seed: other BPE results."""
    merges = all_split_merges(tokens)
    random.Random(order_seed).shuffle(merges)
    return merges


def _pieces(seed: int, count: int, lengths=(2, FRONT_MAX_BYTES + 6), alphabet: bytes = ALPHABET,
            words: int = 400, tokens: list[bytes] = ()) -> list[bytes]:
    """count pieces drawn from `words` random strings over `alphabet` (and 100 of `tokens`)."""
    rng = random.Random(seed)
    pool = [bytes(rng.choice(alphabet) for _ in range(rng.randint(*lengths))) for _ in range(words)]
    pool += rng.sample(tokens, 100) if tokens else []
    return [rng.choice(pool) for _ in range(count)]


def _front_slot(piece: bytes) -> int:
    return _piece_hash(piece) >> (64 - FRONT_BITS)


def _encode_all(encoder: RankEncoder, pieces: list[bytes]) -> list[int]:
    ends = np.cumsum([len(p) for p in pieces], dtype=np.int64)
    return encoder.encode_utf8(b"".join(pieces), ends).tolist()


def _expected(pieces, merges, whole_piece_lookup=False) -> list[int]:
    return reference_encode(pieces, TOKENS, merges, whole_piece_lookup=whole_piece_lookup)


def test_the_pieces_exercise_the_front_table():
    """The test pieces are what the table keeps: non-ASCII, around its length and id limits."""
    pieces = _pieces(1, 2000)
    merges = _merges(1)
    sizes = [len(_expected([p], merges)) for p in pieces]
    assert sum(any(b >= 0x80 for b in p) for p in pieces) > 0.9 * len(pieces)
    text = b"".join(pieces)  # blocks mostly of non-ASCII bytes take the front table
    assert 2 * _high_bytes(text) > len(text)
    assert min(len(p) for p in pieces) == 2 and max(len(p) for p in pieces) > FRONT_MAX_BYTES
    assert min(sizes) == 1 and max(sizes) > FRONT_MAX_IDS


def test_repeated_calls_equal_the_reference():
    """Pieces of 2..22 bytes and 1..many ids, in many calls, so that later ones are answered by
    the front table: the ids equal the reference's, with and without the whole-piece lookup."""
    merges = _merges(2)
    for lookup in (False, True):
        encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=lookup)
        pieces = _pieces(3, 3000)
        expected = _expected(pieces, merges, whole_piece_lookup=lookup)
        for _ in range(2):
            for start in range(0, len(pieces), 100):
                part = pieces[start:start + 100]
                assert _encode_all(encoder, part) == _expected(part, merges, whole_piece_lookup=lookup)
        assert _encode_all(encoder, pieces) == expected


def test_two_encoders_alternating_in_one_thread():
    """Same tokens, other merge orders: a thread alternating between the two encoders, one call
    each, gets each encoder's own ids (a call from another encoder starts a new generation)."""
    merges_a, merges_b = _merges(4), _merges(5)
    a = RankEncoder(TOKENS, merges_a, whole_piece_lookup=False)
    b = RankEncoder(TOKENS, merges_b, whole_piece_lookup=False)
    pieces = _pieces(6, 60, lengths=(2, FRONT_MAX_BYTES))
    assert _expected(pieces, merges_a) != _expected(pieces, merges_b)
    for _ in range(3):
        for start in range(0, len(pieces), 10):
            part = pieces[start:start + 10]
            assert _encode_all(a, part) == _expected(part, merges_a)
            assert _encode_all(b, part) == _expected(part, merges_b)


def test_an_earlier_piece_of_the_block_overwriting_a_later_ones_entry():
    """B is kept in its entry; then one call encodes A (a miss that takes the same entry) and B.
    B's entry looked like a hit before A was written: B must still get its own ids."""
    merges = _merges(7)
    encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=False)
    rng = random.Random(8)
    by_slot: dict[int, bytes] = {}
    pairs: list[tuple[bytes, bytes]] = []
    while len(pairs) < 5:
        piece = bytes(rng.choice(ALPHABET[:4]) for _ in range(rng.randint(6, FRONT_MAX_BYTES)))
        if len(_expected([piece], merges)) > FRONT_MAX_IDS:
            continue
        other = by_slot.setdefault(_front_slot(piece), piece)
        if other != piece and _expected([other], merges) != _expected([piece], merges):
            pairs.append((piece, other))
    for first, second in pairs:
        assert _encode_all(encoder, [second]) == _expected([second], merges)
        assert _encode_all(encoder, [first, second]) == _expected([first, second], merges)
        assert _encode_all(encoder, [second, first, second]) == _expected([second, first, second], merges)


def test_more_pieces_than_entries():
    """Three times as many distinct pieces as entries, twice in opposite orders: entries are
    overwritten all the time, and every answer is the piece's own."""
    merges = _merges(9)
    encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=True)
    rng = random.Random(10)
    pieces = list({bytes(rng.choice(ALPHABET) for _ in range(rng.randint(3, FRONT_MAX_BYTES)))
                   for _ in range(3 << FRONT_BITS)})
    sample = rng.sample(pieces, 2000)
    want = {p: _expected([p], merges, whole_piece_lookup=True) for p in sample}
    for order in (pieces, pieces[::-1]):
        for start in range(0, len(order), 2000):
            _encode_all(encoder, order[start:start + 2000])
        for start in range(0, len(sample), 50):
            part = sample[start:start + 50]
            assert _encode_all(encoder, part) == [i for p in part for i in want[p]]


def test_the_generation_wrapping_around_clears_the_table():
    """Entries written at generation 1 by one encoder; the generation then runs out and starts
    again at 1 for another encoder: the table must have been cleared, or the second encoder
    would read the first one's ids."""
    merges_a, merges_b = _merges(11), _merges(12)
    a = RankEncoder(TOKENS, merges_a, whole_piece_lookup=False)
    b = RankEncoder(TOKENS, merges_b, whole_piece_lookup=False)
    pieces = _pieces(13, 200, lengths=(2, FRONT_MAX_BYTES))
    assert _expected(pieces, merges_a) != _expected(pieces, merges_b)
    failures: list[str] = []

    def work():  # a thread of its own, so that its table starts empty
        _set_front_generation(0)
        if _encode_all(a, pieces) != _expected(pieces, merges_a):  # generation 1
            failures.append("a")
        _set_front_generation(0xFFFFFFFE)
        if _encode_all(b, pieces) != _expected(pieces, merges_b):  # wraps: cleared, generation 1
            failures.append("b after the wrap")
        if _encode_all(a, pieces) != _expected(pieces, merges_a):
            failures.append("a again")

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert failures == []


def test_threads_share_encoders_and_keep_their_own_tables():
    """Four threads, two encoders that disagree, each thread alternating between them on its own
    pieces: every result is exact."""
    merges = {"a": _merges(21), "b": _merges(22)}
    encoders = {k: RankEncoder(TOKENS, m, whole_piece_lookup=False) for k, m in merges.items()}
    jobs = []
    for seed in range(4):
        pieces = _pieces(300 + seed, 300)
        jobs.append((pieces, {k: [_expected([p], m) for p in pieces] for k, m in merges.items()}))
    failures: list[str] = []

    def work(job):
        pieces, expected = job
        for _ in range(3):
            for key in ("a", "b"):
                for start in range(0, len(pieces), 30):
                    got = _encode_all(encoders[key], pieces[start:start + 30])
                    if got != [i for ids in expected[key][start:start + 30] for i in ids]:
                        failures.append(f"{key} at piece {start}")

    threads = [threading.Thread(target=work, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_high_bytes_counts_every_byte_at_or_above_0x80():
    """The count that chooses a block's path, at every length around its word and its lane
    limits, from no high byte to all (a lane sum that overflows makes Khmer look like ASCII)."""
    rng = random.Random(40)
    for n in (0, 1, 7, 8, 9, 63, 64, 65, 1023, 1024, 1025, 1031, 4096, 20000):
        for share in (0.0, 0.03, 0.5, 0.97, 1.0):
            data = bytes(rng.randrange(0x80, 0x100) if rng.random() < share else rng.randrange(0x80)
                         for _ in range(n))
            assert _high_bytes(data) == sum(b >= 0x80 for b in data), (n, share)


def test_exact_while_the_table_is_switched_off_and_on():
    """Pieces that are all tokens make the table step aside (the token table answers them as
    fast); pieces of many ids then bring it back, through the blocks it still samples. Every
    answer on the way is exact."""
    merges = _merges(41)
    encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=True)
    short_tokens = [t for t in TOKENS[256:] if 2 <= len(t) and any(b >= 0x80 for b in t)]
    rng = random.Random(42)
    many = [p for p in _pieces(43, 4000, lengths=(8, FRONT_MAX_BYTES))
            if len(_expected([p], merges, True)) > 1]
    for round_ in range(3):
        for pieces in ([rng.choice(short_tokens) for _ in range(3000)], many):
            for start in range(0, len(pieces), 500):
                part = pieces[start:start + 500]
                assert _encode_all(encoder, part) == _expected(part, merges, True), round_


# -- blocks mostly of ASCII bytes: a short piece the token table does not answer looks in the
# front table after it (encode_block), and is kept there.

ASCII_ALPHABET = b"abc e"
ASCII_TOKENS = random_vocabulary(18, ASCII_ALPHABET, 300, (2, 6))
PIECE_ALPHABET = ASCII_ALPHABET + b"xy"  # x and y are in no token but their byte's


def _ascii_merges(order_seed: int) -> list[tuple[int, int]]:
    return _merges(order_seed, ASCII_TOKENS)


def _ascii_pieces(seed: int, count: int, lengths=(2, FRONT_MAX_BYTES + 6)) -> list[bytes]:
    # tokens too: the token table answers them
    return _pieces(seed, count, lengths, PIECE_ALPHABET, 300, ASCII_TOKENS[256:])


def _ascii_expected(pieces, merges, lookup) -> list[int]:
    return reference_encode(pieces, ASCII_TOKENS, merges, whole_piece_lookup=lookup)


def test_the_ascii_pieces_exercise_the_table():
    """ASCII blocks; short pieces that are no token, of one to more ids than an entry holds;
    and tokens whose BPE is not themselves, so that the whole-piece lookup changes ids (an entry
    must hold what the encoder gives, not what BPE alone gives)."""
    merges = _ascii_merges(51)
    pieces = _ascii_pieces(52, 3000)
    assert 2 * _high_bytes(b"".join(pieces)) <= len(b"".join(pieces))
    tokens = set(ASCII_TOKENS)
    short = [p for p in set(pieces) if len(p) <= FRONT_MAX_BYTES and p not in tokens]
    sizes = [len(_ascii_expected([p], merges, True)) for p in short]
    assert len(short) > 100 and min(sizes) <= 2 and max(sizes) > FRONT_MAX_IDS
    assert any(_ascii_expected([p], merges, False) != _ascii_expected([p], merges, True)
               for p in set(pieces) if p in tokens)


def test_ascii_repeated_calls_equal_the_reference():
    """Many calls over the same pieces, so that later ones are answered by the table, with and
    without the whole-piece lookup."""
    merges = _ascii_merges(53)
    for lookup in (False, True):
        encoder = RankEncoder(ASCII_TOKENS, merges, whole_piece_lookup=lookup)
        pieces = _ascii_pieces(54, 3000)
        for _ in range(2):
            for start in range(0, len(pieces), 100):
                part = pieces[start:start + 100]
                assert _encode_all(encoder, part) == _ascii_expected(part, merges, lookup)
        assert _encode_all(encoder, pieces) == _ascii_expected(pieces, merges, lookup)


def test_ascii_piece_overwriting_a_later_pieces_entry():
    """As test_an_earlier_piece_of_the_block_overwriting_a_later_ones_entry, in an ASCII block."""
    merges = _ascii_merges(55)
    tokens = set(ASCII_TOKENS)
    for lookup in (False, True):
        encoder = RankEncoder(ASCII_TOKENS, merges, whole_piece_lookup=lookup)
        rng = random.Random(56)
        by_slot: dict[int, bytes] = {}
        pairs: list[tuple[bytes, bytes]] = []
        while len(pairs) < 5:
            piece = bytes(rng.choice(ASCII_ALPHABET) for _ in range(rng.randint(6, FRONT_MAX_BYTES)))
            if piece in tokens or len(_ascii_expected([piece], merges, lookup)) > FRONT_MAX_IDS:
                continue
            other = by_slot.setdefault(_front_slot(piece), piece)
            if other != piece and (_ascii_expected([other], merges, lookup)
                                   != _ascii_expected([piece], merges, lookup)):
                pairs.append((piece, other))
        for first, second in pairs:
            for call in ([second], [first, second], [second, first, second], [first] * 3 + [second]):
                assert _encode_all(encoder, call) == _ascii_expected(call, merges, lookup)


def test_ascii_and_non_ascii_blocks_share_the_table_exactly():
    """One encoder, calls that alternate between blocks mostly of ASCII bytes and blocks mostly
    of Khmer, holding the same short pieces (tokens, tokens whose BPE is not themselves, and
    pieces that are no token): what one kind of block keeps, the other reads. Every answer is
    the reference's, with and without the whole-piece lookup."""
    merges = _merges(57)
    tokens = set(TOKENS)
    rng = random.Random(58)
    shared = _pieces(59, 200, lengths=(2, FRONT_MAX_BYTES))
    shared += [t for t in TOKENS[256:] if len(t) >= 2][:40]
    ascii_filler = [bytes(rng.choice(b" a") for _ in range(40)) for _ in range(20)]
    khmer_filler = [bytes(rng.choice(ALPHABET[:5]) for _ in range(12)) for _ in range(200)]
    assert any(_expected([t], merges, False) != _expected([t], merges, True) for t in shared
               if t in tokens)
    for lookup in (False, True):
        encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=lookup)
        for round_ in range(6):
            calls = []
            for _ in range(20):
                picks = rng.sample(shared, 8)
                calls.append([x for p in picks for x in (p, rng.choice(ascii_filler))])
                calls.append([x for p in picks for x in (p, rng.choice(khmer_filler))])
            for call in calls:
                assert _encode_all(encoder, call) == _expected(call, merges, lookup), round_


def test_ascii_two_encoders_alternating_in_one_thread():
    """As test_two_encoders_alternating_in_one_thread, over ASCII pieces that are no token."""
    merges_a, merges_b = _ascii_merges(60), _ascii_merges(61)
    a = RankEncoder(ASCII_TOKENS, merges_a, whole_piece_lookup=True)
    b = RankEncoder(ASCII_TOKENS, merges_b, whole_piece_lookup=True)
    tokens = set(ASCII_TOKENS)
    pieces = [p for p in _ascii_pieces(62, 200, lengths=(2, FRONT_MAX_BYTES)) if p not in tokens]
    assert _ascii_expected(pieces, merges_a, True) != _ascii_expected(pieces, merges_b, True)
    for _ in range(3):
        for start in range(0, len(pieces), 10):
            part = pieces[start:start + 10]
            assert _encode_all(a, part) == _ascii_expected(part, merges_a, True)
            assert _encode_all(b, part) == _ascii_expected(part, merges_b, True)
