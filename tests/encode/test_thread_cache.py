"""The cross-call piece cache (cybpe/encode/thread_cache.pxd): each thread remembers the ids of
short pieces that needed BPE across calls and encoders. It must never change an id: an entry
belongs to one encoder and one exact byte string, whatever else the thread encoded before."""

from __future__ import annotations

import gc
import random
import threading

import numpy as np
import pytest

import cybpe
from cybpe.encode.encoder import RankEncoder, _piece_hash, _thread_cache_layout, _thread_cache_set_tags
from cybpe.reference.encoder import reference_encode
from support import all_split_merges, random_vocabulary

ALPHABET = b"abc \n"
# The cache as compiled: a piece's set is _piece_hash(piece) & SET_MASK; pieces of up to
# MAX_CACHED_BYTES bytes and MAX_CACHED_IDS ids are kept with their bytes (keyed entries), other
# pieces of up to MAX_SPELLED_IDS ids and MAX_SPELLED_BYTES bytes without (spelled entries).
SET_MASK, WAYS, MAX_CACHED_BYTES, MAX_CACHED_IDS, MAX_SPELLED_IDS, MAX_SPELLED_BYTES = _thread_cache_layout()


TOKENS = random_vocabulary(11, ALPHABET, 150, (2, 6))


def _merges(order_seed: int) -> list[tuple[int, int]]:
    """Every split of every token as a merge, in an order given by the seed: the same tokens,
    other BPE results."""
    merges = all_split_merges(TOKENS)
    random.Random(order_seed).shuffle(merges)
    return merges


def _pieces(seed: int, count: int, lengths=(2, MAX_CACHED_BYTES + 4)) -> list[bytes]:
    rng = random.Random(seed)
    words = [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(*lengths))) for _ in range(300)]
    return [rng.choice(words) for _ in range(count)]


def _encode_all(encoder: RankEncoder, pieces: list[bytes]) -> list[int]:
    ends = np.cumsum([len(p) for p in pieces], dtype=np.int64)
    return encoder.encode_utf8(b"".join(pieces), ends).tolist()


def _expected(pieces, merges, whole_piece_lookup=False) -> list[int]:
    return reference_encode(pieces, TOKENS, merges, whole_piece_lookup=whole_piece_lookup)


def test_two_encoders_never_read_each_others_entries():
    """Same tokens, other merge orders: the same piece has other ids under each encoder. A thread
    alternating between them (short calls, so only the cross-call cache remembers anything) must
    get each encoder's own ids every time."""
    merges_a, merges_b = _merges(1), _merges(2)
    a = RankEncoder(TOKENS, merges_a, whole_piece_lookup=False)
    b = RankEncoder(TOKENS, merges_b, whole_piece_lookup=False)
    pieces = _pieces(3, 40)
    expected_a, expected_b = _expected(pieces, merges_a), _expected(pieces, merges_b)
    assert expected_a != expected_b, "the two merge orders must disagree for this test to mean anything"
    for _ in range(3):
        for piece in pieces:  # one piece per call
            assert _encode_all(a, [piece]) == _expected([piece], merges_a)
            assert _encode_all(b, [piece]) == _expected([piece], merges_b)
    assert _encode_all(a, pieces) == expected_a
    assert _encode_all(b, pieces) == expected_b


def test_two_encoders_tag_the_same_piece_apart():
    """An entry's tag mixes in its encoder's salt: after two encoders cache the same piece, its
    set holds two tags that differ (with the same tag, each lookup by one encoder would read the
    other's entry, a cache miss, only to find another owner)."""
    merges = _merges(41)
    a = RankEncoder(TOKENS, merges, whole_piece_lookup=False)
    b = RankEncoder(TOKENS, merges, whole_piece_lookup=False)
    differing = 0
    for piece in sorted(set(_pieces(43, 60, lengths=(4, 8)))):
        before = _thread_cache_set_tags(piece)
        _encode_all(a, [piece])
        _encode_all(b, [piece])
        tags = _thread_cache_set_tags(piece)
        if tags[:2] == before[:2] or 0 in tags[:2]:  # not kept (more ids than an entry holds)
            continue
        differing += (tags[0] & ~3) != (tags[1] & ~3)
        assert _encode_all(a, [piece]) == _encode_all(b, [piece]) == _expected([piece], merges)
    assert differing >= 20


def test_a_new_encoder_at_a_freed_address_starts_empty():
    """Encoders built and dropped one after another often reuse one address; the cache tells
    them apart by serial number, not by address."""
    pieces = _pieces(5, 60)
    for order in range(12):
        merges = _merges(100 + order)
        encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=False)
        assert _encode_all(encoder, pieces) == _expected(pieces, merges), order
        del encoder
        gc.collect()


def test_repeated_calls_equal_the_uncached_path_at_every_length():
    """Pieces of 2..40 bytes (around the cached-length limit) and of 1..many ids, encoded in
    many calls so that later calls are answered from the cache: the ids equal encode_piece's
    (which never uses a cache) and the reference's."""
    merges = _merges(7)
    for lookup in (False, True):
        encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=lookup)
        pieces = _pieces(8, 2000, lengths=(2, 40))
        expected = _expected(pieces, merges, whole_piece_lookup=lookup)
        assert [i for p in pieces for i in encoder.encode_piece(p)] == expected
        for start in range(0, len(pieces), 50):
            part = pieces[start:start + 50]
            want = _expected(part, merges, whole_piece_lookup=lookup)
            assert _encode_all(encoder, part) == want
            assert encoder.encode_str_pieces([p.decode() for p in part]).tolist() == want
        assert _encode_all(encoder, pieces) == expected


def test_more_pieces_than_entries_overwrite_correctly():
    """More distinct pieces than the cache has entries: entries are overwritten on collision,
    and every later answer is still the piece's own."""
    merges = _merges(9)
    encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=False)
    rng = random.Random(10)
    pieces = list({bytes(rng.choice(ALPHABET) for _ in range(rng.randint(8, MAX_CACHED_BYTES)))
                   for _ in range((SET_MASK + 1) * WAYS + 8000)})
    expected = {p: _expected([p], merges) for p in pieces[:3000]}
    for round_ in range(2):
        order = pieces[:] if round_ == 0 else pieces[::-1]
        for start in range(0, len(order), 1000):
            _encode_all(encoder, order[start:start + 1000])
        for piece, want in expected.items():
            assert _encode_all(encoder, [piece]) == want, piece


def test_pieces_sharing_slot_and_stored_hash_are_told_apart_by_their_bytes():
    """Two pieces of one length whose hashes agree in the 32 bits an entry keeps land in the
    same slot and look alike but for their bytes: the second must not get the first's ids.
    A vocabulary of every 2- and 4-letter string over five letters keeps 8-letter pieces at a
    few ids each (so they are cached), and 390,625 of them give 32-bit collisions."""
    letters = b"abcde"
    tokens = [bytes([b]) for b in range(256)]
    tokens += [bytes([x, y]) for x in letters for y in letters]
    tokens += [bytes([x, y, z, w]) for x in letters for y in letters for z in letters for w in letters]
    encoder = RankEncoder(tokens, None, whole_piece_lookup=False)

    def expected(piece):
        return reference_encode([piece], tokens, None, whole_piece_lookup=False)

    rng = random.Random(13)
    seen: dict[int, bytes] = {}
    pairs = []
    while len(pairs) < 3:
        piece = bytes(rng.choice(letters) for _ in range(8))
        other = seen.setdefault(_piece_hash(piece) & 0xFFFFFFFF, piece)
        # Both kept by the cache (at most MAX_CACHED_IDS ids); other bytes, other ids.
        if other != piece and max(len(expected(other)), len(expected(piece))) <= MAX_CACHED_IDS:
            pairs.append((other, piece))
    for first, second in pairs:
        for x, y in ((first, second), (second, first)):
            assert _encode_all(encoder, [x]) == expected(x)
            assert _encode_all(encoder, [y]) == expected(y)


@pytest.mark.slow
def test_a_crowded_set_of_two_encoders_stays_exact():
    """Pieces that share one set (three times its ways), cached by two encoders that
    disagree, one piece per call, in rotating orders: entries are evicted, sets hold both
    encoders' pieces, the search stops at the first empty way. Every answer is the piece's own,
    for its encoder."""
    merges_a, merges_b = _merges(31), _merges(32)
    a = RankEncoder(TOKENS, merges_a, whole_piece_lookup=False)
    b = RankEncoder(TOKENS, merges_b, whole_piece_lookup=False)
    rng = random.Random(33)
    by_set: dict[int, list[bytes]] = {}
    seen: set[bytes] = set()
    crowded: list[bytes] = []
    while len(crowded) < 3 * WAYS:
        piece = bytes(rng.choice(ALPHABET) for _ in range(rng.randint(4, 8)))
        if piece in seen:
            continue
        seen.add(piece)
        # Kept by the cache under both encoders (at most MAX_CACHED_IDS ids).
        most = max(len(_expected([piece], merges_a)), len(_expected([piece], merges_b)))
        if most <= MAX_CACHED_IDS:
            crowded = by_set.setdefault(_piece_hash(piece) & SET_MASK, [])
            crowded.append(piece)
    want_a = {p: _expected([p], merges_a) for p in crowded}
    want_b = {p: _expected([p], merges_b) for p in crowded}
    assert want_a != want_b, "the two merge orders must disagree on some of these pieces"
    for round_ in range(6):
        order = crowded[round_ % 3:] + crowded[:round_ % 3]
        for piece in (order if round_ % 2 == 0 else order[::-1]):
            for encoder, want in ((a, want_a), (b, want_b)):
                assert _encode_all(encoder, [piece]) == want[piece], (round_, piece)
        for piece in order[:3]:  # the same few again: answered from the set when still there
            assert _encode_all(a, [piece]) == want_a[piece]


def test_threads_each_keep_their_own_entries():
    """Four threads, two encoders that disagree, each thread alternating between them on its own
    pieces; threads end (freeing their caches) and new ones start. Every result is exact."""
    merges = {"a": _merges(21), "b": _merges(22)}
    encoders = {k: RankEncoder(TOKENS, m, whole_piece_lookup=False) for k, m in merges.items()}
    jobs = []
    for seed in range(8):
        pieces = _pieces(200 + seed, 400)
        jobs.append((pieces, {k: [_expected([p], m) for p in pieces] for k, m in merges.items()}))
    failures: list[str] = []

    def work(job):
        pieces, expected = job
        for _ in range(4):
            for key in ("a", "b"):
                for start in range(0, len(pieces), 20):
                    got = _encode_all(encoders[key], pieces[start:start + 20])
                    want = [i for ids in expected[key][start:start + 20] for i in ids]
                    if got != want:
                        failures.append(f"{key} at piece {start}")
                        return

    for wave in (jobs[:4], jobs[4:]):
        threads = [threading.Thread(target=work, args=(job,)) for job in wave]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures, failures[:5]


def test_real_vocabulary_warm_equals_cold(shared_dir):
    """cl100k on a real English text: the first call fills this thread's cache, later calls read
    it; every call equals tiktoken."""
    tiktoken = pytest.importorskip("tiktoken")
    tok = cybpe.Tokenizer.from_tiktoken(shared_dir / "vocab" / "cl100k_base.tiktoken")
    reference = tiktoken.Encoding("t", pat_str=tok.pretokenizer.pattern, special_tokens={},
                                  mergeable_ranks={b: i for i, b in enumerate(tok.vocab.tokens)})
    text = (shared_dir / "corpora" / "eval" / "docs" / "en.txt").read_text()[:200_000]
    documents = [text[i:i + 5000] for i in range(0, len(text), 5000)]
    want = [reference.encode_ordinary(d) for d in documents]
    for _ in range(2):
        assert [tok.encode_ordinary(d) for d in documents] == want
    words = text.split()[:3000]  # short calls: only the cross-call cache can answer
    assert [tok.encode_ordinary(" " + w) for w in words] == [
        reference.encode_ordinary(" " + w) for w in words]


@pytest.mark.parametrize("distinct", [10, 40, 200, 3000])
def test_repeated_pieces_too_long_to_keep_stay_exact(distinct):
    """Pieces the cross-call cache never holds (more than MAX_SPELLED_IDS ids), ``distinct`` of
    them repeated in one call of 6,000 pieces: each is merged again every time, and every
    repeat must get the ids of its own bytes, equal to encode_piece's and the reference's."""
    merges = _merges(21)
    encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=False)
    rng = random.Random(distinct)
    found: set[bytes] = set()
    while len(found) < distinct:
        word = bytes(rng.choice(ALPHABET) for _ in range(rng.randint(MAX_CACHED_BYTES + 1, 90)))
        if len(encoder.encode_piece(word)) > MAX_SPELLED_IDS:
            found.add(word)
    words = list(found)
    pieces = words + [rng.choice(words) for _ in range(6000 - len(words))]
    rng.shuffle(pieces)
    expected = _expected(pieces, merges)
    assert [i for p in pieces for i in encoder.encode_piece(p)] == expected
    assert _encode_all(encoder, pieces) == expected


def _five_letter_encoder() -> tuple[RankEncoder, list[bytes]]:
    """Every 1-, 2- and 4-letter string over five letters as a token (no merges: the longest
    split wins): a piece of 4k letters is k ids."""
    letters = b"abcde"
    tokens = [bytes([b]) for b in range(256)]
    tokens += [bytes([x, y]) for x in letters for y in letters]
    tokens += [bytes([x, y, z, w]) for x in letters for y in letters for z in letters for w in letters]
    return RankEncoder(tokens, None, whole_piece_lookup=False), tokens


def test_long_pieces_are_kept_spelled_and_stay_exact():
    """Pieces over MAX_CACHED_BYTES bytes, or over MAX_CACHED_IDS ids, of up to MAX_SPELLED_IDS
    ids are kept without their bytes: a later call checks an entry by spelling its ids. Pieces
    of every length around those limits, one per call and in batches, over several rounds:
    every answer equals encode_piece's (no cache) and the reference's."""
    merges = _merges(41)
    encoder = RankEncoder(TOKENS, merges, whole_piece_lookup=False)
    rng = random.Random(42)
    pieces = [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(2, 60))) for _ in range(900)]
    kinds = {"keyed": 0, "spelled": 0, "too many ids": 0}
    for p in pieces:
        n_ids = len(encoder.encode_piece(p))
        kinds["keyed" if len(p) <= MAX_CACHED_BYTES and n_ids <= MAX_CACHED_IDS
              else "spelled" if n_ids <= MAX_SPELLED_IDS else "too many ids"] += 1
    assert min(kinds.values()) >= 100, kinds
    want = {p: _expected([p], merges) for p in pieces}
    for round_ in range(3):
        for p in (pieces if round_ % 2 == 0 else pieces[::-1]):
            assert _encode_all(encoder, [p]) == want[p], (round_, p)
        assert _encode_all(encoder, pieces) == [i for p in pieces for i in want[p]]


@pytest.mark.slow
def test_spelled_pieces_sharing_slot_and_stored_hash_are_told_apart():
    """Two 36-letter pieces (spelled entries: over MAX_CACHED_BYTES bytes, at most
    MAX_SPELLED_IDS ids) whose hashes agree in the 32 bits an entry keeps: same set, same
    length, same stored hash. The second must not get the first's ids: only spelling the ids
    against the bytes tells them apart."""
    encoder, tokens = _five_letter_encoder()
    rng = random.Random(43)
    seen: dict[int, bytes] = {}
    pairs = []
    while len(pairs) < 2:
        piece = bytes(rng.choice(b"abcde") for _ in range(36))
        other = seen.setdefault(_piece_hash(piece) & 0xFFFFFFFF, piece)
        if other != piece and all(len(encoder.encode_piece(p)) <= MAX_SPELLED_IDS for p in (other, piece)):
            pairs.append((other, piece))
    assert MAX_CACHED_BYTES < 36
    for first, second in pairs:
        for x, y in ((first, second), (second, first), (first, second)):
            assert _encode_all(encoder, [x]) == reference_encode([x], tokens, None, whole_piece_lookup=False)
            assert _encode_all(encoder, [y]) == reference_encode([y], tokens, None, whole_piece_lookup=False)
